// Runs a call flow (CONTRACT section 13) on a live call: its steps in order, each carried out through the
// call's PBX and written through the call's state table (live-call.ts), like the fixed dial plan's programs.
// The flow answers the caller itself the first time a step needs to be heard or to hear (say, play, pause,
// gather): until then the call rings or is dialled on as the steps say, so a flow that only routes (business
// hours, then an extension) never answers by itself. A step that ends the call (hangup, voicemail, an agent,
// a dial that is answered) ends the flow; a flow that runs out of steps hangs up. Every step run counts
// against MAX_STEPS_RUN, so a flow that loops (a menu redirecting to itself on a wrong key) cannot run forever.
import type { Static, TObject } from 'typebox';
import type { EventDefinition } from '../../platform/events.ts';
import { CallGatherCompleted } from './events.ts';
import type { Ended, FlowControl, FlowEndStatus, FlowRunnerDeps, FlowSource, Run } from './flow-control.ts';
import { dial } from './flow-dial.ts';
import { isOpen } from './flow-hours.ts';
import { branchFor, gatherPrompt, play, record } from './flow-media.ts';
import { queue } from './flow-queue.ts';
import { stream } from './flow-stream.ts';
import { transfer } from './flow-transfer.ts';
import { gatherToApp, redirectToApp } from './flow-webhook-steps.ts';
import type { FlowStep } from './flows/index.ts';
import type { LiveCall } from './live-call.ts';
import type { CallerLine, GatherResult, LineResult } from './pbx.ts';

export type { FlowSource, RingGroupSource } from './flow-control.ts';

/** Steps one call may run in all (loops included) before it is ended `failed`, cause `flow_step_limit`. */
export const MAX_STEPS_RUN = 500;
/** Seconds a gather waits for the first key (and between keys) when the step does not say. */
const GATHER_TIMEOUT_SECONDS = 5;

export class FlowRunner implements FlowControl {
  constructor(readonly deps: FlowRunnerDeps) {}

  /** Runs flow `flowId` (its latest version) on the call until the call ends. */
  run(live: LiveCall, flowId: string): Promise<void> {
    return this.start(live, async (run) => {
      const flow = await this.source().resolve(live.row.organization_id, flowId);
      if (!flow) return this.finishWith(run, 'failed', 'no_route');
      return this.steps(run, flow.steps);
    });
  }

  /**
   * Runs on the call what `first` runs (a stored flow, or an app's steps: flow-webhook-steps.ts) until the call
   * ends; steps that run out hang up.
   */
  async start(live: LiveCall, first: (run: Run) => Promise<Ended>): Promise<void> {
    const run: Run = { live, stepsRun: 0 };
    try {
      const ended = await first(run);
      if (ended === 'continue') await this.hangUp(run, 'flow_ended');
    } finally {
      await run.line?.close();
    }
  }

  async steps(run: Run, steps: FlowStep[]): Promise<Ended> {
    for (const step of steps) {
      if (run.live.state !== 'queued' && run.live.state !== 'ringing' && run.live.state !== 'in_progress') {
        return 'over';
      }
      run.stepsRun += 1;
      if (run.stepsRun > MAX_STEPS_RUN) {
        this.deps.log.warn({ callId: run.live.id, steps: MAX_STEPS_RUN }, 'call flow ran too many steps');
        await this.finishWith(run, 'failed', 'flow_step_limit');
        return 'over';
      }
      if ((await this.step(run, step)) === 'over') return 'over';
    }
    return 'continue';
  }

  private async step(run: Run, step: FlowStep): Promise<Ended> {
    switch (step.type) {
      case 'say':
        return this.heard(run, (line) => line.say(step.text, { voice: step.voice, language: step.language }));
      case 'pause':
        return this.heard(run, (line) => line.pause(step.seconds));
      case 'play':
        return play(this, run, step);
      case 'record':
        return record(this, run, step);
      case 'gather':
        return this.gather(run, step);
      case 'hours': {
        const open = isOpen(step, this.deps.clock.now());
        return this.steps(run, open ? step.whenOpen : step.whenClosed);
      }
      case 'dial':
        return dial(this, run, step);
      case 'stream':
        return stream(this, run, step);
      case 'queue':
        return queue(this, run, step);
      case 'transfer':
        return transfer(this, run, step);
      case 'voicemail': {
        const extension = await this.deps.extensions.store.find(
          this.deps.db,
          run.live.row.organization_id,
          step.extensionId,
        );
        if (!extension) return this.finishWith(run, 'failed', 'no_route');
        await this.release(run);
        await this.deps.plan.voicemail(run.live, extension, this.deps.clock.now());
        return 'over';
      }
      case 'agent':
        await this.release(run);
        await this.deps.plan.agentAnswers(run.live, step.agentId);
        return 'over';
      case 'redirect': {
        if (step.url) return redirectToApp(this, run, step.url);
        if (!step.flowId) return this.unavailable(run, step);
        const next = await this.source().resolve(run.live.row.organization_id, step.flowId);
        if (!next) return this.finishWith(run, 'failed', 'no_route');
        // The rest of this flow is left for the other one, as a redirect means.
        return (await this.steps(run, next.steps)) === 'over' ? 'over' : this.hangUp(run, 'flow_ended');
      }
      case 'hangup':
        return this.hangUp(run, 'flow_hangup');
      default:
        return this.unavailable(run, step);
    }
  }

