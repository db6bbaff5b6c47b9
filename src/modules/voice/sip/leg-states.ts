// The life of one leg we place (an INVITE of ours to one phone, or to the trunk) as one table: its states, the
// events that move it, and nothing else. An event the state does not allow is refused (the caller of `move`
// ignores the message) and logged, so a late or repeated answer can never start a second life of the leg.
import type { FastifyBaseLogger } from 'fastify';

export type LegState =
  /** Our INVITE is out; nothing back yet beyond 100. */
  | 'calling'
  /** The phone rings (180/183). */
  | 'ringing'
  /** The phone answered (2xx, ACKed): the leg's dialog is confirmed. */
  | 'answered'
  /** The phone refused (3xx-6xx, 487 to our CANCEL among them): the leg never had a dialog. */
  | 'refused'
  /** We sent CANCEL (another phone answered, the ring timed out, the caller gave up) and await its end. */
  | 'cancelling'
  /** It answered after we gave up on it (its 2xx crossed our CANCEL, or another phone won): ACKed, then BYE. */
  | 'abandoned'
  /** Its dialog ended (a BYE either way). */
  | 'ended';

export type LegEvent =
  | 'provisional'
  | 'answer'
  /** The same 2xx again (our ACK was lost; RFC 3261 section 13.3.1.4): ACKed again, nothing else. */
  | 'answer_repeated'
  | 'refusal'
  | 'cancel'
  | 'bye';

const TRANSITIONS: Record<LegState, Partial<Record<LegEvent, LegState>>> = {
  calling: { provisional: 'ringing', answer: 'answered', refusal: 'refused', cancel: 'cancelling' },
  ringing: { provisional: 'ringing', answer: 'answered', refusal: 'refused', cancel: 'cancelling' },
  cancelling: { provisional: 'cancelling', answer: 'abandoned', refusal: 'refused' },
  answered: { answer_repeated: 'answered', bye: 'ended' },
  abandoned: { answer_repeated: 'abandoned', bye: 'abandoned' },
  ended: { answer_repeated: 'ended' },
  refused: {},
};

export class Leg {
  state: LegState = 'calling';

  constructor(
    /** The leg's SIP Call-ID, for the log. */
    readonly sipCallId: string,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Moves the leg by `event`; false (and logged) when its state does not allow it. */
  move(event: LegEvent): boolean {
    const next = TRANSITIONS[this.state][event];
    if (!next) {
      this.log.debug({ sipCallId: this.sipCallId, state: this.state, event }, 'SIP leg event refused');
      return false;
    }
    this.state = next;
    return true;
  }

  /** Still waiting for the phone's answer (a CANCEL would stop it). */
  get pending(): boolean {
    return this.state === 'calling' || this.state === 'ringing';
  }
}
