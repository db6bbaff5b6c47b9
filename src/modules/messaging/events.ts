// The events the messaging module emits (CONTRACT section 6). Each carries the message exactly as the API
// shows it (MessageSchema); the catalog's field notes say what a field means in that event.
import { defineEvent } from '../../platform/events.ts';
import { type Message, MessageSchema } from './schemas.ts';

const example = (status: Message['status'], extra: Partial<Message> = {}): Message => ({
  id: 'msg_0mf3k2a9x4q8w7e6r5t4y3u2',
  direction: 'outbound',
  status,
  from: '+12025550100',
  to: '+12025550123',
  body: 'Your order has shipped',
  segments: 1,
  encoding: 'GSM-7',
  mediaCount: 0,
  media: { urls: [], files: [] },
  errorCode: null,
  errorMessage: null,
  sentAt: null,
  deliveredAt: null,
  sendAt: null,
  receiptState: null,
  createdAt: '2026-06-10T12:00:00.000Z',
  updatedAt: '2026-06-10T12:00:00.000Z',
  ...extra,
});
const failure = {
  errorCode: 'Carrier error code, when the carrier gave one',
  errorMessage: 'Human-readable reason',
};

export const MessageSent = defineEvent(
  'message.sent',
  MessageSchema,
  'A message was handed to the carrier.',
  {
    fields: { sentAt: 'When the carrier accepted it' },
    example: example('sent', { sentAt: '2026-06-10T12:00:01.000Z' }),
  },
);

export const MessageDelivered = defineEvent(
  'message.delivered',
  MessageSchema,
  'The carrier reported the message delivered to the handset.',
  {
    fields: { deliveredAt: 'When the receipt said it was delivered' },
    example: example('delivered', { deliveredAt: '2026-06-10T12:00:04.000Z' }),
  },
);

export const MessageFailed = defineEvent(
  'message.failed',
  MessageSchema,
  'The message could not be sent (refused by the carrier before delivery).',
  {
    fields: { ...failure, updatedAt: 'When it failed' },
    example: example('failed', {
      errorCode: '30007',
      errorMessage: 'Carrier filtered the message',
      updatedAt: '2026-06-10T12:00:02.000Z',
    }),
  },
);

export const MessageUndelivered = defineEvent(
  'message.undelivered',
  MessageSchema,
  'The carrier accepted the message but reported it could not be delivered.',
  {
    fields: { ...failure, updatedAt: 'When the receipt said undelivered' },
    example: example('undelivered', {
      errorCode: '30003',
      errorMessage: 'Unreachable handset',
      updatedAt: '2026-06-10T12:05:00.000Z',
    }),
  },
);

export const MessageReceived = defineEvent(
  'message.received',
  MessageSchema,
  'A text arrived at one of your numbers.',
  {
    fields: {
      direction: '`inbound`',
      from: 'Sender, E.164',
      to: 'Your number that received it, E.164',
      status: '`received`',
      createdAt: 'When it arrived',
    },
    example: example('received', {
      direction: 'inbound',
      from: '+12025550123',
      to: '+12025550100',
      body: 'Thanks!',
    }),
  },
);

/** The event of each receipt status. */
export const RECEIPT_EVENTS = {
  delivered: MessageDelivered,
  failed: MessageFailed,
  undelivered: MessageUndelivered,
} as const;

export const MESSAGE_EVENTS = [
  MessageSent,
  MessageDelivered,
  MessageFailed,
  MessageUndelivered,
  MessageReceived,
];
