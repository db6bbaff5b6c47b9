// Conversations over HTTP (CONTRACT section 14), written once and mounted on the developer API (`/api/v2`,
// scopes conversations:read / conversations:write, Shape B) and its portal twin (`/v2/portal`, any member:
// answering customers is the daily work of the product, Shape A). A reply is a send: it also counts against
// the organization's 30 sends per minute and answers every refusal a send answers.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../platform/http/caller.ts';
import { IdempotencyKeyHeader } from '../../platform/http/idempotent-writes.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { PageEnvelope, PageQuery, pageResponse } from '../../platform/pagination.ts';
import { SendResultSchema } from '../messaging/index.ts';
import { organizationsModule } from '../organizations/index.ts';
import {
  ConversationFilters,
  ConversationSchema,
  ReplyBody,
  TimelineItemSchema,
  UpdateBody,
} from './schemas.ts';
import type { ConversationServices } from './service.ts';

const tags = ['Conversations'];
const read = { scope: 'conversations:read', rateLimit: 'messaging', product: 'messaging' } as const;
const write = { scope: 'conversations:write', rateLimit: 'messaging', product: 'messaging' } as const;

export const conversationRoutes: ModuleRoutes<ConversationServices> =
  ({ conversations }, _platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);

    app.get(
      '/conversations',
      {
        config: read,
        schema: {
          operationId: 'conversations.list',
          tags,
          summary: 'Conversations, newest activity first (offset or keyset paging)',
          querystring: Type.Object({ ...PageQuery.properties, ...ConversationFilters.properties }),
          response: { 200: PageEnvelope(ConversationSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await conversations.list(caller.organizationId, request.query, cursorScope(caller), caller.region),
        );
      },
    );

    app.get(
      '/conversations/:id',
      {
        config: read,
        schema: {
          operationId: 'conversations.get',
          tags,
          summary: 'Read a conversation',
          params: IdParams,
          response: { 200: envelope(ConversationSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await conversations.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.get(
      '/conversations/:id/timeline',
      {
        config: read,
        schema: {
          operationId: 'conversations.timeline',
          tags,
          summary: "A conversation's texts, calls, voicemails and agent calls, newest first",
          params: IdParams,
          querystring: PageQuery,
          response: { 200: PageEnvelope(TimelineItemSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await conversations.timeline(
            caller.organizationId,
            request.params.id,
            request.query,
            cursorScope(caller),
          ),
        );
      },
    );

    app.post(
      '/conversations/:id/messages',
      {
        config: { ...write, sendLimit: true, idempotency: 'transaction', errorStatuses: [402, 422, 503] },
        bodyLimit: 8 * 1024 * 1024,
        schema: {
          operationId: 'conversations.reply',
          tags,
          summary: 'Reply in a conversation (a send from its number to its phone)',
          description:
            'Queues one message (202) with the rules, limits and refusals of POST /messages/send: 400 an ' +
            'empty reply or a media code, 403 RECIPIENT_OPTED_OUT once the phone texted STOP, 422 ' +
            'UNSUPPORTED_MERGE_VARS, and the SMS plan limits (429, 402, 403, 503).',
          params: IdParams,
          headers: Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKeyHeader) }),
          body: ReplyBody,
          response: { 202: envelope(SendResultSchema) },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request);
        const organization = await organizations.ofCaller(caller);
        const origin = caller.interface === 'developer' ? 'api' : 'portal';
        const { result, replayed } = await conversations.reply(
          organization,
          request.params.id,
          request.body,
          origin,
          request.headers['idempotency-key'],
        );
        if (replayed) reply.header('Idempotent-Replayed', 'true');
        return reply.status(202).send({ success: true, data: result });
      },
    );

    app.post(
      '/conversations/:id/read',
      {
        config: write,
        schema: {
          operationId: 'conversations.markRead',
          tags,
          summary: 'Mark a conversation read (its unreadCount becomes 0)',
          params: IdParams,
          response: { 200: envelope(ConversationSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await conversations.markRead(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.patch(
      '/conversations/:id',
      {
        config: write,
        schema: {
          operationId: 'conversations.update',
          tags,
          summary: 'Close or reopen a conversation, or assign it to a member',
          params: IdParams,
          body: UpdateBody,
          response: { 200: envelope(ConversationSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await conversations.update(callerOf(request).organizationId, request.params.id, request.body),
      }),
    );
  };
