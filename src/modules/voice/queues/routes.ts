// Call queues on the developer API and the portal (CONTRACT section 13). Scopes flows:read and flows:write
// (queues are parts of call flows); the voice product; in the portal any member reads and owners and admins
// change them. GET /queues/{id}/live: who waits and what each member does, from the queue runtime's records.
import { Type } from 'typebox';
import type { App } from '../../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../../platform/http/caller.ts';
import { envelope, IdParams } from '../../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../../platform/pagination.ts';
import { QueueCreate, QueueLiveSchema, QueuePatch, QueueSchema } from './schemas.ts';
import type { QueueService } from './service.ts';

const tags = ['Queues'];
const read = { scope: 'flows:read', product: 'voice' } as const;
const write = { scope: 'flows:write', product: 'voice', role: 'manager' } as const;

export const queueRoutes: ModuleRoutes<{ queues: QueueService }> =
  ({ queues }) =>
  async (app: App) => {
    app.get(
      '/queues',
      {
        config: read,
        schema: {
          operationId: 'queues.list',
          tags,
          summary: "The organization's call queues, newest first (offset paging)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(QueueSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await queues.page(caller.organizationId, request.query, cursorScope(caller)));
      },
    );

    app.post(
      '/queues',
      {
        config: write,
        schema: {
          operationId: 'queues.create',
          tags,
          summary: "Create a call queue answered by the organization's extensions",
          description:
            'Refusals: 400 for a malformed field, a repeated extension id, an id that is not one of the ' +
            "organization's extensions (the message names it), or an onTimeout step that is not a valid " +
            'call-flow step (the message names its path).',
          body: QueueCreate,
          response: { 201: envelope(QueueSchema) },
        },
      },
      async (request, reply) =>
        reply.status(201).send({
          success: true,
          data: await queues.create(callerOf(request).organizationId, request.body),
        }),
    );

    app.get(
      '/queues/:id',
      {
        config: read,
        schema: {
          operationId: 'queues.get',
          tags,
          summary: 'One call queue',
          params: IdParams,
          response: { 200: envelope(QueueSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await queues.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.get(
      '/queues/:id/live',
      {
        config: read,
        schema: {
          operationId: 'queues.live',
          tags,
          summary: "A queue's live state: who waits, in order, and each member's state",
          description:
            'Waiting callers are those in the queue now (waiting, or ringing a member), oldest first, with ' +
            "their place in line. A member's state is derived from the records: on_call, ringing (offered a " +
            'caller), wrap_up (wrapUpSeconds after a queue call ended), offline (on a server running SIP: no ' +
            'registered phone), else available (docs/voice.md "Queues at run time").',
          params: IdParams,
          querystring: Type.Object({
            since: Type.Optional(
              Type.String({
                maxLength: 40,
                description:
                  'Count the waits that ended since (ISO 8601, in the last 31 days); default 24 hours ago',
              }),
            ),
          }),
          response: { 200: envelope(QueueLiveSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await queues.live(callerOf(request).organizationId, request.params.id, request.query),
      }),
    );

    app.patch(
      '/queues/:id',
      {
        config: write,
        schema: {
          operationId: 'queues.update',
          tags,
          summary:
            'Change a call queue: members (the whole list, in order), strategy, hold audio, waits, steps',
          params: IdParams,
          body: QueuePatch,
          response: { 200: envelope(QueueSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await queues.update(callerOf(request).organizationId, request.params.id, request.body),
      }),
    );

    app.delete(
      '/queues/:id',
      {
        config: write,
        schema: {
          operationId: 'queues.delete',
          tags,
          summary: 'Delete a call queue; its extensions stay',
          params: IdParams,
          response: { 200: envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) })) },
        },
      },
      async (request) => {
        await queues.delete(callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );
  };
