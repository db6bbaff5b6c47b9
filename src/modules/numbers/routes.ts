// Phone numbers on the operator API (CONTRACT section 3: provisioning a number to an organization) and on the
// developer API and the portal (CONTRACT section 9: search the carrier's inventory, buy, route, release).
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../platform/http/caller.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { organizationsModule } from '../organizations/index.ts';
import {
  AvailableNumberSchema,
  AvailableQuery,
  NumberBuy,
  NumberCreate,
  NumberPatch,
  PhoneNumberSchema,
} from './schemas.ts';
import { type NumberService, publicPhoneNumber } from './service.ts';

const tags = ['Numbers'];
// Numbers belong to the voice product (CONTRACT 9) and count against the per-key request limit; in the portal
// any member reads them and owners and admins buy, route and release them.
const read = { scope: 'numbers:read', product: 'voice' } as const;
const write = { scope: 'numbers:write', product: 'voice', role: 'manager' } as const;

export const numberRoutes: ModuleRoutes<{ numbers: NumberService }> =
  ({ numbers }, _platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);

    app.get(
      '/numbers',
      {
        config: read,
        schema: {
          operationId: 'numbers.list',
          tags,
          summary: "The organization's phone numbers, newest first (offset paging)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(PhoneNumberSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await numbers.page(caller.organizationId, request.query, cursorScope(caller)));
      },
    );

    app.get(
      '/numbers/available',
      {
        config: read,
        schema: {
          operationId: 'numbers.available',
          tags,
          summary: 'Numbers the carrier offers that nobody owns: by country, type, area code and digits',
          querystring: AvailableQuery,
          response: { 200: envelope(Type.Array(AvailableNumberSchema)) },
        },
      },
      async (request) => ({ success: true as const, data: await numbers.available(request.query) }),
    );

    app.post(
      '/numbers',
      {
        config: { ...write, errorStatuses: [402, 409] },
        schema: {
          operationId: 'numbers.buy',
          tags,
          summary: 'Buy a number the carrier offers; the first is the default sender',
          body: NumberBuy,
          response: { 201: envelope(PhoneNumberSchema) },
        },
      },
      async (request, reply) => {
        const org = await organizations.ofCaller(callerOf(request));
        const bought = await numbers.buy(org, request.body);
        return reply.status(201).send({ success: true, data: publicPhoneNumber(bought) });
      },
    );

    app.get(
      '/numbers/:id',
      {
        config: read,
        schema: {
          operationId: 'numbers.get',
          tags,
          summary: 'One phone number',
          params: IdParams,
          response: { 200: envelope(PhoneNumberSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: publicPhoneNumber(await numbers.get(callerOf(request).organizationId, request.params.id)),
      }),
    );

    app.patch(
      '/numbers/:id',
      {
        config: write,
        schema: {
          operationId: 'numbers.update',
          tags,
          summary: 'Name a number or route its calls (extension, agent, forward, voicemail); null clears',
          params: IdParams,
          body: NumberPatch,
          response: { 200: envelope(PhoneNumberSchema) },
        },
      },
      async (request) => {
        const org = await organizations.ofCaller(callerOf(request));
        return {
          success: true as const,
          data: publicPhoneNumber(await numbers.update(org, request.params.id, request.body)),
        };
      },
    );

    app.delete(
      '/numbers/:id',
      {
        config: write,
        schema: {
          operationId: 'numbers.release',
          tags,
          summary: 'Release a number to the carrier; its messages stay in the history',
          params: IdParams,
          response: { 200: envelope(Type.Object({ id: Type.String(), released: Type.Literal(true) })) },
        },
      },
      async (request) => {
        await numbers.release(callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, released: true as const } };
      },
    );
  };

export const numberOperatorRoutes: ModuleRoutes<{ numbers: NumberService }> =
  ({ numbers }, platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);
    app.post(
      '/organizations/:id/numbers',
      {
        config: { errorStatuses: [409] },
        schema: {
          operationId: 'numbers.create',
          tags: ['Numbers'],
          summary: 'Give an organization a phone number; its first is the default sender',
          params: IdParams,
          body: NumberCreate,
          response: { 201: envelope(PhoneNumberSchema) },
        },
      },
      async (request, reply) => {
        const number = await platform.db.transaction(async (tx) => {
          if (!(await organizations.exists(request.params.id, tx))) throw ApiError.notFound('Organization');
          return numbers.add(request.params.id, request.body, tx);
        });
        await numbers.sendersChanged(request.params.id);
        return reply.status(201).send({ success: true, data: publicPhoneNumber(number) });
      },
    );
  };
