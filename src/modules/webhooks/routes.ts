// Webhook management for people (`/api/webhooks`, session token, Shape A; CONTRACT section 5): any member
// may read endpoints, their delivery logs and the event catalog; owners and admins create, change, delete,
// test and redeliver, and rotating a secret needs fresh two-factor verification when 2FA is on. The secret
// appears in the creation and rotation responses only. Another organization's webhook is a 404.
// The developer API lists endpoints at `GET /api/v2/webhooks` (scope webhooks:read, offset or keyset paging).
import { Type } from 'typebox';
import type { App } from '../../app.ts';
import type { AppContext } from '../../context.ts';
import {
  currentSession,
  requireManager,
  requireSession,
  requireStepUp,
} from '../../platform/auth/session-guard.ts';
import { ErrorShapeA, ErrorShapeB, envelope, IdParams } from '../../platform/http/schemas.ts';
import { OffsetPageQuery, PageEnvelope, PageQuery, pageResponse } from '../../platform/pagination.ts';
import { EVENT_CATALOG } from './catalog.ts';

const errors = { 400: ErrorShapeA, 401: ErrorShapeA, 403: ErrorShapeA, 404: ErrorShapeA, 409: ErrorShapeA };
const security: Record<string, string[]>[] = [{ session: [] }, { sessionCookie: [] }];
const tags = ['Webhooks'];
const nullableString = Type.Union([Type.String(), Type.Null()]);

export const WebhookSchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  description: nullableString,
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([Type.Enum(['manual', 'gone', 'failing']), Type.Null()], {
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
const WebhookWithSecret = Type.Object({
  ...WebhookSchema.properties,
  secret: Type.String({ description: 'The signing secret (`whsec_…`). Shown in this response only.' }),
});
const DeliverySchema = Type.Object({
  id: Type.String(),
  endpointId: Type.String(),
  event: Type.Object({ id: Type.String({ description: 'Also the webhook-id header' }), type: Type.String() }),
  status: Type.Enum(['pending', 'succeeded', 'failed']),
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
const CatalogSchema = Type.Object({
  type: Type.String(),
  description: Type.String(),
  status: Type.Enum(['available', 'coming']),
  fields: Type.Record(Type.String(), Type.String()),
  example: Type.Record(Type.String(), Type.Unknown()),
});

const EventList = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 100,
  description: 'Event types from GET /api/webhooks/events',
});
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const Description = Type.Union([Type.String({ maxLength: 500 }), Type.Null()]);
const WebhookCreate = Type.Object(
  { url: Url, events: EventList, description: Type.Optional(Description) },
  { additionalProperties: false },
);
const WebhookPatch = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(EventList),
    description: Type.Optional(Description),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
const DeliveryParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  deliveryId: Type.String({ minLength: 1, maxLength: 100 }),
});

