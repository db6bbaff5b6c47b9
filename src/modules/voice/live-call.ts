// One call while its program runs, in the process whose PBX holds it: its record as last written, the call as
// the PBX knows it, the PBX carrying it, and the writes of its steps (each with its event in one transaction).
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { type CallEnding, type CallOutcome, type Leftovers, toCall } from './call-end.ts';
import type { CallChange, CallRow, CallStore } from './call-store.ts';
import { CallAnswered, CallRinging } from './events.ts';
import type { Party, Pbx, PbxCall, RingResult } from './pbx.ts';

export interface LiveCallDeps {
  db: Database;
  clock: Clock;
  events: EventOutbox;
  store: CallStore;
  ending: CallEnding;
}

export class LiveCall {
  row: CallRow;
  /** The call as its PBX knows it. */
  readonly leg: PbxCall;

  constructor(
    row: CallRow,
    /** The PBX carrying it: the simulated one, or the SIP one for a call a phone placed. */
    readonly engine: Pbx,
    private readonly deps: LiveCallDeps,
  ) {
    this.row = row;
    this.leg = { id: row.id, direction: row.direction, from: row.from_number, to: row.to_number };
  }

  get id(): string {
    return this.row.id;
  }

  /**
   * Rings `party` for at most `ringSeconds`. The call's first ringing is written (call.ringing); `whenRinging`
   * then runs (an agent's call record hears of it).
   */
  ring(party: Party, ringSeconds: number, whenRinging?: (at: Date) => Promise<void>): Promise<RingResult> {
    return this.engine.ring(this.leg, party, ringSeconds, async (at) => {
      if (this.row.status !== 'queued') return;
      await this.step({ status: 'ringing' }, at, CallRinging);
      await whenRinging?.(at);
    });
  }

  /** The call is answered (a person, a voicemail box or an agent): in progress from `at`. */
  async answered(at: Date, change: CallChange = {}): Promise<void> {
    await this.step({ ...change, status: 'in_progress', answered_at: at }, at, CallAnswered);
  }

  /** Writes a step of the call (with its event, if it has one). */
  async step(
    change: CallChange,
    at: Date = this.deps.clock.now(),
    event?: typeof CallRinging | typeof CallAnswered,
  ): Promise<void> {
    const { db, store, events } = this.deps;
    await db.transaction(async (tx) => {
      const row = await store.change(tx, this.row.id, change, at);
      if (!row) return;
      this.row = row;
      if (event) await events.record(tx, event, { organizationId: row.organization_id, data: toCall(row) });
    });
  }

  /** Ends the call: its record, what it left (a voicemail, a recording) and call.completed, at once. */
  async finish(end: CallOutcome, left: Leftovers = {}): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      const row = await this.deps.ending.write(tx, this.row, end, left);
      if (row) this.row = row;
    });
  }
}
