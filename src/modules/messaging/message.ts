// A stored message as the API and the message events show it. The receipt state is derived from the clock
// at the moment of reading, never stored, so a message moves to "no receipt" without a write.
import type { Message, ReceiptState } from './schemas.ts';
import type { MessageRow, MessageViewRow } from './store.ts';

export const RECEIPT_WAIT_MS = 72 * 60 * 60 * 1000;

/**
 * A `sent` message without a receipt is awaiting its receipt for 72 hours after it was sent, then has none
 * (CONTRACT section 6); every other status has no receipt state.
 */
export function receiptState(row: Pick<MessageRow, 'status' | 'sent_at'>, now: Date): ReceiptState | null {
  if (row.status !== 'sent' || !row.sent_at) return null;
  return now.getTime() - row.sent_at.getTime() < RECEIPT_WAIT_MS ? 'awaiting_receipt' : 'no_receipt';
}

export function toMessage(row: MessageViewRow, now: Date): Message {
  return {
    id: row.id,
    direction: row.direction,
    status: row.status,
    from: row.from_number,
    to: row.to_number,
    body: row.body,
    segments: row.segments,
    encoding: row.encoding,
    mediaCount: row.media_count,
    media: { urls: row.media_urls ?? [], files: row.media_files ?? [] },
    errorCode: row.error_code,
    errorMessage: row.error_message,
    sentAt: row.sent_at?.toISOString() ?? null,
    deliveredAt: row.delivered_at?.toISOString() ?? null,
    sendAt: row.send_at?.toISOString() ?? null,
    receiptState: receiptState(row, now),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.status_updated_at.toISOString(),
  };
}

/** Counts messages reaching a status (comms_messages_total, docs/operations.md); `count` of them at once. */
export type CountMessages = (status: string, count?: number) => void;
