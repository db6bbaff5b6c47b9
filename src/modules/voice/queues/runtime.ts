// The queue runtime (CONTRACT section 13, docs/voice.md "Queues at run time"): callers join a queue and wait;
// the dispatcher offers the oldest waiting caller to the queue's available members, by the queue's strategy
// (ring-groups/ring-order.ts), first come first served. Each wait is a row of queue_entries moved only by the
// table of entry-states.ts, with its event in the same transaction; members' states are derived from the
// records (member-states.ts). The dispatcher wakes when a caller joins or goes back to waiting, when a call of
// this process ends (a member may be free), when a wrap-up ends, when the clock is moved (tests), and every
// second while callers wait (a call that ended in another process, a phone that registered).
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../../platform/clock.ts';
import type { Database, Queryable } from '../../../platform/db/index.ts';
import type { EventOutbox } from '../../../platform/events.ts';
import { newId } from '../../../platform/ids.ts';
import { CallQueueAbandoned, CallQueueAnswered, CallQueueJoined } from '../events.ts';
import { clockTime, type LineTime } from '../line-media.ts';
import { lastCallEnded, ringOrder } from '../ring-groups/index.ts';
import type { EntryEvent } from './entry-states.ts';
import { type EntryRow, EntryStore } from './entry-store.ts';
import { memberState, type Presence } from './member-states.ts';
import { type QueueRow, QueueStore } from './store.ts';
import { Waiter } from './waiter.ts';

/** How often the dispatcher looks again while callers wait, whatever woke it. */
const TICK_MS = 1000;
/** A member who let an offer ring out is not offered another caller for this long (they may be away). */
export const MISSED_REST_SECONDS = 10;
/** The expected wait is the mean of this many latest answered waits of the queue, within EXPECTED_WINDOW. */
const EXPECTED_FROM_ANSWERED = 10;
const EXPECTED_WINDOW_SECONDS = 24 * 3600;

export interface QueueRuntimeDeps {
  db: Database;
  clock: Clock;
  events: EventOutbox;
  log: FastifyBaseLogger;
}

export class QueueRuntime {
  /** This process, as entries name the one holding their call. */
  readonly processId = randomUUID();
  readonly entries = new EntryStore();
  private readonly queues = new QueueStore();
  private readonly time: LineTime;
  /** The callers this process holds, by entry id. */
  private readonly waiters = new Map<string, Waiter>();
  /** Members who let an offer ring out, until when they rest. */
  private readonly resting = new Map<string, number>();
  private readonly dispatching = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly wrapUpTimers = new Set<() => void>();
  /** Each waiting caller's maxWaitSeconds timer (its cancel). */
  private readonly timeouts = new Map<Waiter, () => void>();
  private ticker?: { interval: NodeJS.Timeout; unlisten: () => void };
  private audio?: (organizationId: string, audioId: string) => Promise<Int16Array | undefined>;

  constructor(private readonly deps: QueueRuntimeDeps) {
    this.time = clockTime(deps.clock);
  }

  /** Where uploaded audio comes from (an audio library): a queue's holdAudioId is looked up there. */
  useAudio(loader: (organizationId: string, audioId: string) => Promise<Int16Array | undefined>): void {
    this.audio = loader;
  }

  /**
   * The queue's hold audio (8 kHz mono PCM); undefined when it has none, or it cannot be found or read (the
   * caller then hears the default hold rather than nothing at all).
   */
  async holdAudio(queue: QueueRow): Promise<Int16Array | undefined> {
    if (!queue.hold_audio_id || !this.audio) return undefined;
    try {
      return await this.audio(queue.organization_id, queue.hold_audio_id);
    } catch (error) {
      this.deps.log.warn({ err: error, queueId: queue.id }, 'hold audio could not be read');
      return undefined;
    }
  }

  find(organizationId: string, queueId: string): Promise<QueueRow | undefined> {
    return this.queues.find(this.deps.db, organizationId, queueId);
  }