export async function webhookRoutes(app: App, ctx: AppContext) {
  app.addHook('onRequest', requireSession(ctx));
  const manage = { preHandler: [requireManager()] };

  app.get(
    '/events',
    {
      schema: {
        tags,
        summary: 'The event catalog: every type an endpoint may subscribe to, with its payload',
        security,
        response: { 200: envelope(Type.Array(CatalogSchema)), ...errors },
      },
    },
    async () => ({ success: true as const, data: EVENT_CATALOG.map((entry) => ({ ...entry })) }),
  );

  app.get(
    '/',
    {
      schema: {
        tags,
        summary: "List the organization's webhooks, newest first (offset paging; never the secrets)",
        security,
        querystring: OffsetPageQuery,
        response: { 200: PageEnvelope(WebhookSchema), ...errors },
      },
    },
    async (request) =>
      pageResponse(await ctx.webhooks.list(currentSession(request).organizationId, request.query, false)),
  );

  app.post(
    '/',
    {
      ...manage,
      schema: {
        tags,
        summary: 'Create a webhook (owner or admin); the secret is shown in this response only',
        security,
        body: WebhookCreate,
        response: { 201: envelope(WebhookWithSecret), ...errors },
      },
    },
    async (request, reply) => {
      const { endpoint, secret } = await ctx.webhooks.create(
        currentSession(request).organizationId,
        request.body,
      );
      return reply.status(201).send({ success: true, data: { ...endpoint, secret } });
    },
  );

  app.get(
    '/:id',
    {
      schema: {
        tags,
        summary: 'Read a webhook (never its secret)',
        security,
        params: IdParams,
        response: { 200: envelope(WebhookSchema), ...errors },
      },
    },
    async (request) => ({
      success: true as const,
      data: await ctx.webhooks.get(currentSession(request).organizationId, request.params.id),
    }),
  );

  app.patch(
    '/:id',
    {
      ...manage,
      schema: {
        tags,
        summary:
          'Change url, events, description or enabled (owner or admin); enabling clears the failure record',
        security,
        params: IdParams,
        body: WebhookPatch,
        response: { 200: envelope(WebhookSchema), ...errors },
      },
    },
    async (request) => ({
      success: true as const,
      data: await ctx.webhooks.update(
        currentSession(request).organizationId,
        request.params.id,
        request.body,
      ),
    }),
  );

  app.delete(
    '/:id',
    {
      ...manage,
      schema: {
        tags,
        summary: 'Delete a webhook and its delivery log (owner or admin)',
        security,
        params: IdParams,
        response: { 200: envelope(WebhookSchema), ...errors },
      },
    },
    async (request) => ({
      success: true as const,
      data: await ctx.webhooks.remove(currentSession(request).organizationId, request.params.id),
    }),
  );

  app.post(
    '/:id/rotate-secret',
    {
      preHandler: [requireManager(), requireStepUp(ctx)],
      schema: {
        tags,
        summary:
          'Rotate the secret (owner or admin; step-up when 2FA is on). The old secret keeps signing for 24 hours',
        security,
        params: IdParams,
        response: { 200: envelope(WebhookWithSecret), ...errors },
      },
    },
    async (request) => {
      const { endpoint, secret } = await ctx.webhooks.rotateSecret(
        currentSession(request).organizationId,
        request.params.id,
      );
      return { success: true as const, data: { ...endpoint, secret } };
    },
  );

  app.post(
    '/:id/test',
    {
      ...manage,
      schema: {
        tags,
        summary: 'Queue a webhook.test event to this endpoint (owner or admin)',
        security,
        params: IdParams,
        response: { 202: envelope(DeliverySchema), ...errors },
      },
    },
    async (request, reply) => {
      const delivery = await ctx.webhooks.sendTest(currentSession(request).organizationId, request.params.id);
      return reply.status(202).send({ success: true, data: delivery });
    },
  );

  app.get(
    '/:id/deliveries',
    {
      schema: {
        tags,
        summary:
          'Delivery log of a webhook, newest first, with every attempt (offset paging; cursor is ignored)',
        security,
        params: IdParams,
        querystring: OffsetPageQuery,
        response: { 200: PageEnvelope(DeliverySchema), ...errors },
      },
    },
    async (request) =>
      pageResponse(
        await ctx.webhooks.deliveries(
          currentSession(request).organizationId,
          request.params.id,
          request.query,
        ),
      ),
  );

  app.post(
    '/:id/deliveries/:deliveryId/redeliver',
    {
      ...manage,
      schema: {
        tags,
        summary: 'Send a finished delivery again, once (owner or admin)',
        security,
        params: DeliveryParams,
        response: { 202: envelope(DeliverySchema), ...errors },
      },
    },
    async (request, reply) => {
      const delivery = await ctx.webhooks.redeliver(
        currentSession(request).organizationId,
        request.params.id,
        request.params.deliveryId,
      );
      return reply.status(202).send({ success: true, data: delivery });
    },
  );
}

/** `GET /api/v2/webhooks` on the developer API: offset or keyset paging, scope webhooks:read. */
export async function webhookDeveloperRoutes(app: App, ctx: AppContext) {
  app.get(
    '/webhooks',
    {
      config: { scope: 'webhooks:read', rateLimit: 'messaging' },
      schema: {
        tags: ['Developer API'],
        summary: "List the organization's webhooks, newest first (offset or keyset paging)",
        security: [{ apiKey: [] }],
        querystring: PageQuery,
        response: {
          200: PageEnvelope(WebhookSchema),
          400: ErrorShapeB,
          401: ErrorShapeB,
          403: ErrorShapeB,
          429: ErrorShapeB,
        },
      },
    },
    async (request) => pageResponse(await ctx.webhooks.list(request.organization!.id, request.query, true)),
  );
}
