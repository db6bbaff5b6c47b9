// The campaign records the API shows (CONTRACT section 8). List rows carry `delivery_stats` in snake_case and
// the detail `deliveryStats` in camelCase, as the spec's "Campaign delivery statistics" table names them.
import { type Static, Type } from 'typebox';
import { LocalClockTime } from '../../platform/http/schemas.ts';
import { RETRY_INCLUDES } from './follow-up-store.ts';

export const CAMPAIGN_STATUSES = [
  'draft',
  'scheduled',
  'sending',
  'paused',
  'completed',
  'cancelled',
] as const;

export const QuietHours = Type.Union(
  [
    Type.Object(
      { start: LocalClockTime, end: LocalClockTime },
      {
        additionalProperties: false,
        description: 'The local sending window; messages due outside it wait for it to open',
      },
    ),
    Type.Null(),
  ],
  { description: "Default 08:00 to 21:00 in each recipient's local time; null turns quiet hours off" },
);

const Phone = Type.String({ minLength: 1, maxLength: 40 });
const MediaUrls = Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { maxItems: 10 });

export const CampaignCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    message: Type.String({ maxLength: 1600 }),
    contactListIds: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      minItems: 1,
      maxItems: 50,
    }),
    senders: Type.Optional(Type.Array(Phone, { minItems: 1, maxItems: 100 })),
    mediaUrls: Type.Optional(MediaUrls),
    scheduledAt: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
    timezone: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'IANA name; default UTC' }),
    ),
    quietHours: Type.Optional(QuietHours),
    trackLinks: Type.Optional(
      Type.Boolean({
        description:
          'Replace the http(s) links of each message with a tracked short link (PUBLIC_URL/l/{code}) and count clicks; default false',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CampaignCreateInput = Static<typeof CampaignCreate>;

export const CampaignRetry = Type.Object(
  {
    include: Type.Optional(
      Type.Array(Type.Enum(RETRY_INCLUDES), {
        minItems: 1,
        maxItems: RETRY_INCLUDES.length,
        uniqueItems: true,
        description:
          'Whose messages to follow up: failed, undelivered (the default: both), and no_receipt (sent, and no receipt after 72 hours)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CampaignRetryInput = Static<typeof CampaignRetry>;

export const CampaignUpdate = Type.Partial(CampaignCreate, { additionalProperties: false, minProperties: 1 });
export type CampaignUpdateInput = Static<typeof CampaignUpdate>;

const Rate = Type.Union([Type.Number(), Type.Null()]);

export const DeliveryStatsSnake = Type.Object({
  attempted: Type.Integer(),
  delivered: Type.Integer(),
  failed: Type.Integer(),
  undelivered: Type.Integer(),
  failed_total: Type.Integer(),
  awaiting: Type.Integer(),
  no_receipt: Type.Integer(),
  delivery_rate: Rate,
  failure_rate: Rate,
  provisional: Type.Boolean(),
});

export const DeliveryStats = Type.Object({
  attempted: Type.Integer(),
  delivered: Type.Integer(),
  failed: Type.Integer(),
  undelivered: Type.Integer(),
  failedTotal: Type.Integer(),
  awaiting: Type.Integer(),
  noReceipt: Type.Integer(),
  deliveryRate: Rate,
  failureRate: Rate,
  provisional: Type.Boolean(),
});
export type DeliveryStatsValue = Static<typeof DeliveryStats>;

const CampaignFields = {
  id: Type.String(),
  name: Type.String(),
  message: Type.String(),
  mediaUrls: Type.Array(Type.String()),
  contactListIds: Type.Array(Type.String()),
  senders: Type.Array(Type.String()),
  timezone: Type.String(),
  quietHours: Type.Union([Type.Object({ start: Type.String(), end: Type.String() }), Type.Null()]),
  trackLinks: Type.Boolean({ description: 'Links in its messages are tracked short links' }),
  status: Type.Enum(CAMPAIGN_STATUSES),
  pausedReason: Type.Union([Type.String(), Type.Null()], {
    description: 'The code of the limit that paused the campaign by itself; null when a person paused it',
  }),
  waitingUntil: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'While a daily or new-account limit holds the campaign, when sending goes on',
  }),
  scheduledAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  recipientCount: Type.Integer({ description: 'Recipients snapshotted at launch, skipped ones included' }),
  launchedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  startedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  completedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  cancelledAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  parentCampaignId: Type.Union([Type.String(), Type.Null()], {
    description: 'The campaign this follow-up was made from (POST /campaigns/{id}/retry); null otherwise',
  }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  messages_sent: Type.Integer({ description: 'Messages handed to the carrier' }),
  messages_delivered: Type.Integer(),
  messages_failed: Type.Integer({ description: 'failed + undelivered' }),
  message_count: Type.Integer({ description: 'Messages made so far' }),
  deliveryRate: Type.Union([Type.Number(), Type.Null()], { description: 'delivered / attempted' }),
  failureRate: Type.Union([Type.Number(), Type.Null()], { description: 'failed_total / attempted' }),
};

export const CampaignSchema = Type.Object({
  ...CampaignFields,
  deliveryStats: Type.Optional(DeliveryStats),
});
export type Campaign = Static<typeof CampaignSchema>;

export const CampaignListItemSchema = Type.Object({
  ...CampaignFields,
  delivery_stats: Type.Optional(DeliveryStatsSnake),
});
export type CampaignListItem = Static<typeof CampaignListItemSchema>;

const since = { description: 'Since API version 2026-09-01' };
export const CampaignAnalyticsSchema = Type.Object({
  attempted: Type.Optional(Type.Integer(since)),
  delivered: Type.Integer(),
  failed: Type.Integer(),
  undelivered: Type.Integer(),
  failedTotal: Type.Integer(),
  awaiting: Type.Optional(Type.Integer(since)),
  noReceipt: Type.Optional(Type.Integer(since)),
  provisional: Type.Optional(Type.Boolean(since)),
  deliveryRate: Rate,
  failureRate: Rate,
  queued: Type.Integer(),
  cancelled: Type.Integer(),
  skipped: Type.Integer(),
  optOuts: Type.Integer({
    description: 'Recipients who texted STOP within 72 hours of their campaign message',
  }),
  segments: Type.Integer(),
  clicks: Type.Integer({
    description: 'Clicks on its tracked links (HEAD requests and link unfurlers excluded)',
  }),
  uniqueClicks: Type.Integer({ description: 'Recipients who clicked at least once' }),
  clickRate: Type.Union([Type.Number(), Type.Null()], {
    description: 'uniqueClicks / messages handed to the carrier (one per recipient sent to); null while none',
  }),
});
export type CampaignAnalytics = Static<typeof CampaignAnalyticsSchema>;

export const CampaignRecipientSchema = Type.Object({
  phone: Type.String(),
  contactId: Type.Union([Type.String(), Type.Null()]),
  sender: Type.Union([Type.String(), Type.Null()]),
  status: Type.String({
    description:
      "pending (no message yet), skipped (opted out at launch), cancelled, or its message's status",
  }),
  messageId: Type.Union([Type.String(), Type.Null()]),
  errorCode: Type.Union([Type.String(), Type.Null()]),
  errorMessage: Type.Union([Type.String(), Type.Null()]),
  notBefore: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'A pending recipient waiting for its quiet hours to end: when its message may be made',
  }),
});
export type CampaignRecipient = Static<typeof CampaignRecipientSchema>;

export const CampaignClickSchema = Type.Object({
  recipientPhone: Type.String({ description: 'Who clicked: the phone the message was sent to' }),
  url: Type.String({ description: 'The original URL the click was redirected to' }),
  at: Type.String({ format: 'date-time' }),
  userAgent: Type.Union([Type.String(), Type.Null()]),
});
