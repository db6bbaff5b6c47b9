// The shapes of messaging, declared once: the API's request and response bodies, the message events' data
// and the TypeScript types (Static<> of these schemas). Each field's description is also what the event
// catalog says of it.
import { type Static, Type } from 'typebox';
import { HourlyReport, LocalClockTime } from '../../platform/http/schemas.ts';

export const MESSAGE_STATUSES = [
  'scheduled',
  'queued',
  'sent',
  'delivered',
  'failed',
  'undelivered',
  'cancelled',
  'received',
] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];
export const DIRECTIONS = ['outbound', 'inbound'] as const;
export type Direction = (typeof DIRECTIONS)[number];
export const RECEIPT_STATES = ['awaiting_receipt', 'no_receipt'] as const;
export type ReceiptState = (typeof RECEIPT_STATES)[number];
export const ENCODINGS = ['GSM-7', 'UCS-2'] as const;

const nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const MessageFileSchema = Type.Object({
  id: Type.String(),
  contentType: Type.String(),
  size: Type.Integer(),
  filename: Type.Union([Type.String(), Type.Null()]),
});

/** A message as GET /api/v2/messages/{id} returns it, and as every message event carries it. */
export const MessageSchema = Type.Object({
  id: Type.String({ description: 'Message id (msg_…)' }),
  direction: Type.Enum(DIRECTIONS, { description: '`outbound` or `inbound`' }),
  status: Type.Enum(MESSAGE_STATUSES, { description: 'Message status after this event' }),
  from: Type.String({ description: 'Sending number, E.164' }),
  to: Type.String({ description: 'Recipient number, E.164' }),
  body: Type.String({ description: 'Text of the message (null for media only)' }),
  segments: Type.Integer({ description: 'SMS segments billed' }),
  encoding: Type.Enum(ENCODINGS, { description: '`GSM-7` or `UCS-2`' }),
  mediaCount: Type.Integer({ description: 'Number of MMS media parts' }),
  media: Type.Object(
    { urls: Type.Array(Type.String()), files: Type.Array(MessageFileSchema) },
    { description: 'Hosted media URLs and uploaded files (`{urls, files}`)' },
  ),
  errorCode: nullable('Carrier error code, or null'),
  errorMessage: nullable('Why it failed, or null'),
  sentAt: nullable('When the carrier accepted it, or null'),
  deliveredAt: nullable('When the receipt said delivered, or null'),
  sendAt: nullable(
    'When a scheduled message is (or was) due to leave (`sendAt` of the send, moved by its quiet hours); null for a message sent at once',
  ),
  receiptState: Type.Union([Type.Enum(RECEIPT_STATES), Type.Null()], {
    description:
      '`awaiting_receipt` or `no_receipt` while a sent message has no receipt (72-hour rule), else null',
  }),
  createdAt: Type.String({ description: 'When the message was created' }),
  updatedAt: Type.String({ description: 'When its status last changed' }),
});
export type Message = Static<typeof MessageSchema>;

/** A send's own quiet hours: a campaign's `quietHours` shape and meaning, but off unless given. */
export const MessageQuietHours = Type.Union(
  [
    Type.Object(
      { start: LocalClockTime, end: LocalClockTime },
      {
        additionalProperties: false,
        description: "The recipient's local sending window; a message due outside it waits for it to open",
      },
    ),
    Type.Null(),
  ],
  {
    description:
      "Quiet hours in the recipient's local time (its contact's time zone, else its number's, else UTC); " +
      'absent or null: none',
  },
);

// media and mediaFiles are checked by validateMedia, which answers with the spec's media codes; a schema
// here would turn them into a code-less 400.
export const SendBody = Type.Object(
  {
    to: Type.String({ minLength: 1, maxLength: 40, description: 'Recipient, E.164 or national' }),
    message: Type.Optional(
      Type.String({ maxLength: 10_000, description: 'Text; may use merge variables such as {{first_name}}' }),
    ),
    from: Type.Optional(
      Type.String({ maxLength: 40, description: "One of the organization's numbers; default: its default" }),
    ),
    media: Type.Optional(Type.Unknown({ description: 'Hosted media URLs (array of strings)' })),
    mediaFiles: Type.Optional(
      Type.Unknown({ description: 'Uploads: array of {contentType, data (base64), filename?}' }),
    ),
    sendAt: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 40,
        description: 'Schedule the message: an ISO 8601 instant 15 minutes to 35 days ahead',
      }),
    ),
    quietHours: Type.Optional(MessageQuietHours),
    trackLinks: Type.Optional(
      Type.Boolean({
        description:
          'Replace the http(s) links of the text with tracked short links (PUBLIC_URL/l/{code}); clicks send link.clicked. Default false',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SendInput = Static<typeof SendBody>;

/**
 * The 202 body's `data` (CONTRACT section 6), exactly these fields; a scheduled message (CONTRACT section 14)
 * also has `sendAt`, and only it.
 */
export const SendResultSchema = Type.Object({
  id: Type.String(),
  status: Type.Union([Type.Literal('queued'), Type.Literal('scheduled')]),
  from: Type.String(),
  to: Type.String(),
  body: Type.String(),
  segments: Type.Integer(),
  encoding: Type.Enum(ENCODINGS),
  mediaCount: Type.Integer(),
  createdAt: Type.String(),
  sendAt: Type.Optional(Type.String({ description: 'When a scheduled message is due to leave' })),
});
export type SendResult = Static<typeof SendResultSchema>;

export const SegmentsSchema = Type.Object({
  segments: Type.Integer(),
  encoding: Type.Enum(ENCODINGS),
  characters: Type.Integer(),
});

/** Counts of an organization's messages created in a window (GET /messages/stats). */
export const MessageStatsSchema = Type.Object({
  since: Type.String({ format: 'date-time', description: 'Start of the window (inclusive)' }),
  until: Type.String({ format: 'date-time', description: 'End of the window (exclusive)' }),
  outbound: Type.Object({
    total: Type.Integer(),
    queued: Type.Integer(),
    sent: Type.Integer({ description: 'Sent, receipt not yet in' }),
    delivered: Type.Integer(),
    failed: Type.Integer(),
    undelivered: Type.Integer(),
    cancelled: Type.Integer(),
  }),
  inbound: Type.Object({ total: Type.Integer() }),
  deliveryRate: Type.Union([Type.Number(), Type.Null()], {
    description: 'delivered / (delivered + failed + undelivered); null while none of those is known',
  }),
});
export type MessageStats = Static<typeof MessageStatsSchema>;

/** Messages created in each hour of a window (GET /messages/stats/hourly): the dashboard's charts. */
export const MessageHourlySchema = HourlyReport(
  Type.Object({
    outbound: Type.Integer({
      description: 'Outbound messages created in the hour (scheduled ones once they left)',
    }),
    inbound: Type.Integer(),
    delivered: Type.Integer({ description: 'Of the outbound, those delivered so far' }),
    failed: Type.Integer({ description: 'Of the outbound, those failed or undelivered so far' }),
  }),
);
export type MessageHourly = Static<typeof MessageHourlySchema>;
