// Messaging over HTTP: send, count segments, and message history, written once and mounted on the developer
// API (`/api/v2`, API key, Shape B) and its portal twin the web console uses (`/v2/portal`, session,
// Shape A). Any member of the organization may send and read on the portal (sending is using the product,
// not managing it); both interfaces share the organization's 30 sends per minute (`sendLimit`).
// Handlers parse and answer; the rules are in MessagingService.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../platform/http/caller.ts';
import { IdempotencyKeyHeader } from '../../platform/http/idempotent-writes.ts';
import { envelope, HourlyQuery, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { PageEnvelope, PageQuery, pageResponse } from '../../platform/pagination.ts';
import { organizationsModule } from '../organizations/index.ts';
import { STATS_MAX_DAYS } from './history.ts';
import {
  DIRECTIONS,
  MESSAGE_STATUSES,
  MessageHourlySchema,
  MessageSchema,
  MessageStatsSchema,
  SegmentsSchema,
  SendBody,
  SendResultSchema,
} from './schemas.ts';
import type { MessagingServices } from './service.ts';

const tags = ['Messages'];
/** The messaging product counts per organization on the developer API (CONTRACT section 6). */
const send = {
  scope: 'messages:send',
  rateLimit: 'messaging',
  sendLimit: true,
  product: 'messaging',
} as const;
/** The segment counter needs the send scope but sends nothing, so it spends no send. */
const count = { scope: 'messages:send', rateLimit: 'messaging', product: 'messaging' } as const;
const read = { scope: 'messages:read', rateLimit: 'messaging', product: 'messaging' } as const;
/** Cancelling a scheduled message is part of sending it; it spends no send. */
const cancel = { scope: 'messages:send', rateLimit: 'messaging', product: 'messaging' } as const;

const IdempotencyHeaders = Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKeyHeader) });