  /** A step the caller hears: the flow answers first, if it has not. */
  private async heard(run: Run, what: (line: CallerLine) => Promise<LineResult>): Promise<Ended> {
    const line = await this.line(run);
    if (!line) return 'over';
    const result = await what(line);
    return result.kind === 'hangup' ? this.callerGone(run, result) : 'continue';
  }

  private async gather(run: Run, step: Extract<FlowStep, { type: 'gather' }>): Promise<Ended> {
    const prompt = await gatherPrompt(this, run, step.prompt);
    const line = await this.line(run);
    if (!line) return 'over';
    const result: GatherResult = await line.gather({
      numDigits: step.numDigits,
      finishOnKey: step.finishOnKey,
      timeoutSeconds: step.timeoutSeconds ?? GATHER_TIMEOUT_SECONDS,
      prompt,
      dtmf: step.input.includes('dtmf'),
      speech: step.input.includes('speech'),
    });
    if (result.kind === 'hangup') return this.callerGone(run, result);
    const digits = result.kind === 'digits' ? result.digits : '';
    const speech = result.kind === 'speech' ? result.text : undefined;
    await this.recordEvent(run, CallGatherCompleted, {
      callId: run.live.id,
      digits,
      ...(speech !== undefined ? { speech } : {}),
      at: this.deps.clock.now().toISOString(),
    });
    if (step.actionUrl)
      return gatherToApp(this, run, { ...step, actionUrl: step.actionUrl }, { digits, speech });
    const branch = branchFor(step.branches, result);
    if (branch) return this.steps(run, branch);
    if (step.otherwise) return this.steps(run, step.otherwise);
    return 'continue';
  }

  /** The caller's line, the call answered by the flow the first time; undefined when the PBX cannot. */
  async line(run: Run): Promise<CallerLine | undefined> {
    if (run.line) return run.line;
    const engine = run.live.engine;
    if (!engine.callerLine) {
      await this.finishWith(run, 'failed', 'flow_unsupported');
      return undefined;
    }
    await run.live.answered(this.deps.clock.now());
    run.line = engine.callerLine(run.live.leg);
    return run.line;
  }

  /** The flow's own media is let go before a person, a voicemail box or an agent takes the caller. */
  async release(run: Run): Promise<void> {
    const line = run.line;
    run.line = undefined;
    await line?.close();
  }

  async recordEvent<Schema extends TObject>(
    run: Run,
    event: EventDefinition<Schema>,
    data: Static<Schema>,
  ): Promise<void> {
    const organizationId = run.live.row.organization_id;
    await this.deps.db.transaction((tx) => this.deps.events.record(tx, event, { organizationId, data }));
  }

  callerGone(run: Run, how: { at: Date; cause: string }): Promise<Ended> {
    return this.finishWith(
      run,
      run.live.state === 'in_progress' ? 'completed' : 'canceled',
      how.cause,
      how.at,
    );
  }

  /** The flow hangs up: an answered call is completed; one never answered ends as its last ring did. */
  hangUp(run: Run, cause: string): Promise<Ended> {
    if (run.live.state === 'in_progress') return this.finishWith(run, 'completed', cause);
    const last = run.lastRing;
    if (last && last.outcome !== 'answered' && last.outcome !== 'canceled') {
      return this.finishWith(run, last.outcome, last.cause, last.at);
    }
    return this.finishWith(run, 'failed', cause);
  }

  private async unavailable(run: Run, step: FlowStep): Promise<Ended> {
    this.deps.log.warn({ callId: run.live.id, step: step.type }, 'call flow step not available yet');
    return this.finishWith(run, 'failed', 'flow_step_unavailable');
  }

  async finishWith(
    run: Run,
    status: FlowEndStatus,
    cause: string,
    at: Date = this.deps.clock.now(),
  ): Promise<Ended> {
    await this.release(run);
    await run.live.finish({ status, at, cause });
    return 'over';
  }

  private source(): FlowSource {
    const flows = this.deps.flows();
    if (!flows) throw new Error('a call flow without the flows module');
    return flows;
  }
}
