// Messaging over HTTP: send, count segments, and message history. The same routes serve two surfaces: the
// developer API (`/api/v2`, API key, Shape B) and its portal twin the web console uses (`/v2/portal`,
// session, Shape A). Handlers parse and answer; the rules are in MessagingService.
import type { FastifyContextConfig, FastifyReply, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import type { App } from '../../app.ts';
import type { AppContext } from '../../context.ts';
import { currentSession, requireSession } from '../../platform/auth/session-guard.ts';
import { ApiError } from '../../platform/errors.ts';
import { ErrorShapeA, ErrorShapeB, envelope, IdParams } from '../../platform/http/schemas.ts';
import { PageEnvelope, PageQuery, pageResponse } from '../../platform/pagination.ts';
import { rateLimitHeaders } from '../../platform/rate-limit.ts';
import { SEND_RATE_RULE } from '../api-keys/guard.ts';
import type { Organization } from '../organizations/service.ts';
import { DIRECTIONS, MESSAGE_STATUSES, RECEIPT_STATES } from './service.ts';

const tags = ['Messages'];

/** Who calls and how: what differs between the developer API and the portal. */
export interface MessageSurface {
  name: 'api' | 'portal';
  security: Record<string, string[]>[];
  errorSchema: TSchema;
  /** `count` is the segment counter: it needs the send scope but sends nothing, so no send is counted. */
  config(access: 'send' | 'count' | 'read'): FastifyContextConfig;
  organization(request: FastifyRequest): Promise<Organization>;
  /** Extra admission for a send (the portal's share of the 30 sends per minute). */
  beforeSend?(request: FastifyRequest, reply: FastifyReply, organization: Organization): Promise<void>;
}

/** The developer API: the API-key guard has already authenticated, limited and scoped the request. */
export const developerMessageSurface: MessageSurface = {
  name: 'api',
  security: [{ apiKey: [] }],
  errorSchema: ErrorShapeB,
  config: (access) =>
    access === 'read'
      ? { scope: 'messages:read', rateLimit: 'messaging' }
      : { scope: 'messages:send', rateLimit: 'messaging', sendLimit: access === 'send' },
  organization: async (request) => request.organization!,
};

/**
 * The portal twin: any member of the organization may send and read (sending is using the product, not
 * managing it). It shares the organization's 30 sends per minute with the developer API.
 */
export function portalMessageSurface(ctx: AppContext): MessageSurface {
  return {
    name: 'portal',
    security: [{ session: [] }, { sessionCookie: [] }],
    errorSchema: ErrorShapeA,
    config: () => ({}),
    organization: (request) => ctx.organizations.get(currentSession(request).organizationId),
    beforeSend: async (_request, reply, organization) => {
      const state = await ctx.rateLimiter.consume(SEND_RATE_RULE, organization.id);
      reply.headers(rateLimitHeaders(state));
      if (!state.allowed) {
        throw new ApiError(429, `Rate limit of ${state.limit} sends per minute exceeded`, {
          code: 'RATE_LIMITED',
          headers: { ...rateLimitHeaders(state), 'Retry-After': String(state.resetSeconds) },
        });
      }
    },
  };
}

/** Mounts the portal twin on a `/v2/portal` scope, behind the session guard. */
export async function portalMessageRoutes(app: App, ctx: AppContext) {
  // onRequest, so an unauthenticated request is a 401 whatever its body.
  app.addHook('onRequest', requireSession(ctx));
  await messageRoutes(app, ctx, portalMessageSurface(ctx));
}

// media and mediaFiles are checked by validateMedia, which answers with the spec's media codes; a schema
// here would turn them into a code-less 400.
const SendBody = Type.Object(
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
  },
  { additionalProperties: false },
);

const SendResultSchema = Type.Object({
  id: Type.String(),
  status: Type.Literal('queued'),
  from: Type.String(),
  to: Type.String(),
  body: Type.String(),
  segments: Type.Integer(),
  encoding: Type.Enum(['GSM-7', 'UCS-2']),
  mediaCount: Type.Integer(),
  createdAt: Type.String(),
});

export const MessageSchema = Type.Object({
  id: Type.String(),
  direction: Type.Enum(DIRECTIONS),
  status: Type.Enum(MESSAGE_STATUSES),
  from: Type.String(),
  to: Type.String(),
  body: Type.String(),
  segments: Type.Integer(),
  encoding: Type.Enum(['GSM-7', 'UCS-2']),
  mediaCount: Type.Integer(),
  media: Type.Object({
    urls: Type.Array(Type.String()),
    files: Type.Array(
      Type.Object({
        id: Type.String(),
        contentType: Type.String(),
        size: Type.Integer(),
        filename: Type.Union([Type.String(), Type.Null()]),
      }),
    ),
  }),
  errorCode: Type.Union([Type.String(), Type.Null()]),
  errorMessage: Type.Union([Type.String(), Type.Null()]),
  sentAt: Type.Union([Type.String(), Type.Null()]),
  deliveredAt: Type.Union([Type.String(), Type.Null()]),
  receiptState: Type.Union([Type.Enum(RECEIPT_STATES), Type.Null()], {
    description: 'Only for sent messages: awaiting_receipt for 72 hours after sending, then no_receipt',
  }),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Same key and body within 24 hours: the same answer and no second message',
    }),
  ),
});

