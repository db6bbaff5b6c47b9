// Extensions on the developer API and the portal (CONTRACT section 9). Scopes extensions:read and
// extensions:write; the voice product; in the portal any member reads and owners and admins change them.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../platform/http/caller.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { organizationsModule } from '../organizations/index.ts';
import { ExtensionCreate, ExtensionPatch, ExtensionSchema } from './schemas.ts';
import type { VoiceServices } from './services.ts';

const tags = ['Extensions'];
const read = { scope: 'extensions:read', product: 'voice' } as const;
const write = { scope: 'extensions:write', product: 'voice', role: 'manager' } as const;

export const extensionRoutes: ModuleRoutes<VoiceServices> =
  ({ extensions }, _platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);

    app.get(
      '/extensions',
      {
        config: read,
        schema: {
          operationId: 'extensions.list',
          tags,
          summary: "The organization's extensions, newest first (offset paging); never their SIP passwords",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(ExtensionSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await extensions.page(caller.organizationId, request.query, cursorScope(caller)));
      },
    );

    app.post(
      '/extensions',
      {
        config: { ...write, errorStatuses: [409] },
        schema: {
          operationId: 'extensions.create',
          tags,
          summary: 'Create an extension; the answer holds its SIP password, shown this once',
          body: ExtensionCreate,
          response: { 201: envelope(ExtensionSchema) },
        },
      },
      async (request, reply) => {
        const org = await organizations.ofCaller(callerOf(request));
        return reply.status(201).send({ success: true, data: await extensions.create(org, request.body) });
      },
    );

    app.get(
      '/extensions/:id',
      {
        config: read,
        schema: {
          operationId: 'extensions.get',
          tags,
          summary: 'One extension (without its SIP password)',
          params: IdParams,
          response: { 200: envelope(ExtensionSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await extensions.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.patch(
      '/extensions/:id',
      {
        config: { ...write, errorStatuses: [409] },
        schema: {
          operationId: 'extensions.update',
          tags,
          summary: 'Change an extension: number, name, user, voicemail, forwarding, ring time',
          params: IdParams,
          body: ExtensionPatch,
          response: { 200: envelope(ExtensionSchema) },
        },
      },
      async (request) => {
        const org = await organizations.ofCaller(callerOf(request));
        return {
          success: true as const,
          data: await extensions.update(org, request.params.id, request.body),
        };
      },
    );

    app.post(
      '/extensions/:id/rotate-password',
      {
        config: write,
        schema: {
          operationId: 'extensions.rotatePassword',
          tags,
          summary: 'A new SIP password, shown this once; the old one stops working at once',
          params: IdParams,
          response: { 200: envelope(ExtensionSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await extensions.rotatePassword(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.delete(
      '/extensions/:id',
      {
        config: write,
        schema: {
          operationId: 'extensions.delete',
          tags,
          summary: 'Delete an extension; numbers routed to it lose their route',
          params: IdParams,
          response: { 200: envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) })) },
        },
      },
      async (request) => {
        await extensions.delete(callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );
  };