  /** The caller joins the queue: `waiting`, with call.queue.joined; their maxWaitSeconds starts now. */
  async join(
    call: { id: string; organizationId: string; from: string },
    queue: QueueRow,
    presence: Presence,
  ): Promise<Waiter> {
    const { db, clock, events } = this.deps;
    const now = clock.now();
    const id = newId('qe', now.getTime());
    await db.transaction(async (tx) => {
      await this.entries.insert(tx, {
        id,
        queue_id: queue.id,
        organization_id: call.organizationId,
        call_id: call.id,
        from_number: call.from,
        held_by: this.processId,
        now,
      });
      const position = await this.entries.position(tx, id);
      await events.record(tx, CallQueueJoined, {
        organizationId: call.organizationId,
        data: { callId: call.id, queueId: queue.id, from: call.from, position, at: now.toISOString() },
      });
    });
    const waiter = new Waiter(id, call.id, queue, presence, now);
    this.waiters.set(id, waiter);
    const stop = this.time.after(queue.max_wait_seconds, () => waiter.expire());
    this.timeouts.set(waiter, stop);
    this.startTicking();
    this.wake(queue.id);
    return waiter;
  }

  /** The caller's place in line now (1 first). */
  position(waiter: Waiter): Promise<number> {
    return this.entries.position(this.deps.db, waiter.entryId);
  }

  /**
   * How much longer the caller may expect to wait, in seconds: the mean wait of the queue's latest answered
   * callers less what this one has waited (at least 0); undefined while the queue has no such history.
   */
  async expectedWaitSeconds(waiter: Waiter): Promise<number | undefined> {
    const now = this.deps.clock.nowMs();
    const since = new Date(now - EXPECTED_WINDOW_SECONDS * 1000);
    const mean = await this.entries.recentWait(this.deps.db, waiter.queue.id, since, EXPECTED_FROM_ANSWERED);
    if (mean === null) return undefined;
    return Math.max(0, mean - (now - waiter.joinedAt.getTime()) / 1000);
  }

  /** A member answered: `answered`, with call.queue.answered. False when the entry had left the queue. */
  async answered(waiter: Waiter, extensionId: string, at: Date): Promise<boolean> {
    const row = await this.move(waiter, 'answer', { answered_by: extensionId, left_at: at }, (tx, entry) =>
      this.deps.events.record(tx, CallQueueAnswered, {
        organizationId: entry.organization_id,
        data: {
          callId: entry.call_id,
          queueId: entry.queue_id,
          extensionId,
          waitSeconds: secondsBetween(entry.joined_at, at),
          at: at.toISOString(),
        },
      }),
    );
    return row !== undefined;
  }

  /**
   * Nobody of `extensionIds` answered: the caller waits again in their place, and those members rest for
   * MISSED_REST_SECONDS so the next caller does not ring the same empty desk.
   */
  async unanswered(waiter: Waiter, extensionIds: string[], at: Date): Promise<void> {
    for (const id of extensionIds) this.resting.set(id, at.getTime() + MISSED_REST_SECONDS * 1000);
    await this.move(waiter, 'unanswered', { offered_to: [] });
    this.wake(waiter.queue.id);
  }

  /** The caller left unanswered: `abandoned` (hung up) or `timed_out`, with call.queue.abandoned. */
  async leave(waiter: Waiter, reason: 'hangup' | 'timeout', at: Date = this.deps.clock.now()): Promise<void> {
    await this.move(waiter, reason, { left_at: at }, (tx, entry) =>
      this.deps.events.record(tx, CallQueueAbandoned, {
        organizationId: entry.organization_id,
        data: {
          callId: entry.call_id,
          queueId: entry.queue_id,
          reason,
          waitSeconds: secondsBetween(entry.joined_at, at),
          at: at.toISOString(),
        },
      }),
    );
    this.wake(waiter.queue.id);
  }

  /** The step is done with the caller (whatever became of them): their timers stop, they are not offered. */
  forget(waiter: Waiter): void {
    this.timeouts.get(waiter)?.();
    this.timeouts.delete(waiter);
    this.waiters.delete(waiter.entryId);
    if (this.waiters.size === 0) this.stopTicking();
  }

  /** A queue call ended: its member may take the next caller now, or once their wrap-up is over. */
  memberFree(queue: QueueRow): void {
    this.wake(queue.id);
    if (queue.wrap_up_seconds <= 0) return;
    const stop = this.time.after(queue.wrap_up_seconds, () => {
      this.wrapUpTimers.delete(stop);
      this.wake(queue.id);
    });
    this.wrapUpTimers.add(stop);
  }

  /** A call of this process ended: a member may be free. */
  callEnded(): void {
    this.wakeAll();
  }

  /** The server is closing: timers stop. */
  close(): void {
    this.stopTicking();
    for (const stop of this.wrapUpTimers) stop();
    this.wrapUpTimers.clear();
    for (const stop of this.timeouts.values()) stop();
    this.timeouts.clear();
  }

