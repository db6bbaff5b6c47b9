// Runs a call flow (CONTRACT section 13) on a live call: its steps in order, each carried out through the
// call's PBX and written through the call's state table (live-call.ts), like the fixed dial plan's programs.
// The flow answers the caller itself the first time a step needs to be heard or to hear (say, play, pause,
// gather): until then the call rings or is dialled on as the steps say, so a flow that only routes (business
// hours, then an extension) never answers by itself. A step that ends the call (hangup, voicemail, an agent,
// a dial that is answered) ends the flow; a flow that runs out of steps hangs up. Every step run counts
// against MAX_STEPS_RUN, so a flow that loops (a menu redirecting to itself on a wrong key) cannot run forever.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { DialPlan } from './dial-plan.ts';
import { CallGatherCompleted } from './events.ts';
import type { ExtensionRow } from './extension-store.ts';
import type { ExtensionService } from './extensions.ts';
import { isOpen } from './flow-hours.ts';
import type { FlowStep } from './flows/index.ts';
import type { LiveCall } from './live-call.ts';
import type { CallerLine, GatherResult, LineResult, Party, RingResult } from './pbx.ts';

/** Steps one call may run in all (loops included) before it is ended `failed`, cause `flow_step_limit`. */
export const MAX_STEPS_RUN = 500;
/** Seconds a gather waits for the first key (and between keys) when the step does not say. */
const GATHER_TIMEOUT_SECONDS = 5;
/** Seconds a dialled phone number rings when the step does not say. */
const DIAL_TIMEOUT_SECONDS = 30;

/** Where stored flows come from (the flows module). */
export interface FlowSource {
  resolve(
    organizationId: string,
    flowId: string,
    version?: number,
  ): Promise<{ flowId: string; version: number; steps: FlowStep[] } | undefined>;
}

/** A dial target as the PBX rings it, and how long it rings when the step does not say. */
interface Dialled {
  party: Party;
  ringSeconds: number;
  /** The ring group this attempt is a turn of (its round robin moves on when a member answers). */
  ringGroupId?: string;
}

/** Where a ring group's members ring from (ring-groups/: the group's strategy, its round robin). */
export interface RingGroupSource {
  attempts(
    organizationId: string,
    ringGroupId: string,
  ): Promise<{ ringSeconds: number; attempts: { extensionIds: string[] }[] } | undefined>;
  answeredBy(ringGroupId: string, extensionId: string): Promise<void>;
}

/** How a list of steps ended: it ran out (the flow goes on after it), or the call is over. */
type Ended = 'continue' | 'over';

/** One call's run: its line once answered, and the steps it has run. */
interface Run {
  live: LiveCall;
  line?: CallerLine;
  stepsRun: number;
  /** The last ring that went unanswered, for the call's end when the flow then runs out. */
  lastRing?: RingResult;
}

export class FlowRunner {
  constructor(
    private readonly deps: {
      db: Database;
      clock: Clock;
      events: EventOutbox;
      extensions: ExtensionService;
      plan: DialPlan;
      flows: () => FlowSource | undefined;
      ringGroups: () => RingGroupSource | undefined;
      log: FastifyBaseLogger;
    },
  ) {}

  /** Runs flow `flowId` (its latest version) on the call until the call ends. */
  async run(live: LiveCall, flowId: string): Promise<void> {
    const flow = await this.source().resolve(live.row.organization_id, flowId);
    const run: Run = { live, stepsRun: 0 };
    try {
      if (!flow) {
        await this.end(run, 'failed', 'no_route');
        return;
      }
      const ended = await this.steps(run, flow.steps);
      if (ended === 'continue') await this.hangUp(run, 'flow_ended');
    } finally {
      await run.line?.close();
    }
  }

