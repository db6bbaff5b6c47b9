// A call flow's `queue` step (CONTRACT section 13): the flow answers the caller, who joins the queue and holds
// (the queue's hold audio, or "Please hold." then silence; their place in line every ANNOUNCE_EVERY_SECONDS when
// the queue announces it) until the queue runtime (queues/runtime.ts) offers them members. The members ring;
// the first to answer talks with the caller until one hangs up, as a dial's answer does. Unanswered, the
// caller holds again in their place. Past maxWaitSeconds the caller leaves the queue and its onTimeout steps
// run, then the flow goes on after the step; a caller who hangs up while waiting or ringing is abandoned.
//
// A hold is a cycle the two PBXs take alike: the announcement, then the hold sound for the rest of the cycle as
// a gather's prompt (the SIP PBX plays it in real time; a key stops it and starts the next cycle), then a gather
// waiting out what is left of the cycle on the platform clock (nothing on SIP; all of it on the simulated PBX,
// whose test-mode steps take no time, so a test moves the clock rather than sleeping). An offer or the timeout
// closes the line, which ends the step in progress at once.
import { concatenate, SAMPLE_RATE, silence } from './audio.ts';
import { extensionsParty } from './extension-store.ts';
import type { Ended, FlowControl, Run } from './flow-control.ts';
import type { FlowStep } from './flows/index.ts';
import type { CallerLine } from './pbx.ts';
import type { Interrupt, QueueRuntime, Waiter } from './queues/index.ts';

/** How often a waiting caller hears their place in line (when the queue announces it): a hold cycle. */
export const ANNOUNCE_EVERY_SECONDS = 30;
/** What a caller hears on joining a queue without hold audio; silence follows. */
export const HOLD_MESSAGE = 'Please hold.';

type QueueStep = Extract<FlowStep, { type: 'queue' }>;
type Hangup = { kind: 'hangup'; at: Date; cause: string };
/** How a wait in the queue ended: the members answered (the call is over), or the caller left it. */
type Waited = { kind: 'over' } | { kind: 'timeout' } | Hangup;

export async function queue(flow: FlowControl, run: Run, step: QueueStep): Promise<Ended> {
  const runtime = flow.deps.queues();
  const row = run.live.row;
  const found = runtime ? await runtime.find(row.organization_id, step.queueId) : undefined;
  // A queue deleted since the flow was saved is met as any target the runner cannot find.
  if (!runtime || !found) return flow.finishWith(run, 'failed', 'no_route');
  if (!(await flow.line(run))) return 'over';
  const holdAudio = await runtime.holdAudio(found);
  const presence = run.live.engine.name === 'sip' ? 'sip' : 'simulated';
  const waiter = await runtime.join(
    { id: row.id, organizationId: row.organization_id, from: row.from_number },
    found,
    presence,
  );
  let waited: Waited;
  try {
    waited = await waitInQueue(flow, run, runtime, waiter, holdAudio);
  } finally {
    runtime.forget(waiter);
  }
  if (waited.kind === 'over') return 'over';
  if (waited.kind === 'hangup') return flow.callerGone(run, waited);
  return flow.steps(run, found.on_timeout);
}

/** Holds, rings the members offered, holds again, until someone answers or the caller leaves the queue. */
async function waitInQueue(
  flow: FlowControl,
  run: Run,
  runtime: QueueRuntime,
  waiter: Waiter,
  holdAudio: Int16Array | undefined,
): Promise<Waited> {
  let greet = holdAudio === undefined;
  for (;;) {
    const held = await hold(flow, run, waiter, runtime, { holdAudio, greet });
    greet = false;
    if (held.kind === 'hangup') {
      await runtime.leave(waiter, 'hangup', held.at);
      return held;
    }
    if (held.kind === 'timeout') {
      await runtime.leave(waiter, 'timeout');
      return held;
    }
    const rung = await ringMembers(flow, run, runtime, waiter, held.extensionIds);
    if (rung.kind !== 'waiting') return rung;
    if (waiter.timedOut) {
      await runtime.leave(waiter, 'timeout');
      return { kind: 'timeout' };
    }
  }
}

/**
 * Rings the members the caller was offered to (several at once for a `simultaneous` queue); the first to
 * answer talks with the caller, as a dial's answer does. Unanswered, the caller waits again.
 */