  /** Moves the caller's entry by `event` (and records its event in the same transaction). */
  private async move(
    waiter: Waiter,
    event: EntryEvent,
    change: { offered_to?: string[]; answered_by?: string; left_at?: Date },
    notice?: (tx: Queryable, entry: EntryRow) => Promise<unknown>,
  ): Promise<EntryRow | undefined> {
    const { db, clock, log } = this.deps;
    return db.transaction(async (tx) => {
      const row = await this.entries.move(tx, waiter.entryId, event, change, clock.now());
      if (!row) {
        log.debug({ callId: waiter.callId, entryId: waiter.entryId, event }, 'queue entry move refused');
        return undefined;
      }
      await notice?.(tx, row);
      return row;
    });
  }

  private wakeAll(): void {
    for (const queueId of new Set([...this.waiters.values()].map((waiter) => waiter.queue.id)))
      this.wake(queueId);
  }

  /** Runs the queue's dispatcher, once at a time; a wake while it runs makes it run once more after. */
  private wake(queueId: string): void {
    if (this.dispatching.has(queueId)) {
      this.again.add(queueId);
      return;
    }
    const run = (async () => {
      do {
        this.again.delete(queueId);
        try {
          await this.dispatch(queueId);
        } catch (error) {
          this.deps.log.error({ err: error, queueId }, 'queue dispatch failed');
        }
      } while (this.again.has(queueId));
      this.dispatching.delete(queueId);
    })();
    this.dispatching.set(queueId, run);
  }

  /**
   * Offers the queue's waiting callers, oldest first, to its available members, in the queue's row lock so
   * that two processes never offer one member twice. A caller another process holds is that process's to
   * offer (its line is there); this one goes on with its own callers.
   */
  private async dispatch(queueId: string): Promise<void> {
    const { db, clock } = this.deps;
    if (![...this.waiters.values()].some((waiter) => waiter.queue.id === queueId)) return;
    const offers: [Waiter, string[]][] = [];
    await db.transaction(async (tx) => {
      if (!(await this.entries.lockQueue(tx, queueId))) return;
      const local = (await this.entries.waiting(tx, queueId)).filter(
        (entry) => entry.state === 'waiting' && this.waiters.has(entry.id),
      );
      if (local.length === 0) return;
      const queue = this.waiters.get(local[0]!.id)!.queue;
      const now = clock.now();
      for (const [id, until] of this.resting) if (until <= now.getTime()) this.resting.delete(id);
      const facts = await this.entries.memberFacts(tx, queue.organization_id, queueId, now);
      const order = await this.orderFacts(
        tx,
        queue,
        facts.map((member) => member.extension_id),
      );
      const taken = new Set<string>();
      for (const entry of local) {
        const waiter = this.waiters.get(entry.id)!;
        const free = facts
          .filter((member) => memberState(member, now, waiter.presence) === 'available')
          .map((member) => member.extension_id)
          .filter((id) => !taken.has(id) && (this.resting.get(id) ?? 0) <= now.getTime());
        const [attempt] = ringOrder({ ...order, strategy: queue.strategy, extensionIds: free });
        if (!attempt) continue;
        const row = await this.entries.move(tx, entry.id, 'offer', { offered_to: attempt.extensionIds }, now);
        if (!row) continue;
        for (const id of attempt.extensionIds) taken.add(id);
        offers.push([waiter, attempt.extensionIds]);
      }
    });
    for (const [waiter, extensionIds] of offers) waiter.offer(extensionIds);
  }

  /** What the strategy's order depends on: round robin's last member, longest idle's last calls. */
  private async orderFacts(tx: Queryable, queue: QueueRow, extensionIds: string[]) {
    return {
      lastAnsweredExtensionId:
        queue.strategy === 'round_robin' ? await this.entries.lastAnswered(tx, queue.id) : null,
      lastCallEndedAt:
        queue.strategy === 'longest_idle'
          ? await lastCallEnded(tx, queue.organization_id, extensionIds)
          : new Map<string, Date>(),
    };
  }

  private startTicking(): void {
    if (this.ticker) return;
    const interval = setInterval(() => this.wakeAll(), TICK_MS);
    interval.unref();
    this.ticker = { interval, unlisten: this.deps.clock.onMove(() => this.wakeAll()) };
  }

  private stopTicking(): void {
    if (!this.ticker) return;
    clearInterval(this.ticker.interval);
    this.ticker.unlisten();
    this.ticker = undefined;
  }
}

function secondsBetween(from: Date, to: Date): number {
  return Math.max(0, Math.round((to.getTime() - from.getTime()) / 1000));
}
