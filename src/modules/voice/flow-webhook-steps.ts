// Steps served by the customer's app (docs/voice.md "Flows from your app"): a number's webhook route, a
// gather's actionUrl and a redirect's url each POST the call to the app (flow-webhook.ts) and run the steps it
// answers. When the app fails (down, too slow, not 2xx, not JSON, invalid steps) the call is never dropped:
//   a gather's actionUrl   the gather's `otherwise` steps, if it has them; else as below
//   otherwise              the route's fallback flow (fallbackFlowId), when the call came by a webhook route
//                          that has one; else the caller hears a short apology and the call ends `failed`,
//                          cause `webhook_failed`.
// The steps an app answers take the place of the rest of the flow, as a redirect's do (and as TwiML's action
// URL does): when they run out the call hangs up. They count against the step limit like any other, so an app
// that answers a redirect to itself forever is stopped.
// When a call a webhook route took ends, its end (the same body, `status` the final one) is POSTed to the
// route's URL once, its answer unread: the app's URLs hear the call's status change the same way.
import { isEnded } from './call-states.ts';
import type { Ended, FlowControl, Run } from './flow-control.ts';
import type { FlowAppRequest } from './flow-webhook.ts';
import type { FlowStep } from './flows/index.ts';
import type { LiveCall } from './live-call.ts';

/** What the caller hears when the app fails and nothing is there to fall back on. */
export const APOLOGY = 'Sorry, we cannot take your call right now. Goodbye.';

/** A number's webhook route: the app's URL, and the flow that runs when it fails. */
export interface AppRoute {
  target: string;
  fallbackFlowId?: string;
}

/** The runner, with its entry that runs what a function starts (FlowRunner.start). */
export interface AppRunner extends FlowControl {
  start(live: LiveCall, first: (run: Run) => Promise<Ended>): Promise<void>;
}

/**
 * A call to a number routed to an app: the app's steps run (or the fallback), then the call's end is told to
 * the app. Resolves when the call's program is over (the status POST is not waited for).
 */
export async function runApp(runner: AppRunner, live: LiveCall, route: AppRoute): Promise<void> {
  await runner.start(live, async (run) => {
    run.app = { fallbackFlowId: route.fallbackFlowId };
    return fromApp(runner, run, route.target, {});
  });
  const apps = runner.deps.apps();
  if (apps) void apps.tell(live.row.organization_id, route.target, requestOf(live));
}

/**
 * A gather with an actionUrl: its keys (and, for a speech gather, the words heard) go to the app, whose steps
 * run instead of the gather's branches.
 */
export async function gatherToApp(
  flow: FlowControl,
  run: Run,
  step: Extract<FlowStep, { type: 'gather' }> & { actionUrl: string },
  heard: { digits: string; speech?: string },
): Promise<Ended> {
  const extra = heard.speech === undefined ? { digits: heard.digits } : heard;
  return fromApp(flow, run, step.actionUrl, extra, step.otherwise);
}

/** A redirect to a url: the app's steps take the place of the rest of the flow. */
export function redirectToApp(flow: FlowControl, run: Run, url: string): Promise<Ended> {
  return fromApp(flow, run, url, {});
}

async function fromApp(
  flow: FlowControl,
  run: Run,
  url: string,
  extra: Pick<FlowAppRequest, 'digits' | 'speech'>,
  otherwise?: FlowStep[],
): Promise<Ended> {
  const apps = flow.deps.apps();
  const answer = apps
    ? await apps.ask(run.live.row.organization_id, url, { ...requestOf(run.live), ...extra })
    : { kind: 'failed' as const, reason: 'no app client' };
  // The call may have ended while the app was asked (the API's hang-up): nothing more runs on it.
  if (isEnded(run.live.state)) return 'over';
  if (answer.kind === 'steps') return instead(flow, run, answer.steps);
  if (otherwise) return flow.steps(run, otherwise);
  return fallBack(flow, run);
}

/** The route's fallback flow, else an apology and the end of the call. */
async function fallBack(flow: FlowControl, run: Run): Promise<Ended> {
  const fallbackId = run.app?.fallbackFlowId;
  const fallback = fallbackId
    ? await flow.deps.flows()?.resolve(run.live.row.organization_id, fallbackId)
    : undefined;
  if (fallback) return instead(flow, run, fallback.steps);
  const line = await flow.line(run);
  if (!line) return 'over';
  const said = await line.say(APOLOGY);
  if (said.kind === 'hangup') return flow.callerGone(run, said);
  return flow.finishWith(run, 'failed', 'webhook_failed');
}

/** Steps that take the place of the rest of the flow: when they run out, the call hangs up. */
async function instead(flow: FlowControl, run: Run, steps: FlowStep[]): Promise<Ended> {
  return (await flow.steps(run, steps)) === 'over' ? 'over' : flow.hangUp(run, 'flow_ended');
}

/** The call as the app is told of it (CONTRACT section 13). */
function requestOf(live: LiveCall): FlowAppRequest {
  const row = live.row;
  return {
    callId: row.id,
    from: row.from_number,
    to: row.to_number,
    direction: row.direction,
    status: live.state,
  };
}
