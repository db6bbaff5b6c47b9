// Request and response shapes of webhook management; TypeScript types are Static<> of these.
import { type Static, Type } from 'typebox';

export const MAX_URL_LENGTH = 2048;
export const DISABLED_REASONS = ['manual', 'gone', 'failing'] as const;
export type DisabledReason = (typeof DISABLED_REASONS)[number];
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const nullableString = Type.Union([Type.String(), Type.Null()]);

export const WebhookSchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  description: nullableString,
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([Type.Enum(DISABLED_REASONS), Type.Null()], {
    description: '`manual` (PATCH enabled:false), `gone` (answered 410) or `failing` (failed for 5 days)',
  }),
  disabledAt: nullableString,
  failingSince: Type.Union([Type.String(), Type.Null()], {
    description: 'Start of the current run of failed deliveries; null after any success',
  }),
  previousSecretExpiresAt: Type.Union([Type.String(), Type.Null()], {
    description: 'After a rotation, until when deliveries are also signed with the previous secret',
  }),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type Webhook = Static<typeof WebhookSchema>;

export const WebhookWithSecret = Type.Object({
  ...WebhookSchema.properties,
  secret: Type.String({ description: 'The signing secret (`whsec_…`). Shown in this response only.' }),
});

export const DeliverySchema = Type.Object({
  id: Type.String(),
  endpointId: Type.String(),
  event: Type.Object({ id: Type.String({ description: 'Also the webhook-id header' }), type: Type.String() }),
  status: Type.Enum(DELIVERY_STATUSES),
  attempts: Type.Integer(),
  lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
  lastDurationMs: Type.Union([Type.Integer(), Type.Null()]),
  lastError: nullableString,
  lastResponseExcerpt: nullableString,
  lastAttemptAt: nullableString,
  nextAttemptAt: nullableString,
  payload: Type.Record(Type.String(), Type.Unknown(), {
    description: 'The body sent: {type, timestamp, data}',
  }),
  attemptLog: Type.Array(
    Type.Object({
      attempt: Type.Integer(),
      statusCode: Type.Union([Type.Integer(), Type.Null()]),
      durationMs: Type.Integer(),
      error: nullableString,
      responseExcerpt: nullableString,
      createdAt: Type.String(),
    }),
  ),
  createdAt: Type.String(),
});
export type Delivery = Static<typeof DeliverySchema>;

export const CatalogSchema = Type.Object({
  type: Type.String(),
  description: Type.String(),
  status: Type.Enum(['available', 'coming']),
  fields: Type.Record(Type.String(), Type.String()),
  example: Type.Record(Type.String(), Type.Unknown()),
  schema: Type.Record(Type.String(), Type.Unknown(), { description: 'The JSON Schema of `data`' }),
});

const EventList = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 100,
  description: 'Event types from GET /api/webhooks/events',
});
const Url = Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH });
const Description = Type.Union([Type.String({ maxLength: 500 }), Type.Null()]);
export const WebhookCreate = Type.Object(
  { url: Url, events: EventList, description: Type.Optional(Description) },
  { additionalProperties: false },
);
export type EndpointInput = Static<typeof WebhookCreate>;
export const WebhookPatch = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(EventList),
    description: Type.Optional(Description),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type EndpointPatch = Static<typeof WebhookPatch>;