export async function messageRoutes(app: App, ctx: AppContext, surface: MessageSurface) {
  const errors = Object.fromEntries(
    [400, 401, 402, 403, 404, 409, 422, 429, 503].map((status) => [status, surface.errorSchema]),
  );
  const security = surface.security;
  app.post(
    '/messages/send',
    {
      config: surface.config('send'),
      bodyLimit: 8 * 1024 * 1024,
      schema: {
        tags,
        summary: 'Send an SMS or MMS',
        description:
          'Queues one message (202). Refusals: 400 invalid `to`/`from`/body or a media code, 403 ' +
          'RECIPIENT_OPTED_OUT, 422 UNSUPPORTED_MERGE_VARS or IDEMPOTENCY_KEY_REUSED, and the SMS plan limits ' +
          '(429 PAID_LIMIT_REACHED / TRIAL_LIMIT_REACHED, 402 CAPABILITY_RESTRICTED_BY_STATE, 403 ' +
          'CARD_NOT_VERIFIED, 503 when a limit cannot be checked).',
        security,
        headers: IdempotencyHeaders,
        body: SendBody,
        response: { 202: envelope(SendResultSchema), ...errors },
      },
    },
    async (request, reply) => {
      const organization = await surface.organization(request);
      await surface.beforeSend?.(request, reply, organization);
      const key = request.headers['idempotency-key'];
      const { result, replayed } = await ctx.messages.send(organization, request.body, surface.name, key);
      if (replayed) reply.header('Idempotent-Replayed', 'true');
      return reply.status(202).send({ success: true, data: result });
    },
  );

  app.post(
    '/messages/segments',
    {
      config: surface.config('count'),
      schema: {
        tags,
        summary: 'Count the segments a text would cost, without sending',
        security,
        body: Type.Object({ message: Type.String({ maxLength: 10_000 }) }, { additionalProperties: false }),
        response: {
          200: envelope(
            Type.Object({
              segments: Type.Integer(),
              encoding: Type.Enum(['GSM-7', 'UCS-2']),
              characters: Type.Integer(),
            }),
          ),
          ...errors,
        },
      },
    },
    async (request) => {
      await surface.organization(request);
      return { success: true as const, data: ctx.messages.segments(request.body.message) };
    },
  );

  app.get(
    '/messages',
    {
      config: surface.config('read'),
      schema: {
        tags,
        summary: 'Message history, newest first (offset or keyset paging)',
        security,
        querystring: Type.Object({
          ...PageQuery.properties,
          direction: Type.Optional(Type.Enum(DIRECTIONS)),
          status: Type.Optional(Type.Enum(MESSAGE_STATUSES)),
          number: Type.Optional(
            Type.String({ maxLength: 40, description: 'Messages from or to this number (E.164)' }),
          ),
          since: Type.Optional(Type.String({ maxLength: 40, description: 'Created at or after (ISO 8601)' })),
          until: Type.Optional(Type.String({ maxLength: 40, description: 'Created before (ISO 8601)' })),
        }),
        response: { 200: PageEnvelope(MessageSchema), ...errors },
      },
    },
    async (request) => {
      const organization = await surface.organization(request);
      return pageResponse(
        await ctx.messages.list(organization.id, request.query, surface.name, organization.region),
      );
    },
  );

  app.get(
    '/messages/:id',
    {
      config: surface.config('read'),
      schema: {
        tags,
        summary: 'Read a message',
        security,
        params: IdParams,
        response: { 200: envelope(MessageSchema), ...errors },
      },
    },
    async (request) => {
      const organization = await surface.organization(request);
      return { success: true as const, data: await ctx.messages.get(organization.id, request.params.id) };
    },
  );
}

/** The simulated carrier's test controls (operator API, APP_ENV=test only). */
export async function carrierTestRoutes(app: App, ctx: AppContext, errorSchema: TSchema) {
  const responses = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema };
  app.post(
    '/test/carrier/receipts',
    {
      schema: {
        tags: ['Operator (test only)'],
        summary: 'The simulated carrier reports a delivery receipt (APP_ENV=test only)',
        security: [{ admin: [] }],
        body: Type.Object(
          {
            messageId: Type.String({ minLength: 1, maxLength: 100 }),
            status: Type.Enum(['delivered', 'failed', 'undelivered']),
          },
          { additionalProperties: false },
        ),
        response: { 200: envelope(MessageSchema), ...responses },
      },
    },
    async (request) => ({
      success: true as const,
      data: await ctx.messages.applyReceipt(request.body.messageId, request.body.status),
    }),
  );

  app.post(
    '/test/carrier/inbound',
    {
      schema: {
        tags: ['Operator (test only)'],
        summary: 'A text arrives at one of our numbers (APP_ENV=test only)',
        security: [{ admin: [] }],
        body: Type.Object(
          {
            from: Type.String({ minLength: 1, maxLength: 40 }),
            to: Type.String({ minLength: 1, maxLength: 40 }),
            text: Type.String({ maxLength: 10_000 }),
          },
          { additionalProperties: false },
        ),
        response: {
          201: envelope(
            Type.Object({
              message: MessageSchema,
              keyword: Type.Union([Type.Enum(['stop', 'start', 'help']), Type.Null()]),
              reply: Type.Union([MessageSchema, Type.Null()]),
            }),
          ),
          ...responses,
        },
      },
    },
    async (request, reply) => {
      return reply.status(201).send({ success: true, data: await ctx.messages.receiveInbound(request.body) });
    },
  );
}
