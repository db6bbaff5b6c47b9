// Delivery receipts: the carrier's later word on a message it accepted. A receipt moves a `sent` message to
// its final status with its event; carriers repeat themselves, so the same receipt twice changes nothing.
import DataLoader from 'dataloader';
import type { ReceiptStatus } from '../../carriers/carrier.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { RECEIPT_EVENTS } from './events.ts';
import { type CountMessages, toMessage } from './message.ts';
import type { Message } from './schemas.ts';
import type { MessageStore } from './store.ts';

/** A receipt's error, kept on the message for a failure; a delivery clears it (MessageStore.recordReceipt). */
const RECEIPT_ERRORS = {
  delivered: { errorCode: '', errorMessage: '' },
  failed: { errorCode: 'carrier_failed', errorMessage: 'The carrier reported the message failed' },
  undelivered: {
    errorCode: 'carrier_undelivered',
    errorMessage: 'The carrier could not deliver the message to the handset',
  },
} as const satisfies Record<ReceiptStatus, { errorCode: string; errorMessage: string }>;

interface QueuedReceipt {
  messageId: string;
  status: ReceiptStatus;
}

/** At most this many receipts in one batch (a claim is a worker's free slots, 16 by default). */
const MAX_BATCH = 100;

export class MessageReceipts {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly store: MessageStore;

  private readonly countMessages: CountMessages;

  constructor(deps: {
    db: Database;
    clock: Clock;
    events: EventOutbox;
    store: MessageStore;
    countMessages?: CountMessages;
  }) {
    this.countMessages = deps.countMessages ?? (() => {});
    this.db = deps.db;
    this.clock = deps.clock;
    this.events = deps.events;
    this.store = deps.store;
    this.batches = new DataLoader((receipts) => this.applyBatch(receipts), {
      cache: false,
      maxBatchSize: MAX_BATCH,
    });
  }

  private readonly batches: DataLoader<QueuedReceipt, void>;

  /**
   * A receipt job (the simulated carrier's planned receipts): applied with the receipts of the jobs started in
   * the same turn of the event loop, in one transaction of a few statements. A receipt that no longer applies
   * (the message is not `sent`) is dropped, as a carrier's duplicate is.
   */
  applyQueued(messageId: string, status: ReceiptStatus): Promise<void> {
    return this.batches.load({ messageId, status });
  }

  private async applyBatch(receipts: readonly QueuedReceipt[]): Promise<undefined[]> {
    const statuses = await this.db.transaction(async (tx) => {
      const now = this.clock.now();
      const updated = await this.store.recordManyReceipts(
        tx,
        receipts.map(({ messageId, status }) => ({ id: messageId, status, ...RECEIPT_ERRORS[status] })),
        now,
      );
      for (const status of Object.keys(RECEIPT_EVENTS) as ReceiptStatus[]) {
        await this.events.recordMany(
          tx,
          RECEIPT_EVENTS[status],
          updated
            .filter((row) => row.status === status)
            .map((row) => ({ organizationId: row.organization_id, data: toMessage(row, now) })),
        );
      }
      return updated.map((row) => row.status);
    });
    for (const status of statuses) this.countMessages(status);
    return receipts.map(() => undefined);
  }

  /**
   * A delivery receipt from the carrier: `sent` becomes delivered, failed or undelivered, with its event.
   * The same receipt twice is harmless; a receipt for a message not (yet) sent, or already final with
   * another status, is a 409.
   */
  async apply(messageId: string, status: ReceiptStatus): Promise<Message> {
    let applied = false;
    const message = await this.db.transaction(async (tx) => {
      const updated = await this.store.recordReceipt(
        tx,
        messageId,
        status,
        RECEIPT_ERRORS[status],
        this.clock.now(),
      );
      if (updated) {
        applied = true;
        await this.events.record(tx, RECEIPT_EVENTS[status], {
          organizationId: updated.organization_id,
          data: toMessage(updated, this.clock.now()),
        });
        return toMessage(updated, this.clock.now());
      }
      const current = await this.store.find(tx, messageId);
      if (current?.direction !== 'outbound') throw ApiError.notFound('Message');
      if (current.status === status) return toMessage(current, this.clock.now());
      throw ApiError.conflict(
        current.status === 'queued'
          ? 'The message has not been handed to the carrier yet; a receipt can only follow a sent message'
          : `The message is already ${current.status}`,
      );
    });
    if (applied) this.countMessages(status);
    return message;
  }
}
