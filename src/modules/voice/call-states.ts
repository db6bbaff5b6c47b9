// The life of a call, as one table: its states (the record's statuses, call-store.ts) and the events that move
// it. Both PBXs drive it the same way, through the Pbx seam (pbx.ts): what a SIP dialog does below it (a leg's
// own life: sip/leg-states.ts) never reaches this table. An event the state does not allow is refused and
// logged, and nothing is written: a `ringing` that lands after the answer (a phone's 180 overtaken by its 200,
// or a write outrun by the next one), an answer after the end, a second end.
import type { FastifyBaseLogger } from 'fastify';
import type { CallStatus } from './call-store.ts';

/** The statuses a call ends in. */
export type EndStatus = Exclude<CallStatus, 'queued' | 'ringing' | 'in_progress'>;

/**
 * What happens to a call: the first leg rings, someone answers (a person, a voicemail box, an AI agent), or
 * the call ends, an end event being named by the status it ends in.
 */
export type CallEvent = 'ringing' | 'answered' | EndStatus;

export const CALL_TRANSITIONS: Readonly<
  Record<CallStatus, Readonly<Partial<Record<CallEvent, CallStatus>>>>
> = {
  // Admitted; nothing rings yet (or a voicemail box or an agent answers at once).
  queued: {
    ringing: 'ringing',
    answered: 'in_progress',
    busy: 'busy',
    no_answer: 'no_answer',
    failed: 'failed',
    canceled: 'canceled',
  },
  // Something rings; later legs ringing (the callee after the extension, a forward) change nothing.
  ringing: {
    answered: 'in_progress',
    busy: 'busy',
    no_answer: 'no_answer',
    failed: 'failed',
    canceled: 'canceled',
  },
  // Answered: it ends completed (whoever hangs up, a failed transfer too) or failed (the platform failed).
  in_progress: { completed: 'completed', failed: 'failed' },
  completed: {},
  busy: {},
  no_answer: {},
  failed: {},
  canceled: {},
};

/** The state `event` moves a call in `state` to, or undefined when the table does not allow it. */
export function nextCallState(state: CallStatus, event: CallEvent): CallStatus | undefined {
  return CALL_TRANSITIONS[state][event];
}

/** Whether a call in `state` has ended. */
export function isEnded(state: CallStatus): boolean {
  return state !== 'queued' && state !== 'ringing' && state !== 'in_progress';
}

/** One call's place in the table. */
export class CallMachine {
  constructor(
    private current: CallStatus,
    /** The call's id, for the log. */
    private readonly callId: string,
    private readonly log: FastifyBaseLogger,
  ) {}

  get state(): CallStatus {
    return this.current;
  }

  get ended(): boolean {
    return isEnded(this.current);
  }

  /** Moves the call by `event`; false (and logged) when its state does not allow it. */
  move(event: CallEvent): boolean {
    const next = nextCallState(this.current, event);
    if (!next) {
      this.log.debug({ callId: this.callId, state: this.current, event }, 'call event refused');
      return false;
    }
    this.current = next;
    return true;
  }
}
