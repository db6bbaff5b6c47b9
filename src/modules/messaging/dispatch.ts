// The hand-off to the carrier: a sent message is booked a paced slot and a dispatch job for that moment;
// the job gives it to the carrier and records the answer with its event. A message the carrier cannot be
// reached for, or whose recipient opted out in the meantime, ends here rather than stay queued.
import DataLoader from 'dataloader';
import type { Carrier, OutboundForCarrier } from '../../carriers/carrier.ts';
import type { CarrierPacing, PacedNumber } from '../../carriers/pacing.ts';
import type { Clock } from '../../platform/clock.ts';
import { placedAfter, type SqlFragment } from '../../platform/db/fragment.ts';
import { type Database, type Queryable, retryingConflicts } from '../../platform/db/index.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { Resolver } from '../../platform/http/address-guard.ts';
import type { JobQueue } from '../../platform/jobs.ts';
import type { ContactService } from '../contacts/index.ts';
import { optOutKey } from '../contacts/index.ts';
import { MessageFailed, MessageSent } from './events.ts';
import { MediaProbe, type MediaRefusal } from './media-probe.ts';
import { type CountMessages, toMessage } from './message.ts';
import { encodingFor, splitSegments } from './segments.ts';
import type { MessageRow, MessageStore } from './store.ts';

export const DISPATCH_QUEUE = 'messages.dispatch';
export const RECEIPT_QUEUE = 'messages.receipt';
/** Receipts a carrier reported by its own id of the message (SMPP deliver_sm), matched to ours when run. */
export const CARRIER_RECEIPT_QUEUE = 'messages.carrier_receipt';
export const DISPATCH_ATTEMPTS = 8;

/** A queued message that ends without reaching the carrier, and why. */
interface EndedMessage {
  id: string;
  status: 'failed' | 'cancelled';
  errorCode: string;
  errorMessage: string;
}

const SUSPENDED = {
  status: 'cancelled',
  errorCode: 'ACCOUNT_SUSPENDED',
  errorMessage: 'The account was suspended before the message was sent',
} as const;
const OPTED_OUT = {
  status: 'cancelled',
  errorCode: 'RECIPIENT_OPTED_OUT',
  errorMessage: 'The recipient opted out before the message was sent',
} as const;

/** At most this many messages in one dispatch batch (a claim is a worker's free slots, 16 by default). */
const MAX_BATCH = 100;

/** A message's dispatch job is unique by this key: a second enqueue of it is ignored. */
const dispatchKey = (messageId: string) => `dispatch:${messageId}`;

export class MessageDispatcher {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly jobs: JobQueue;
  private readonly events: EventOutbox;
  private readonly contacts: ContactService;
  private readonly carrier: Carrier;
  private readonly pacing: CarrierPacing;
  private readonly store: MessageStore;
  /** Outside test the simulated carrier reports receipts by itself, after a short delay. */
  private readonly automaticReceipts: boolean;
  /** Checks hosted media before a carrier that fetches it gets the URLs. */
  private readonly mediaProbe: MediaProbe;
  /** Collects the dispatches started in one turn of the event loop into one batch (dispatchBatch). */
  private readonly batches: DataLoader<string, void>;
  private readonly countMessages: CountMessages;

  constructor(deps: {
    db: Database;
    clock: Clock;
    jobs: JobQueue;
    events: EventOutbox;
    contacts: ContactService;
    carrier: Carrier;
    pacing: CarrierPacing;
    store: MessageStore;
    automaticReceipts: boolean;
    guardMediaUrls: boolean;
    resolver?: Resolver;
    countMessages?: CountMessages;
  }) {
    this.countMessages = deps.countMessages ?? (() => {});
    this.db = deps.db;
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.events = deps.events;
    this.contacts = deps.contacts;
    this.carrier = deps.carrier;
    this.pacing = deps.pacing;
    this.store = deps.store;
    this.automaticReceipts = deps.automaticReceipts;
    this.mediaProbe = new MediaProbe({
      guarded: deps.guardMediaUrls,
      resolver: deps.resolver,
      now: () => deps.clock.now().getTime(),
    });
    this.batches = new DataLoader((ids) => this.dispatchBatch(ids), {
      cache: false,
      maxBatchSize: MAX_BATCH,
    });
  }

  /**
   * Whether hosted media at `urls` may be handed to the carrier: asked exactly as a dispatch asks (the SSRF guard
   * in production), and only when the carrier fetches media itself (else nothing of ours or the carrier's
   * reaches the URL). A refusal, or undefined; throws when a URL could not be asked now.
   */
  async hostedMediaRefusal(urls: readonly string[]): Promise<MediaRefusal | undefined> {
    if (!this.carrier.fetchesMedia || urls.length === 0) return undefined;
    return this.mediaProbe.refusal(urls);
  }