export const messageRoutes: ModuleRoutes<MessagingServices> =
  ({ messages }, _platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);

    app.post(
      '/messages/send',
      {
        // The key is stored in the send's own transaction (Idempotency.run): a message exists exactly when its
        // key does, and a concurrent twin waits for the first and answers as it did.
        config: { ...send, idempotency: 'transaction', errorStatuses: [402, 422, 503] },
        bodyLimit: 8 * 1024 * 1024,
        schema: {
          operationId: 'messages.send',
          tags,
          summary: 'Send an SMS or MMS',
          description:
            'Queues one message (202), or with `sendAt` (15 minutes to 35 days ahead) schedules it (202, status ' +
            '`scheduled`, with `sendAt`; plan limits and opt-outs are checked when it leaves). Refusals: 400 invalid `to`/`from`/body or a media code, 403 ' +
            'RECIPIENT_OPTED_OUT, 422 UNSUPPORTED_MERGE_VARS or IDEMPOTENCY_KEY_REUSED, and the SMS plan limits ' +
            '(429 PAID_LIMIT_REACHED / TRIAL_LIMIT_REACHED, 402 CAPABILITY_RESTRICTED_BY_STATE, 403 ' +
            'CARD_NOT_VERIFIED, 503 when a limit cannot be checked).',
          headers: IdempotencyHeaders,
          body: SendBody,
          response: { 202: envelope(SendResultSchema) },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request);
        const organization = await organizations.ofCaller(caller);
        const key = request.headers['idempotency-key'];
        const origin = caller.interface === 'developer' ? 'api' : 'portal';
        const { result, replayed } = await messages.send(organization, request.body, origin, key);
        if (replayed) reply.header('Idempotent-Replayed', 'true');
        return reply.status(202).send({ success: true, data: result });
      },
    );

    app.post(
      '/messages/segments',
      {
        config: count,
        schema: {
          operationId: 'messages.segments',
          tags,
          summary: 'Count the segments a text would cost, without sending',
          body: Type.Object({ message: Type.String({ maxLength: 10_000 }) }, { additionalProperties: false }),
          response: { 200: envelope(SegmentsSchema) },
        },
      },
      async (request) => ({ success: true as const, data: messages.segments(request.body.message) }),
    );

    app.get(
      '/messages',
      {
        config: read,
        schema: {
          operationId: 'messages.list',
          tags,
          summary: 'Message history, newest first (offset or keyset paging)',
          querystring: Type.Object({
            ...PageQuery.properties,
            direction: Type.Optional(Type.Enum(DIRECTIONS)),
            status: Type.Optional(Type.Enum(MESSAGE_STATUSES)),
            number: Type.Optional(
              Type.String({ maxLength: 40, description: 'Messages from or to this number (E.164)' }),
            ),
            since: Type.Optional(
              Type.String({ maxLength: 40, description: 'Created at or after (ISO 8601)' }),
            ),
            until: Type.Optional(Type.String({ maxLength: 40, description: 'Created before (ISO 8601)' })),
          }),
          response: { 200: PageEnvelope(MessageSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await messages.list(caller.organizationId, request.query, cursorScope(caller), caller.region),
        );
      },
    );

    app.get(
      '/messages/stats',
      {
        config: read,
        schema: {
          operationId: 'messages.stats',
          tags,
          summary: 'Counts of messages created in a window (default: the last 24 hours), by status',
          description:
            'Outbound messages by status and inbound in all, created at or after `since` and before `until` ' +
            '(at most 31 days apart), with the delivery rate of those whose fate is known.',
          querystring: Type.Object({
            since: Type.Optional(Type.String({ maxLength: 40, description: 'Start, inclusive (ISO 8601)' })),
            until: Type.Optional(
              Type.String({ maxLength: 40, description: 'End, exclusive (ISO 8601); default now' }),
            ),
          }),
          response: { 200: envelope(MessageStatsSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await messages.stats(callerOf(request).organizationId, request.query),
      }),
    );

    app.get(
      '/messages/stats/hourly',
      {
        config: read,
        schema: {
          operationId: 'messages.hourly',
          tags,
          summary: 'Messages created in each hour of a window (default: the last 24 hours)',
          description:
            'Outbound (with how many of them were delivered or failed so far) and inbound messages, one bucket ' +
            'per hour from `since` (at most 31 days before `until`): what a dashboard charts.',
          querystring: HourlyQuery(STATS_MAX_DAYS),
          response: { 200: envelope(MessageHourlySchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await messages.hourly(callerOf(request).organizationId, request.query),
      }),
    );

    app.get(
      '/messages/:id',
      {
        config: read,
        schema: {
          operationId: 'messages.get',
          tags,
          summary: 'Read a message',
          params: IdParams,
          response: { 200: envelope(MessageSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await messages.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.delete(
      '/messages/:id',
      {
        config: { ...cancel, errorStatuses: [409] },
        schema: {
          operationId: 'messages.cancel',
          tags,
          summary: 'Cancel a scheduled message',
          description:
            'A `scheduled` message becomes `cancelled` and is never sent (200 with the message). Once it has ' +
            'left the schedule (queued, sent or ended): 409 MESSAGE_NOT_SCHEDULED.',
          params: IdParams,
          response: { 200: envelope(MessageSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await messages.cancel(callerOf(request).organizationId, request.params.id),
      }),
    );
  };

/** The simulated carrier's test controls (operator API, APP_ENV=test only). */
export const carrierTestControls: ModuleRoutes<MessagingServices> =
  ({ messages }) =>
  async (app: App) => {
    app.post(
      '/test/carrier/receipts',
      {
        config: { errorStatuses: [409] },
        schema: {
          operationId: 'test.carrier.receipt',
          tags: ['Test controls'],
          summary: 'The simulated carrier reports a delivery receipt (APP_ENV=test only)',
          body: Type.Object(
            {
              messageId: Type.String({ minLength: 1, maxLength: 100 }),
              status: Type.Enum(['delivered', 'failed', 'undelivered']),
            },
            { additionalProperties: false },
          ),
          response: { 200: envelope(MessageSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await messages.applyReceipt(request.body.messageId, request.body.status),
      }),
    );

    app.post(
      '/test/carrier/inbound',
      {
        config: { errorStatuses: [409] },
        schema: {
          operationId: 'test.carrier.inbound',
          tags: ['Test controls'],
          summary: 'A text arrives at one of our numbers (APP_ENV=test only)',
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
          },
        },
      },
      async (request, reply) =>
        reply.status(201).send({ success: true, data: await messages.receiveInbound(request.body) }),
    );
  };
