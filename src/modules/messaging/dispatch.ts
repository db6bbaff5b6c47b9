// The hand-off to the carrier: a sent message is booked a paced slot and a dispatch job for that moment;
// the job gives it to the carrier and records the answer with its event. A message the carrier cannot be
// reached for, or whose recipient opted out in the meantime, ends here rather than stay queued.
import type { Carrier, OutboundForCarrier } from '../../carriers/carrier.ts';
import type { CarrierPacing, PacedNumber } from '../../carriers/pacing.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { JobQueue } from '../../platform/jobs.ts';
import type { ContactService } from '../contacts/index.ts';
import { MessageFailed, MessageSent } from './events.ts';
import { toMessage } from './message.ts';
import type { MessageRow, MessageStore } from './store.ts';

export const DISPATCH_QUEUE = 'messages.dispatch';
export const RECEIPT_QUEUE = 'messages.receipt';
export const DISPATCH_ATTEMPTS = 8;

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
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.events = deps.events;
    this.contacts = deps.contacts;
    this.carrier = deps.carrier;
    this.pacing = deps.pacing;
    this.store = deps.store;
    this.automaticReceipts = deps.automaticReceipts;
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
  }

  /** The dispatch job: hands a queued message to the carrier and records what it said. Idempotent. */
  async dispatch(messageId: string): Promise<void> {
    const row = await this.store.findForDispatch(this.db, messageId);
    if (row?.status !== 'queued') return;
    // Nothing leaves for a suspended organization (CONTRACT 7), save the confirmations of STOP and HELP that
    // carriers require whatever the account's standing.
    if (row.organization_suspended && row.origin !== 'auto_reply') {
      await this.finish(row, 'cancelled', {
        errorCode: 'ACCOUNT_SUSPENDED',
        errorMessage: 'The account was suspended before the message was sent',
      });
      return;
    }
    // A STOP that arrived after the message was queued still wins (automatic replies excepted: they are
    // the confirmation of that STOP).
    if (row.origin !== 'auto_reply' && (await this.contacts.isOptedOut(row.organization_id, row.to_number))) {
      await this.finish(row, 'cancelled', {
        errorCode: 'RECIPIENT_OPTED_OUT',
        errorMessage: 'The recipient opted out before the message was sent',
      });
      return;
    }
    const outbound = toCarrierMessage(row);
    const result = await this.carrier.send(outbound);
    if (!result.accepted) {
      await this.finish(row, 'failed', { errorCode: result.errorCode, errorMessage: result.errorMessage });
      return;
    }
    await this.db.transaction(async (tx) => {
      const now = this.clock.now();
      const updated = await this.store.markSent(
        tx,
        messageId,
        { name: this.carrier.name, messageId: result.carrierMessageId },
        now,
      );
      if (!updated) return;
      await this.events.record(tx, MessageSent, {
        organizationId: updated.organization_id,
        data: toMessage(updated, this.clock.now()),
      });
      const planned = this.automaticReceipts ? this.carrier.plannedReceipt?.(outbound) : undefined;
      if (planned) {
        await this.jobs.enqueue(
          tx,
          RECEIPT_QUEUE,
          { messageId, status: planned.status },
          { runAt: new Date(now.getTime() + planned.afterSeconds * 1000), dedupeKey: `receipt:${messageId}` },
        );
      }
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
    mediaUrls: row.media_urls,
    mediaFiles: row.media_files.map(({ contentType, size, filename }) => ({ contentType, size, filename })),
  };
}