  /**
   * Books the sending number's next free slot at the carrier's throughput for its type and enqueues the
   * dispatch for that moment: excess is queued, never dropped. (A campaign books a whole batch at once:
   * bookSlots and enqueueDispatches.)
   */
  async schedule(tx: Queryable, messageId: string, sender: PacedNumber): Promise<void> {
    const slot = await this.pacing.bookSlot(tx, sender, this.clock.now());
    await this.jobs.enqueue(
      tx,
      DISPATCH_QUEUE,
      { messageId },
      { runAt: slot, dedupeKey: dispatchKey(messageId) },
    );
    this.countMessages('queued');
  }

  /**
   * schedule() for a message not yet written, in one statement with its insert (`message`, an INSERT …
   * RETURNING id of MessageStore.outboundInsert): the message, its slot and its dispatch job in one round trip.
   * With `gate`, CTEs written first whose last, `gate.after`, the message's insert reads from (outboundInsert's
   * `after`): the slot is booked and the job added only if the message was written. Returns whether it was.
   */
  async insertAndSchedule(
    tx: Queryable,
    message: SqlFragment,
    messageId: string,
    sender: PacedNumber,
    gate?: { ctes: SqlFragment; after: string },
  ): Promise<boolean> {
    const gated = gate?.ctes.params.length ?? 0;
    const slot = this.pacing.slotBooking(sender, this.clock.now(), gate && 'queued_message');
    const before = gated + message.params.length;
    const dedupe = before + slot.params.length + 1;
    const added = await this.jobs.enqueueSelected(tx, DISPATCH_QUEUE, {
      with: `${gate ? `${gate.ctes.text}, ` : ''}queued_message AS (${placedAfter(message, gated)}),
             booked_slot AS (${placedAfter(slot, before)})`,
      rows: `SELECT jsonb_build_object('messageId', queued_message.id) AS payload, NULL::text AS concurrency_key,
                    booked_slot.slot AS run_at, $${dedupe}::text AS dedupe_key
               FROM queued_message CROSS JOIN booked_slot`,
      params: [...(gate?.ctes.params ?? []), ...message.params, ...slot.params, dispatchKey(messageId)],
      timed: true,
    });
    if (added === 0) return false;
    this.countMessages('queued');
    return true;
  }

  /** Books slots for a batch of messages in order, up to the first after `until` (CarrierPacing.bookSlots). */
  bookSlots(tx: Queryable, requests: { sender: PacedNumber; from: Date }[], until: Date): Promise<Date[]> {
    return this.pacing.bookSlots(tx, requests, until);
  }

  /** Enqueues the dispatch of each message at its booked slot, in one statement. */
  async enqueueDispatches(tx: Queryable, booked: { messageId: string; slot: Date }[]): Promise<void> {
    if (booked.length === 0) return;
    await this.jobs.enqueueSelected(tx, DISPATCH_QUEUE, {
      rows: `SELECT jsonb_build_object('messageId', booked.id) AS payload, NULL::text AS concurrency_key,
                    booked.slot AS run_at, booked.dedupe_key
               FROM unnest($1::text[], $2::timestamptz[], $3::text[]) AS booked(id, slot, dedupe_key)`,
      params: [
        booked.map((item) => item.messageId),
        booked.map((item) => item.slot.toISOString()),
        booked.map((item) => dispatchKey(item.messageId)),
      ],
      timed: true,
    });
    this.countMessages('queued', booked.length);
  }

  /**
   * The dispatch job: hands a queued message to the carrier and records what it said. Idempotent. The jobs a
   * worker claims together are dispatched together (`dispatchBatch`).
   */
  dispatch(messageId: string): Promise<void> {
    return this.batches.load(messageId);
  }

