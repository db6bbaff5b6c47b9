// Contact lists over HTTP (offset paging only), written once and mounted on the developer API and the portal.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../platform/http/caller.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import type { ContactsServices } from './routes.ts';
import { ContactListMemberSchema, ContactListSchema, MemberIds, nullableString } from './schemas.ts';

/** Contacts are the messaging product: counted per organization on the developer API (CONTRACT section 6). */
const read = { scope: 'contacts:read', rateLimit: 'messaging' } as const;
const write = { scope: 'contacts:write', rateLimit: 'messaging' } as const;
const tags = ['Contact lists'];

export const contactListRoutes: ModuleRoutes<ContactsServices> =
  ({ contactLists }) =>
  async (app: App) => {
    app.get(
      '/contact-lists',
      {
        config: read,
        schema: {
          operationId: 'contactLists.list',
          tags,
          summary: 'List contact lists, newest first (offset paging)',
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(ContactListSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await contactLists.list(caller.organizationId, request.query, cursorScope(caller)),
        );
      },
    );

    app.post(
      '/contact-lists',
      {
        config: write,
        schema: {
          operationId: 'contactLists.create',
          tags,
          summary: 'Create a contact list',
          body: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 200 }),
              description: Type.Optional(nullableString(1000)),
            },
            { additionalProperties: false },
          ),
          response: { 201: envelope(ContactListSchema) },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request);
        return reply
          .status(201)
          .send({ success: true, data: await contactLists.create(caller.organizationId, request.body) });
      },
    );

    app.get(
      '/contact-lists/:id',
      {
        config: read,
        schema: {
          operationId: 'contactLists.get',
          tags,
          summary: 'Read a contact list',
          params: IdParams,
          response: { 200: envelope(ContactListSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return {
          success: true as const,
          data: await contactLists.get(caller.organizationId, request.params.id),
        };
      },
    );

    app.patch(
      '/contact-lists/:id',
      {
        config: write,
        schema: {
          operationId: 'contactLists.update',
          tags,
          summary: 'Rename a contact list or change its description',
          params: IdParams,
          body: Type.Object(
            {
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
              description: Type.Optional(nullableString(1000)),
            },
            { additionalProperties: false, minProperties: 1 },
          ),
          response: { 200: envelope(ContactListSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return {
          success: true as const,
          data: await contactLists.update(caller.organizationId, request.params.id, request.body),
        };
      },
    );

    app.delete(
      '/contact-lists/:id',
      {
        config: write,
        schema: {
          operationId: 'contactLists.delete',
          tags,
          summary: 'Delete a contact list (its contacts stay)',
          params: IdParams,
          response: {
            200: envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) })),
          },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        await contactLists.delete(caller.organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );

    app.get(
      '/contact-lists/:id/members',
      {
        config: read,
        schema: {
          operationId: 'contactLists.members.list',
          tags,
          summary: 'List the members of a contact list, most recently added first (offset paging)',
          params: IdParams,
          querystring: OffsetPageQuery,
          response: {
            200: PageEnvelope(ContactListMemberSchema),
          },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await contactLists.members(
            caller.organizationId,
            request.params.id,
            request.query,
            cursorScope(caller),
          ),
        );
      },
    );

    app.post(
      '/contact-lists/:id/members',
      {
        config: write,
        schema: {
          operationId: 'contactLists.members.add',
          tags,
          summary: 'Add contacts to a list (all must exist, or none is added)',
          params: IdParams,
          body: MemberIds,
          response: { 200: envelope(Type.Object({ added: Type.Integer() })) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return {
          success: true as const,
          data: await contactLists.addMembers(
            caller.organizationId,
            request.params.id,
            request.body.contactIds,
          ),
        };
      },
    );

    app.delete(
      '/contact-lists/:id/members',
      {
        config: write,
        schema: {
          operationId: 'contactLists.members.remove',
          tags,
          summary: 'Remove contacts from a list',
          params: IdParams,
          body: MemberIds,
          response: { 200: envelope(Type.Object({ removed: Type.Integer() })) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return {
          success: true as const,
          data: await contactLists.removeMembers(
            caller.organizationId,
            request.params.id,
            request.body.contactIds,
          ),
        };
      },
    );
  };