  private async steps(run: Run, steps: FlowStep[]): Promise<Ended> {
    for (const step of steps) {
      if (run.live.state !== 'queued' && run.live.state !== 'ringing' && run.live.state !== 'in_progress') {
        return 'over';
      }
      run.stepsRun += 1;
      if (run.stepsRun > MAX_STEPS_RUN) {
        this.deps.log.warn({ callId: run.live.id, steps: MAX_STEPS_RUN }, 'call flow ran too many steps');
        await this.end(run, 'failed', 'flow_step_limit');
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
      case 'gather':
        return this.gather(run, step);
      case 'hours': {
        const open = isOpen(step, this.deps.clock.now());
        return this.steps(run, open ? step.whenOpen : step.whenClosed);
      }
      case 'dial':
        return this.dial(run, step);
      case 'voicemail': {
        const extension = await this.deps.extensions.store.find(
          this.deps.db,
          run.live.row.organization_id,
          step.extensionId,
        );
        if (!extension) return this.end(run, 'failed', 'no_route');
        await this.release(run);
        await this.deps.plan.voicemail(run.live, extension, this.deps.clock.now());
        return 'over';
      }
      case 'agent':
        await this.release(run);
        await this.deps.plan.agentAnswers(run.live, step.agentId);
        return 'over';
      case 'redirect': {
        if (!step.flowId) return this.unavailable(run, step);
        const next = await this.source().resolve(run.live.row.organization_id, step.flowId);
        if (!next) return this.end(run, 'failed', 'no_route');
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
    const line = await this.line(run);
    if (!line) return 'over';
    const prompt =
      step.prompt && step.prompt.type === 'say'
        ? { text: step.prompt.text, voice: step.prompt.voice }
        : undefined;
    const result: GatherResult = await line.gather({
      numDigits: step.numDigits,
      finishOnKey: step.finishOnKey,
      timeoutSeconds: step.timeoutSeconds ?? GATHER_TIMEOUT_SECONDS,
      prompt,
    });
    if (result.kind === 'hangup') return this.callerGone(run, result);
    const digits = result.kind === 'digits' ? result.digits : '';
    await this.record(run, digits);
    const branch = digits ? step.branches?.[digits] : undefined;
    if (branch) return this.steps(run, branch);
    if (step.otherwise) return this.steps(run, step.otherwise);
    return 'continue';
  }

  /**
   * Rings the targets, all at once (the default, as a phone system's "ring all") or one after the other, each
   * for the step's timeout; the first to answer talks with the caller until one hangs up. Unanswered, the
   * step's onBusy or onNoAnswer steps run, then the flow goes on after it.
   */
  private async dial(run: Run, step: Extract<FlowStep, { type: 'dial' }>): Promise<Ended> {
    const attempts: Dialled[] = [];
    for (const target of step.targets) attempts.push(...(await this.attempts(run, target)));
    if (attempts.length === 0) return this.end(run, 'failed', 'no_route');
    await this.release(run);
    let result: RingResult | undefined;
    let answering: Dialled | undefined;
    if ((step.strategy ?? 'simultaneous') === 'simultaneous' && step.targets.length > 1) {
      // Several targets at once: extensions only (unavailableFeature refuses anything else among them).
      const members = attempts.flatMap((each) => (each.party.kind === 'extension' ? [each.party] : []));
      const seconds = step.timeoutSeconds ?? Math.max(...attempts.map((each) => each.ringSeconds));
      result = await run.live.ring({ kind: 'extensions', members }, seconds);
    } else {
      for (const attempt of attempts) {
        answering = attempt;
        result = await run.live.ring(attempt.party, step.timeoutSeconds ?? attempt.ringSeconds);
        if (result.outcome === 'answered' || result.outcome === 'canceled') break;
      }
    }
    if (!result) return this.end(run, 'failed', 'no_route');
    if (result.outcome === 'canceled') return this.callerGone(run, { at: result.at, cause: result.cause });
    if (result.outcome === 'answered') {
      if (result.answeredBy && !run.live.row.extension_id)
        await run.live.note({ extension_id: result.answeredBy });
      if (answering?.ringGroupId && result.answeredBy) {
        await this.deps.ringGroups()?.answeredBy(answering.ringGroupId, result.answeredBy);
      }
      await run.live.answered(result.at);
      const record = Boolean(step.record) || run.live.row.record;
      const talk = await run.live.engine.converse(run.live.leg, { record });
      await run.live.finish(
        { status: 'completed', at: talk.at, cause: talk.cause },
        { recording: talk.recording },
      );
      return 'over';
    }
    run.lastRing = result;
    const next = result.outcome === 'busy' ? (step.onBusy ?? step.onNoAnswer) : step.onNoAnswer;
    return next ? this.steps(run, next) : 'continue';
  }

  /**
   * What a dial target rings, attempt by attempt: an extension or a number once; a ring group as its strategy
   * says (all members at once, or one after another: ring-groups/ring-order.ts). A target that is gone (an
   * extension or group deleted since the flow was saved) rings nothing.
   */
  private async attempts(
    run: Run,
    target: Extract<FlowStep, { type: 'dial' }>['targets'][number],
  ): Promise<Dialled[]> {
    const organizationId = run.live.row.organization_id;
    if (target.type === 'number') {
      return [{ party: { kind: 'phone', number: target.target }, ringSeconds: DIAL_TIMEOUT_SECONDS }];
    }
    if (target.type === 'extension') {
      const extension = await this.deps.extensions.store.find(this.deps.db, organizationId, target.target);
      if (!extension) return [];
      // The call is the first extension it reaches for, as a call routed to an extension is.
      if (!run.live.row.extension_id) await run.live.note({ extension_id: extension.id });
      return [{ party: extensionParty(extension), ringSeconds: extension.ring_seconds }];
    }
    if (target.type === 'ring_group') {
      const plan = await this.deps.ringGroups()?.attempts(organizationId, target.target);
      if (!plan) return [];
      const attempts: Dialled[] = [];
      for (const { extensionIds } of plan.attempts) {
        const members = [];
        for (const id of extensionIds) {
          const extension = await this.deps.extensions.store.find(this.deps.db, organizationId, id);
          if (extension) members.push(extensionParty(extension));
        }
        if (members.length === 0) continue;
        const party: Party = members.length === 1 ? members[0]! : { kind: 'extensions', members };
        attempts.push({ party, ringSeconds: plan.ringSeconds, ringGroupId: target.target });
      }
      return attempts;
    }
    this.deps.log.warn({ callId: run.live.id, target: target.type }, 'dial target not available yet');
    return [];
  }

  /** The caller's line, the call answered by the flow the first time; undefined when the PBX cannot. */
  private async line(run: Run): Promise<CallerLine | undefined> {
    if (run.line) return run.line;
    const engine = run.live.engine;
    if (!engine.callerLine) {
      await this.end(run, 'failed', 'flow_unsupported');
      return undefined;
    }
    await run.live.answered(this.deps.clock.now());
    run.line = engine.callerLine(run.live.leg);
    return run.line;
  }

  /** The flow's own media is let go before a person, a voicemail box or an agent takes the caller. */
  private async release(run: Run): Promise<void> {
    const line = run.line;
    run.line = undefined;
    await line?.close();
  }

  private async record(run: Run, digits: string): Promise<void> {
    const row = run.live.row;
    await this.deps.db.transaction((tx) =>
      this.deps.events.record(tx, CallGatherCompleted, {
        organizationId: row.organization_id,
        data: { callId: row.id, digits, at: this.deps.clock.now().toISOString() },
      }),
    );
  }

  private callerGone(run: Run, how: { at: Date; cause: string }): Promise<Ended> {
    return this.finishWith(
      run,
      run.live.state === 'in_progress' ? 'completed' : 'canceled',
      how.cause,
      how.at,
    );
  }

  /** The flow hangs up: an answered call is completed; one never answered ends as its last ring did. */
  private hangUp(run: Run, cause: string): Promise<Ended> {
    if (run.live.state === 'in_progress') return this.finishWith(run, 'completed', cause);
    const last = run.lastRing;
    if (last && last.outcome !== 'answered' && last.outcome !== 'canceled') {
      return this.finishWith(run, last.outcome, last.cause, last.at);
    }
    return this.finishWith(run, 'failed', cause);
  }

  private async unavailable(run: Run, step: FlowStep): Promise<Ended> {
    this.deps.log.warn({ callId: run.live.id, step: step.type }, 'call flow step not available yet');
    return this.end(run, 'failed', 'flow_step_unavailable');
  }

  private end(run: Run, status: 'failed', cause: string): Promise<Ended> {
    return this.finishWith(run, status, cause);
  }

  private async finishWith(
    run: Run,
    status: 'completed' | 'canceled' | 'failed' | 'busy' | 'no_answer',
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

function extensionParty(extension: ExtensionRow): Extract<Party, { kind: 'extension' }> {
  return { kind: 'extension', extensionId: extension.id, extension: extension.extension };
}