  /**
   * Dispatches the messages of the jobs started in the same turn of the event loop (the jobs of one claim) in
   * a handful of statements instead of about seven each: one read of the messages with their organizations'
   * standing, one of their recipients' opt-outs, then each handed to the carrier, then one transaction that
   * records every outcome with its events and receipt jobs. Each job still succeeds or fails on its own: a
   * carrier that throws for one message fails that job alone. If the recording transaction fails, every job
   * of the batch is tried again, as a single job would be; those the carrier already took may reach it twice,
   * the at-least-once hand-off a single dispatch has too.
   */
  private async dispatchBatch(ids: readonly string[]): Promise<(undefined | Error)[]> {
    const rows = (await this.store.findManyForDispatch(this.db, [...new Set(ids)])).filter(
      (row) => row.status === 'queued',
    );
    // Automatic replies (the confirmations of STOP and HELP that carriers require) leave whatever the
    // account's standing or the recipient's opt-out: they are that opt-out's confirmation.
    const checked = rows.filter((row) => row.origin !== 'auto_reply');
    const optedOut = await this.contacts.optedOutAmong(
      checked
        .filter((row) => !row.organization_suspended)
        .map((row) => ({ organizationId: row.organization_id, phone: row.to_number })),
    );
    const ended: EndedMessage[] = [];
    const toSend: MessageRow[] = [];
    for (const row of rows) {
      if (row.origin === 'auto_reply') toSend.push(row);
      // Nothing leaves for a suspended organization (CONTRACT 7).
      else if (row.organization_suspended) ended.push({ id: row.id, ...SUSPENDED });
      // A STOP that arrived after the message was queued still wins.
      else if (optedOut.has(optOutKey(row.organization_id, row.to_number)))
        ended.push({ id: row.id, ...OPTED_OUT });
      else toSend.push(row);
    }

    const failures = new Map<string, Error>();
    const accepted: { outbound: OutboundForCarrier; carrierMessageId: string }[] = [];
    await Promise.all(
      toSend.map(async (row) => {
        const outbound = toCarrierMessage(row);
        try {
          const refusal =
            this.carrier.fetchesMedia && outbound.mediaUrls.length > 0
              ? await this.mediaProbe.refusal(outbound.mediaUrls)
              : undefined;
          if (refusal) {
            ended.push({ id: row.id, status: 'failed', ...refusal });
            return;
          }
          const result = await this.carrier.send(outbound);
          if (result.accepted) accepted.push({ outbound, carrierMessageId: result.carrierMessageId });
          else {
            ended.push({
              id: row.id,
              status: 'failed',
              errorCode: result.errorCode,
              errorMessage: result.errorMessage,
            });
          }
        } catch (error) {
          // Not reached: this message's job is tried again later; the others' outcomes are recorded.
          failures.set(row.id, error instanceof Error ? error : new Error(String(error)));
        }
      }),
    );

    // A deadlock victim is recorded again rather than its jobs retried: those would hand the carrier again
    // the messages it has just taken.
    const outcome = await retryingConflicts(() =>
      this.db.transaction(async (tx) => {
        const now = this.clock.now();
        const sent = await this.store.markManySent(
          tx,
          this.carrier.name,
          accepted.map(({ outbound, carrierMessageId }) => ({ id: outbound.id, carrierMessageId })),
          now,
        );
        await this.events.recordMany(
          tx,
          MessageSent,
          sent.map((row) => ({ organizationId: row.organization_id, data: toMessage(row, now) })),
        );
        const finished = await this.store.finishManyQueued(tx, ended, now);
        await this.events.recordMany(
          tx,
          MessageFailed,
          finished
            .filter((row) => row.status === 'failed')
            .map((row) => ({ organizationId: row.organization_id, data: toMessage(row, now) })),
        );
        if (this.automaticReceipts) await this.enqueuePlannedReceipts(tx, sent, accepted, now);
        return { sent: sent.length, finished: finished.map((row) => row.status) };
      }),
    );
    this.countMessages('sent', outcome.sent);
    for (const status of outcome.finished) this.countMessages(status);
    return ids.map((id) => failures.get(id));
  }

  /** Outside test, the simulated carrier's receipts for the messages it just took, as jobs at their time. */
  private async enqueuePlannedReceipts(
    tx: Queryable,
    sent: MessageRow[],
    accepted: { outbound: OutboundForCarrier }[],
    now: Date,
  ): Promise<void> {
    const outbounds = new Map(accepted.map(({ outbound }) => [outbound.id, outbound]));
    const planned = sent.flatMap((row) => {
      const receipt = this.carrier.plannedReceipt?.(outbounds.get(row.id)!);
      return receipt ? [{ messageId: row.id, ...receipt }] : [];
    });
    if (planned.length === 0) return;
    await this.jobs.enqueueSelected(tx, RECEIPT_QUEUE, {
      rows: `SELECT jsonb_build_object('messageId', receipt.id, 'status', receipt.status) AS payload,
                    NULL::text AS concurrency_key, receipt.run_at, 'receipt:' || receipt.id AS dedupe_key
               FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS receipt(id, status, run_at)`,
      params: [
        planned.map((item) => item.messageId),
        planned.map((item) => item.status),
        planned.map((item) => new Date(now.getTime() + item.afterSeconds * 1000).toISOString()),
      ],
      timed: true,
    });
  }

  /** The carrier could not be reached on any attempt: the message fails rather than stay queued forever. */
  async giveUp(messageId: string): Promise<void> {
    const row = await this.store.find(this.db, messageId);
    if (row) {
      await this.finish(row, 'failed', {
        errorCode: 'dispatch_failed',
        errorMessage: 'The message could not be handed to the carrier after repeated attempts',
      });
    }
  }

  private async finish(
    row: MessageRow,
    status: 'failed' | 'cancelled',
    error: { errorCode: string; errorMessage: string },
  ): Promise<void> {
    await this.db.transaction(async (tx) => {
      const updated = await this.store.finishQueued(tx, row.id, status, error, this.clock.now());
      if (updated) this.countMessages(status);
      if (updated && status === 'failed') {
        await this.events.record(tx, MessageFailed, {
          organizationId: updated.organization_id,
          data: toMessage(updated, this.clock.now()),
        });
      }
    });
  }
}

function toCarrierMessage(row: MessageRow): OutboundForCarrier {
  return {
    id: row.id,
    from: row.from_number,
    to: row.to_number,
    body: row.body,
    parts: splitSegments(row.body),
    encoding: encodingFor(row.body),
    mediaUrls: row.media_urls,
    mediaFiles: row.media_files.map(({ contentType, size, filename }) => ({ contentType, size, filename })),
  };
}
