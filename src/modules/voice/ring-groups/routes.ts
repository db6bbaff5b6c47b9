// Ring groups on the developer API and the portal (CONTRACT section 13). Scopes flows:read and flows:write
// (they are parts of call flows); the voice product; in the portal any member reads and owners and admins
// change them.
import { Type } from 'typebox';
import type { App } from '../../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../../platform/http/caller.ts';
import { envelope, IdParams } from '../../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../../platform/pagination.ts';
import { RingGroupCreate, RingGroupPatch, RingGroupSchema } from './schemas.ts';
import type { RingGroupService } from './service.ts';

const tags = ['Ring groups'];
const read = { scope: 'flows:read', product: 'voice' } as const;
const write = { scope: 'flows:write', product: 'voice', role: 'manager' } as const;

export const ringGroupRoutes: ModuleRoutes<{ ringGroups: RingGroupService }> =
  ({ ringGroups }) =>
  async (app: App) => {
    app.get(
      '/ring-groups',
      {
        config: read,
        schema: {
          operationId: 'ringGroups.list',
          tags,
          summary: "The organization's ring groups, newest first (offset paging)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(RingGroupSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await ringGroups.page(caller.organizationId, request.query, cursorScope(caller)));
      },
    );

    app.post(
      '/ring-groups',
      {
        config: write,
        schema: {
          operationId: 'ringGroups.create',
          tags,
          summary: "Create a ring group of the organization's extensions",
          description:
            'Refusals: 400 for a malformed field, a repeated extension id, or an id that is not one of the ' +
            "organization's extensions (the message names it).",
          body: RingGroupCreate,
          response: { 201: envelope(RingGroupSchema) },
        },
      },
      async (request, reply) =>
        reply.status(201).send({
          success: true,
          data: await ringGroups.create(callerOf(request).organizationId, request.body),
        }),
    );

    app.get(
      '/ring-groups/:id',
      {
        config: read,
        schema: {
          operationId: 'ringGroups.get',
          tags,
          summary: 'One ring group',
          params: IdParams,
          response: { 200: envelope(RingGroupSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await ringGroups.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.patch(
      '/ring-groups/:id',
      {
        config: write,
        schema: {
          operationId: 'ringGroups.update',
          tags,
          summary: 'Change its name, members (the whole list, in ring order), strategy or ring time',
          params: IdParams,
          body: RingGroupPatch,
          response: { 200: envelope(RingGroupSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await ringGroups.update(callerOf(request).organizationId, request.params.id, request.body),
      }),
    );

    app.delete(
      '/ring-groups/:id',
      {
        config: write,
        schema: {
          operationId: 'ringGroups.delete',
          tags,
          summary: 'Delete a ring group; its extensions stay',
          params: IdParams,
          response: { 200: envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) })) },
        },
      },
      async (request) => {
        await ringGroups.delete(callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );
  };