async function ringMembers(
  flow: FlowControl,
  run: Run,
  runtime: QueueRuntime,
  waiter: Waiter,
  extensionIds: string[],
): Promise<Waited | { kind: 'waiting' }> {
  const { db, clock, extensions } = flow.deps;
  const members = await extensions.store.findMany(db, run.live.row.organization_id, extensionIds);
  if (members.length === 0) {
    await runtime.unanswered(waiter, extensionIds, clock.now());
    return { kind: 'waiting' };
  }
  const result = await run.live.ring(
    extensionsParty(members),
    Math.max(...members.map((member) => member.ring_seconds)),
  );
  if (result.outcome === 'canceled') {
    await runtime.leave(waiter, 'hangup', result.at);
    return { kind: 'hangup', at: result.at, cause: result.cause };
  }
  if (result.outcome !== 'answered') {
    await runtime.unanswered(waiter, extensionIds, result.at);
    return { kind: 'waiting' };
  }
  const answeredBy = result.answeredBy ?? members[0]!.id;
  await runtime.answered(waiter, answeredBy, result.at);
  runtime.forget(waiter);
  if (!run.live.row.extension_id) await run.live.note({ extension_id: answeredBy });
  const talk = await run.live.engine.converse(run.live.leg, { record: run.live.row.record });
  await run.live.finish(
    { status: 'completed', at: talk.at, cause: talk.cause },
    { recording: talk.recording },
  );
  runtime.memberFree(waiter.queue);
  return { kind: 'over' };
}

/**
 * The caller holds until the runtime interrupts (an offer, the timeout) or they hang up. On an interrupt the
 * flow's line is let go (the members ring next); a hang-up that came with it wins.
 */
async function hold(
  flow: FlowControl,
  run: Run,
  waiter: Waiter,
  runtime: QueueRuntime,
  options: { holdAudio: Int16Array | undefined; greet: boolean },
): Promise<Interrupt | Hangup> {
  // The line first, so that the release on an interrupt closes this one, never one opened after it.
  const line = await flow.line(run);
  if (!line) return { kind: 'hangup', at: flow.deps.clock.now(), cause: 'flow_unsupported' };
  let stopped = false;
  const interrupted = waiter.interrupted().then((why) => {
    stopped = true;
    return why;
  });
  const holding = holdCycles(flow, line, waiter, runtime, options, () => stopped);
  const first = await Promise.race([interrupted, holding]);
  if (first?.kind === 'hangup') {
    waiter.stopHolding();
    return first;
  }
  const why = await interrupted;
  await flow.release(run);
  return (await holding) ?? why;
}

/** The hold's cycles until `stopped`; a hang-up if the caller goes. */
async function holdCycles(
  flow: FlowControl,
  line: CallerLine,
  waiter: Waiter,
  runtime: QueueRuntime,
  options: { holdAudio: Int16Array | undefined; greet: boolean },
  stopped: () => boolean,
): Promise<Hangup | undefined> {
  const clock = flow.deps.clock;
  const cycleMs = ANNOUNCE_EVERY_SECONDS * 1000;
  const keyEndsIt = { numDigits: 1, finishOnKey: '' };
  try {
    if (options.greet) {
      const said = await line.say(HOLD_MESSAGE);
      if (said.kind === 'hangup') return said;
    }
    while (!stopped()) {
      let cycleEnd = clock.nowMs() + cycleMs;
      if (waiter.queue.announce_position) {
        const last = waiter.lastAnnouncedAt?.getTime();
        if (last === undefined || clock.nowMs() - last >= cycleMs) {
          waiter.lastAnnouncedAt = clock.now();
          const text = await announcement(runtime, waiter);
          if (stopped()) break;
          const said = text ? await line.say(text) : { kind: 'done' as const };
          if (said.kind === 'hangup') return said;
        }
        cycleEnd = waiter.lastAnnouncedAt!.getTime() + cycleMs;
      }
      if (stopped()) break;
      const sound = holdSound(options.holdAudio, (cycleEnd - clock.nowMs()) / 1000);
      const heard = await line.gather({ ...keyEndsIt, timeoutSeconds: 0, prompt: { audio: sound } });
      if (heard.kind === 'hangup') return heard;
      const left = (cycleEnd - clock.nowMs()) / 1000;
      if (stopped() || left < 0.5) continue;
      const waited = await line.gather({ ...keyEndsIt, timeoutSeconds: left });
      if (waited.kind === 'hangup') return waited;
    }
  } catch (error) {
    // The line closed under a step as an interrupt came: the hold is over, nothing failed.
    if (!stopped()) throw error;
  }
  return undefined;
}

/** "You are number 2 in line." and, once the queue has answered callers lately, the expected wait. */
async function announcement(runtime: QueueRuntime, waiter: Waiter): Promise<string | undefined> {
  const position = await runtime.position(waiter);
  if (position === 0) return undefined;
  const expected = await runtime.expectedWaitSeconds(waiter);
  let text = `You are number ${position} in line.`;
  if (expected !== undefined) {
    const minutes = Math.max(1, Math.ceil(expected / 60));
    text += ` The expected wait is about ${minutes} minute${minutes === 1 ? '' : 's'}.`;
  }
  return text;
}

/** `seconds` of hold: the hold audio looped whole as often as it fits (at least once), else silence. */
export function holdSound(audio: Int16Array | undefined, seconds: number): Int16Array {
  if (seconds <= 0) return new Int16Array(0);
  if (!audio || audio.length === 0) return silence(seconds);
  const loops = Math.max(1, Math.floor((seconds * SAMPLE_RATE) / audio.length));
  return concatenate(...Array.from({ length: loops }, () => audio));
}
