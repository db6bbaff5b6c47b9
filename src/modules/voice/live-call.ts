// One call while its program runs, in the process whose PBX holds it: the call as the PBX knows it, the PBX
// carrying it, each leg it rang, and its state, which moves only through the call's table (call-states.ts).
// Every write of a step goes through that table first (what it refuses is not written, and its event is not
// sent), then through one queue per call, so the record takes the steps in the order the call took them: a
// `ringing` begun before the answer lands before it, whatever connection of a pool each write takes.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { type CallEnding, type CallOutcome, type Leftovers, toCall } from './call-end.ts';
import { type CallEvent, CallMachine } from './call-states.ts';
import type { CallChange, CallRow, CallStatus, CallStore } from './call-store.ts';
import { CallAnswered, CallRinging, CallTransferred } from './events.ts';
import type { Party, Pbx, PbxCall, RingOutcome, RingResult } from './pbx.ts';
import type { TransferTarget } from './schemas.ts';

export interface LiveCallDeps {
  db: Database;
  clock: Clock;
  events: EventOutbox;
  store: CallStore;
  ending: CallEnding;
  log: FastifyBaseLogger;
}

/** A leg the call rang: who, when it began and rang, and how it ended. */
export interface RungLeg {
  party: Party;
  startedAt: Date;
  ringingAt?: Date;
  outcome?: RingOutcome;
  endedAt?: Date;
  cause?: string;
}

export class LiveCall {
  /** The record as last written. */
  row: CallRow;
  /** Each leg rung, in order: the extension, then the callee or its forward, a transfer's person. */
  readonly legs: RungLeg[] = [];
  private readonly machine: CallMachine;
  /** The writes of this call, one after another. */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    row: CallRow,
    /** The PBX carrying it: the simulated one, or the SIP one for a call a phone placed. */
    readonly engine: Pbx,
    private readonly deps: LiveCallDeps,
  ) {
    this.row = row;
    this.machine = new CallMachine(row.status, row.id, deps.log);
  }

  get id(): string {
    return this.row.id;
  }

  /** The call as its PBX knows it; `record` as the record says now (an agent's recording is set after it began). */
  get leg(): PbxCall {
    const row = this.row;
    return {
      id: row.id,
      direction: row.direction,
      from: row.from_number,
      to: row.to_number,
      record: row.record,
    };
  }

  /** Where the call is in its life (the record follows, once its writes have landed). */
  get state(): CallStatus {
    return this.machine.state;
  }

  /**
   * Rings `party` for at most `ringSeconds`, as one more leg of the call. The call's first ringing is written
   * (call.ringing) and `whenRinging` then runs (an agent's call record hears of it); a later one, or one the
   * PBX reports after an answer or the end, is refused by the table.
   */
  async ring(
    party: Party,
    ringSeconds: number,
    whenRinging?: (at: Date) => Promise<void>,
  ): Promise<RingResult> {
    const rung: RungLeg = { party, startedAt: this.deps.clock.now() };
    this.legs.push(rung);
    const result = await this.engine.ring(this.leg, party, ringSeconds, async (at) => {
      rung.ringingAt ??= at;
      if (await this.ringing(at)) await whenRinging?.(at);
    });
    rung.outcome = result.outcome;
    rung.endedAt = result.at;
    rung.cause = result.cause;
    return result;
  }

  /** Something rings: the call's `ringing`, with call.ringing. False when the table refused it. */
  ringing(at: Date): Promise<boolean> {
    return this.move('ringing', { status: 'ringing' }, at, CallRinging);
  }

  /** The call is answered (a person, a voicemail box or an agent): in progress from `at`, with call.answered. */
  answered(at: Date, change: CallChange = {}): Promise<boolean> {
    return this.move('answered', { ...change, status: 'in_progress', answered_at: at }, at, CallAnswered);
  }

  /**
   * Rings `party` as a transfer of the conversation (Pbx.transfer), as one more leg of the call; undefined at
   * once when the PBX cannot (the call is not talking with a person, or a transfer is under way).
   */
  transferLeg(
    party: Party,
    ringSeconds: number,
    options: { keepCurrent: boolean },
  ): Promise<RingResult> | undefined {
    const pending = this.engine.transfer?.(this.leg, party, ringSeconds, options);
    if (!pending) return undefined;
    const rung: RungLeg = { party, startedAt: this.deps.clock.now() };
    this.legs.push(rung);
    return pending.then((result) => {
      rung.outcome = result.outcome;
      rung.endedAt = result.at;
      rung.cause = result.cause;
      return result;
    });
  }

  /**
   * The call was transferred and `target` answered (or was joined): the record says where and when, with
   * call.transferred. Refused once the call has ended.
   */
  async transferred(
    target: TransferTarget,
    at: Date,
    how: { mode: 'blind' | 'attended'; by: 'api' | 'phone' | 'flow' },
  ): Promise<boolean> {
    if (this.machine.ended) return false;
    const { db, store, events } = this.deps;
    await this.write(() =>
      db.transaction(async (tx) => {
        const change = {
          transferred_to_type: target.type,
          transferred_to: target.target,
          transferred_at: at,
        };
        const row = await store.change(tx, this.row.id, change, at);
        if (!row) return;
        this.row = row;
        await events.record(tx, CallTransferred, {
          organizationId: row.organization_id,
          data: { callId: row.id, target, mode: how.mode, by: how.by, at: at.toISOString() },
        });
      }),
    );
    return true;
  }

  /**
   * Writes what the call now knows that is not a step of its life (the extension it is for, its agent, that
   * it is recorded). Refused once the call has ended.
   */
  async note(change: Omit<CallChange, 'status' | 'answered_at' | 'ended_at'>): Promise<boolean> {
    if (this.machine.ended) {
      this.deps.log.debug(
        { callId: this.id, state: this.state, change },
        'call change after its end refused',
      );
      return false;
    }
    await this.write(() => this.change(change, this.deps.clock.now()));
    return true;
  }

  /**
   * Ends the call: its record, what it left (a voicemail, a recording) and call.completed, at once. Nothing
   * when the table refuses it (the call had ended already).
   */
  async finish(end: CallOutcome, left: Leftovers = {}): Promise<void> {
    if (!this.machine.move(end.status)) return;
    await this.write(() =>
      this.deps.db.transaction(async (tx) => {
        const row = await this.deps.ending.write(tx, this.row, end, left);
        if (row) this.row = row;
      }),
    );
  }

  private async move(
    event: CallEvent,
    change: CallChange,
    at: Date,
    notice: typeof CallRinging | typeof CallAnswered,
  ): Promise<boolean> {
    if (!this.machine.move(event)) return false;
    await this.write(() => this.change(change, at, notice));
    return true;
  }

  /** Changes the record (with its event, if it has one); a call ended by another process changes nothing. */
  private async change(
    change: CallChange,
    at: Date,
    notice?: typeof CallRinging | typeof CallAnswered,
  ): Promise<void> {
    const { db, store, events } = this.deps;
    await db.transaction(async (tx) => {
      const row = await store.change(tx, this.row.id, change, at);
      if (!row) return;
      this.row = row;
      if (notice) await events.record(tx, notice, { organizationId: row.organization_id, data: toCall(row) });
    });
  }

  /** Queues a write behind the call's earlier ones; a failed one fails its caller, not the next write. */
  private write(work: () => Promise<void>): Promise<void> {
    const run = this.writes.then(work);
    this.writes = run.catch(() => undefined);
    return run;
  }
}
