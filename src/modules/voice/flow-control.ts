// What a call flow's step modules (flow-dial.ts, and one file per step family) use of the runner
// (flow-runner.ts): the run they act on, how a list of steps ended, and the runner's own moves (answer the
// caller, let the flow's media go, run nested steps, end the call). Types only, so that step modules and the
// runner do not import each other.
import type { FastifyBaseLogger } from 'fastify';
import type { Static, TObject } from 'typebox';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { EventDefinition, EventOutbox } from '../../platform/events.ts';
import type { AudioFetcher } from './audio-fetch.ts';
import type { CallTransfers } from './call-transfer.ts';
import type { DialPlan } from './dial-plan.ts';
import type { ExtensionService } from './extensions.ts';
import type { FlowApps } from './flow-webhook.ts';
import type { FlowStep } from './flows/index.ts';
import type { LiveCall } from './live-call.ts';
import type { CallMedia } from './media.ts';
import type { CallerLine, RingResult } from './pbx.ts';
import type { QueueRuntime } from './queues/index.ts';
import type { RingGroupSource } from './ring-groups/index.ts';
import type { StreamTargetOptions } from './stream-target.ts';

export type { RingGroupSource } from './ring-groups/index.ts';

/** Where stored flows come from (the flows module). */
export interface FlowSource {
  resolve(
    organizationId: string,
    flowId: string,
    version?: number,
  ): Promise<{ flowId: string; version: number; steps: FlowStep[] } | undefined>;
}

export interface FlowRunnerDeps {
  db: Database;
  clock: Clock;
  events: EventOutbox;
  extensions: ExtensionService;
  plan: DialPlan;
  flows: () => FlowSource | undefined;
  ringGroups: () => RingGroupSource | undefined;
  /** The queue runtime (queues/runtime.ts): a queue step's callers wait there. */
  queues: () => QueueRuntime | undefined;
  /** The customer's apps that serve steps over HTTP (flow-webhook.ts), once the voice module has built them. */
  apps: () => FlowApps | undefined;
  /** What a transfer step's target rings, and the record of a transfer (call-transfer.ts). */
  transfers: CallTransfers;
  /** Recordings: a record step's audio is kept as one, a play step's audioId names one. */
  media: CallMedia;
  /** A play step's audioUrl, fetched when the step runs. */
  audio: AudioFetcher;
  log: FastifyBaseLogger;
  /** Where a stream step's WebSocket may go (stream-target.ts); guarded (production's rules) when absent. */
  streams?: StreamTargetOptions;
}

/** How a list of steps ended: it ran out (the flow goes on after it), or the call is over. */
export type Ended = 'continue' | 'over';

/** One call's run: its line once answered, and the steps it has run. */
export interface Run {
  live: LiveCall;
  line?: CallerLine;
  stepsRun: number;
  /** The last ring that went unanswered, for the call's end when the flow then runs out. */
  lastRing?: RingResult;
  /** A call a number's webhook route sent to an app: the flow that runs when an app fails it. */
  app?: { fallbackFlowId?: string };
}

/** How a call the flow ends is written: an answered call is completed, an unanswered one as its ring ended. */
export type FlowEndStatus = 'completed' | 'canceled' | 'failed' | 'busy' | 'no_answer';

/** The runner's moves, for the step modules. */
export interface FlowControl {
  readonly deps: FlowRunnerDeps;
  /** The caller's line, the call answered by the flow the first time; undefined (call ended) when the PBX cannot. */
  line(run: Run): Promise<CallerLine | undefined>;
  /** The flow's own media is let go before a person, a voicemail box, an agent or an app takes the caller. */
  release(run: Run): Promise<void>;
  /** Runs nested steps (a branch, a fallback), counted against the step limit. */
  steps(run: Run, steps: FlowStep[]): Promise<Ended>;
  /** The caller (or the API) hung up: answered, the call is completed; else canceled. */
  callerGone(run: Run, how: { at: Date; cause: string }): Promise<Ended>;
  /** The flow hangs up: an answered call is completed; one never answered ends as its last ring did. */
  hangUp(run: Run, cause: string): Promise<Ended>;
  finishWith(run: Run, status: FlowEndStatus, cause: string, at?: Date): Promise<Ended>;
  /** Records a step's event (call.gather.completed, call.stream.*) for the call's organization, on its own. */
  recordEvent<Schema extends TObject>(
    run: Run,
    event: EventDefinition<Schema>,
    data: Static<Schema>,
  ): Promise<void>;
}
