// Delivery receipts: the carrier's later word on a message it accepted. A receipt moves a `sent` message to
// its final status with its event; carriers repeat themselves, so the same receipt twice changes nothing.
import type { ReceiptStatus } from '../../carriers/carrier.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { RECEIPT_EVENTS } from './events.ts';
import { toMessage } from './message.ts';
import type { Message } from './schemas.ts';
import type { MessageStore } from './store.ts';

export class MessageReceipts {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly store: MessageStore;

  constructor(deps: { db: Database; clock: Clock; events: EventOutbox; store: MessageStore }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.events = deps.events;
    this.store = deps.store;
  }

  /**
   * A delivery receipt from the carrier: `sent` becomes delivered, failed or undelivered, with its event.
   * The same receipt twice is harmless; a receipt for a message not (yet) sent, or already final with
   * another status, is a 409.
   */
  async apply(messageId: string, status: ReceiptStatus): Promise<Message> {
    return this.db.transaction(async (tx) => {
      const updated = await this.store.recordReceipt(
        tx,
        messageId,
        status,
        status === 'failed'
          ? { errorCode: 'carrier_failed', errorMessage: 'The carrier reported the message failed' }
          : {
              errorCode: 'carrier_undelivered',
              errorMessage: 'The carrier could not deliver the message to the handset',
            },
        this.clock.now(),
      );
      if (updated) {
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
  }
}
