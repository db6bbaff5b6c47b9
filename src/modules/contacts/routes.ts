// Contacts and contact lists over HTTP. The same routes serve two surfaces: the developer API (`/api/v2`,
// API key, Shape B) and the portal (`/v2/portal`, session, Shape A). A surface says who the caller is and
// what each route needs of them; the handlers themselves are thin and shared.
import type { FastifyContextConfig, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import type { App } from '../../app.ts';
import type { AppContext } from '../../context.ts';
import { currentSession } from '../../platform/auth/session-guard.ts';
import { ApiError } from '../../platform/errors.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import { OffsetPageQuery, PageEnvelope, PageQuery, pageResponse } from '../../platform/pagination.ts';
import type { Scope } from '../api-keys/scopes.ts';
import type { Region } from '../organizations/service.ts';
import { MAX_MEMBERS_PER_CALL } from './lists.ts';
import { CONSENT_METHODS, CONSENT_STATUSES, OPT_OUT_METHODS } from './service.ts';

export const MAX_JSON_IMPORT_ROWS = 10_000;

export interface Caller {
  organizationId: string;
  region: Region;
  /** Who acts, for the consent history. */
  actor: string;
}

export interface Surface {
  /** Names cursors and distinguishes the twins in OpenAPI. */
  name: 'api' | 'portal';
  tag: string;
  security: Record<string, string[]>[];
  errorSchema: TSchema;
  /** Route config for a route that reads or writes contacts. */
  config(access: 'read' | 'write'): FastifyContextConfig;
  caller(request: FastifyRequest): Promise<Caller>;
  /** How opting out through this surface is recorded: `api` for keys, `manual` for people. */
  optOutMethod: 'api' | 'manual';
}

export const CONTACT_SCOPES: Record<'read' | 'write', Scope> = {
  read: 'contacts:read',
  write: 'contacts:write',
};

const nullableString = (maxLength: number) => Type.Union([Type.String({ maxLength }), Type.Null()]);
const CustomFields = Type.Record(
  Type.String({ maxLength: 100 }),
  Type.Union([Type.String({ maxLength: 2000 }), Type.Number(), Type.Boolean(), Type.Null()]),
  { maxProperties: 100 },
);
const ConsentInput = Type.Object(
  {
    status: Type.Enum(CONSENT_STATUSES),
    date: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Null()])),
    method: Type.Optional(Type.Union([Type.Enum(CONSENT_METHODS), Type.Null()])),
  },
  { additionalProperties: false },
);
const ContactFields = {
  phone: Type.String({ minLength: 1, maxLength: 40 }),
  firstName: Type.Optional(nullableString(200)),
  lastName: Type.Optional(nullableString(200)),
  email: Type.Optional(Type.Union([Type.String({ format: 'email', maxLength: 320 }), Type.Null()])),
  company: Type.Optional(nullableString(200)),
  customFields: Type.Optional(CustomFields),
  consent: Type.Optional(ConsentInput),
};
const ContactCreate = Type.Object(ContactFields, { additionalProperties: false });
const ContactPatch = Type.Object(
  { ...ContactFields, phone: Type.Optional(ContactFields.phone) },
  { additionalProperties: false, minProperties: 1 },
);

export const ContactSchema = Type.Object({
  id: Type.String(),
  phone: Type.String(),
  firstName: Type.Union([Type.String(), Type.Null()]),
  lastName: Type.Union([Type.String(), Type.Null()]),
  fullName: Type.Union([Type.String(), Type.Null()]),
  email: Type.Union([Type.String(), Type.Null()]),
  company: Type.Union([Type.String(), Type.Null()]),
  customFields: Type.Record(Type.String(), Type.Unknown()),
  consent: Type.Object({
    status: Type.Enum(CONSENT_STATUSES),
    date: Type.Union([Type.String(), Type.Null()]),
    method: Type.Union([Type.String(), Type.Null()]),
  }),
  optedOut: Type.Boolean(),
  optedOutAt: Type.Union([Type.String(), Type.Null()]),
  optOutMethod: Type.Union([Type.Enum(OPT_OUT_METHODS), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
const ConsentEventSchema = Type.Object({
  id: Type.String(),
  action: Type.String(),
  method: Type.Union([Type.String(), Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()]),
  actor: Type.String(),
  createdAt: Type.String(),
});
const ImportResultSchema = Type.Object({
  imported: Type.Integer(),
  updated: Type.Integer(),
  rejected: Type.Integer(),
  errors: Type.Array(Type.Object({ row: Type.Integer(), reason: Type.String() })),
});
const ContactListSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  memberCount: Type.Integer(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
const MemberIds = Type.Object(
  {
    contactIds: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      minItems: 1,
      maxItems: MAX_MEMBERS_PER_CALL,
    }),
  },
  { additionalProperties: false },
);

export async function contactRoutes(app: App, ctx: AppContext, surface: Surface) {
  const errors = Object.fromEntries(
    [400, 401, 403, 404, 409, 429].map((status) => [status, surface.errorSchema]),
  );
  const meta = (summary: string) => ({ tags: [surface.tag], summary, security: surface.security });
  const read = surface.config('read');
  const write = surface.config('write');

  app.get(
    '/contacts',
    {
      config: read,
      schema: {
        ...meta('List contacts, newest first (offset or keyset paging)'),
        querystring: Type.Object({
          ...PageQuery.properties,
          optedOut: Type.Optional(
            Type.Boolean({ description: 'Only opted-out (true) or reachable (false) contacts' }),
          ),
          search: Type.Optional(
            Type.String({ maxLength: 100, description: 'Matches phone, name, e-mail or company' }),
          ),
        }),
        response: { 200: PageEnvelope(ContactSchema), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      return pageResponse(await ctx.contacts.list(caller.organizationId, request.query, surface.name));
    },
  );

  app.post(
    '/contacts',
    {
      config: write,
      schema: {
        ...meta('Create a contact'),
        body: ContactCreate,
        response: { 201: envelope(ContactSchema), ...errors },
      },
    },
    async (request, reply) => {
      const caller = await surface.caller(request);
      const contact = await ctx.contacts.create(
        caller.organizationId,
        caller.region,
        request.body,
        caller.actor,
      );
      return reply.status(201).send({ success: true, data: contact });
    },
  );

  app.get(
    '/contacts/:id',
    {
      config: read,
      schema: {
        ...meta('Read a contact'),
        params: IdParams,
        response: { 200: envelope(ContactSchema), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      return {
        success: true as const,
        data: await ctx.contacts.get(caller.organizationId, request.params.id),
      };
    },
  );

  app.patch(
    '/contacts/:id',
    {
      config: write,
      schema: {
        ...meta('Change a contact (opt-out state changes only through opt-out and opt-in)'),
        params: IdParams,
        body: ContactPatch,
        response: { 200: envelope(ContactSchema), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      const contact = await ctx.contacts.update(
        caller.organizationId,
        caller.region,
        request.params.id,
        request.body,
        caller.actor,
      );
      return { success: true as const, data: contact };
    },
  );

  app.delete(
    '/contacts/:id',
    {
      config: write,
      schema: {
        ...meta('Delete a contact (an opt-out of its number is kept)'),
        params: IdParams,
        response: {
          200: envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) })),
          ...errors,
        },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      await ctx.contacts.delete(caller.organizationId, request.params.id);
      return { success: true as const, data: { id: request.params.id, deleted: true as const } };
    },
  );

  app.post(
    '/contacts/import',
    {
      config: write,
      bodyLimit: 8 * 1024 * 1024,
      schema: {
        ...meta('Import contacts from a CSV file (multipart field `file`) or a JSON `contacts` array'),
        description:
          'Send `multipart/form-data` with the CSV in field `file`, or JSON `{"contacts": [{"phone": …}, …]}` ' +
          `(at most ${MAX_JSON_IMPORT_ROWS} rows). Valid rows are imported in one transaction; rejected rows ` +
          'are reported (the first 20). Refusals: CONTACTS_IMPORT_NO_INPUT, CONTACTS_IMPORT_EMPTY_FILE, ' +
          'CONTACTS_IMPORT_NO_VALID_ROWS (with data.errors).',
        response: { 200: envelope(ImportResultSchema), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      if (request.isMultipart()) {
        for await (const part of request.parts()) {
          if (part.type === 'file' && part.fieldname === 'file') {
            const result = await ctx.contactImporter.importCsv(
              caller.organizationId,
              caller.region,
              part.file,
              caller.actor,
            );
            if (part.file.truncated) throw new ApiError(413, 'The CSV is larger than the 50 MB import limit');
            return { success: true as const, data: result };
          }
          if (part.type === 'file') part.file.resume();
        }
        throw noInput();
      }
      const contacts = (request.body as { contacts?: unknown } | undefined)?.contacts;
      if (contacts === undefined || (Array.isArray(contacts) && contacts.length === 0)) throw noInput();
      if (
        !Array.isArray(contacts) ||
        contacts.some((c) => typeof c !== 'object' || c === null || Array.isArray(c))
      ) {
        throw ApiError.badRequest('body.contacts must be an array of objects');
      }
      if (contacts.length > MAX_JSON_IMPORT_ROWS) {
        throw ApiError.badRequest(
          `body.contacts must have at most ${MAX_JSON_IMPORT_ROWS} rows; upload a CSV for more`,
        );
      }
      const result = await ctx.contactImporter.importJson(
        caller.organizationId,
        caller.region,
        contacts,
        caller.actor,
      );
      return { success: true as const, data: result };
    },
  );

  app.post(
    '/contacts/:id/opt-out',
    {
      config: write,
      schema: {
        ...meta('Opt a contact out: no more messages to this number until it opts in'),
        description:
          'Optional JSON body `{"reason": "…"}` (at most 500 characters); the body may be omitted.',
        params: IdParams,
        response: { 200: envelope(ContactSchema), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      const reason = optionalReason(request.body);
      const contact = await ctx.contacts.optOut(
        caller.organizationId,
        request.params.id,
        surface.optOutMethod,
        reason,
        caller.actor,
      );
      return { success: true as const, data: contact };
    },
  );

  app.post(
    '/contacts/:id/opt-in',
    {
      config: write,
      schema: {
        ...meta('Opt a contact back in; a reason is required when they opted out by texting STOP'),
        description:
          'Optional JSON body `{"reason": "…"}` (at most 500 characters); the body may be omitted.',
        params: IdParams,
        response: { 200: envelope(ContactSchema), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      const reason = optionalReason(request.body);
      const contact = await ctx.contacts.optIn(
        caller.organizationId,
        request.params.id,
        reason,
        caller.actor,
      );
      return { success: true as const, data: contact };
    },
  );

  app.get(
    '/contacts/:id/consent-history',
    {
      config: read,
      schema: {
        ...meta("A contact's consent history, newest first (offset paging)"),
        params: IdParams,
        querystring: OffsetPageQuery,
        response: { 200: PageEnvelope(ConsentEventSchema), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      return pageResponse(
        await ctx.contacts.consentHistory(
          caller.organizationId,
          request.params.id,
          request.query,
          surface.name,
        ),
      );
    },
  );

  // Contact lists (offset paging only).
  app.get(
    '/contact-lists',
    {
      config: read,
      schema: {
        ...meta('List contact lists, newest first (offset paging)'),
        querystring: OffsetPageQuery,
        response: { 200: PageEnvelope(ContactListSchema), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      return pageResponse(await ctx.contactLists.list(caller.organizationId, request.query, surface.name));
    },
  );

  app.post(
    '/contact-lists',
    {
      config: write,
      schema: {
        ...meta('Create a contact list'),
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 200 }),
            description: Type.Optional(nullableString(1000)),
          },
          { additionalProperties: false },
        ),
        response: { 201: envelope(ContactListSchema), ...errors },
      },
    },
    async (request, reply) => {
      const caller = await surface.caller(request);
      return reply
        .status(201)
        .send({ success: true, data: await ctx.contactLists.create(caller.organizationId, request.body) });
    },
  );

  app.get(
    '/contact-lists/:id',
    {
      config: read,
      schema: {
        ...meta('Read a contact list'),
        params: IdParams,
        response: { 200: envelope(ContactListSchema), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      return {
        success: true as const,
        data: await ctx.contactLists.get(caller.organizationId, request.params.id),
      };
    },
  );

  app.patch(
    '/contact-lists/:id',
    {
      config: write,
      schema: {
        ...meta('Rename a contact list or change its description'),
        params: IdParams,
        body: Type.Object(
          {
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            description: Type.Optional(nullableString(1000)),
          },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: envelope(ContactListSchema), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      return {
        success: true as const,
        data: await ctx.contactLists.update(caller.organizationId, request.params.id, request.body),
      };
    },
  );

  app.delete(
    '/contact-lists/:id',
    {
      config: write,
      schema: {
        ...meta('Delete a contact list (its contacts stay)'),
        params: IdParams,
        response: {
          200: envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) })),
          ...errors,
        },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      await ctx.contactLists.delete(caller.organizationId, request.params.id);
      return { success: true as const, data: { id: request.params.id, deleted: true as const } };
    },
  );

  app.get(
    '/contact-lists/:id/members',
    {
      config: read,
      schema: {
        ...meta('List the members of a contact list, most recently added first (offset paging)'),
        params: IdParams,
        querystring: OffsetPageQuery,
        response: {
          200: PageEnvelope(Type.Object({ ...ContactSchema.properties, addedAt: Type.String() })),
          ...errors,
        },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      return pageResponse(
        await ctx.contactLists.members(caller.organizationId, request.params.id, request.query, surface.name),
      );
    },
  );

  app.post(
    '/contact-lists/:id/members',
    {
      config: write,
      schema: {
        ...meta('Add contacts to a list (all must exist, or none is added)'),
        params: IdParams,
        body: MemberIds,
        response: { 200: envelope(Type.Object({ added: Type.Integer() })), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      return {
        success: true as const,
        data: await ctx.contactLists.addMembers(
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
        ...meta('Remove contacts from a list'),
        params: IdParams,
        body: MemberIds,
        response: { 200: envelope(Type.Object({ removed: Type.Integer() })), ...errors },
      },
    },
    async (request) => {
      const caller = await surface.caller(request);
      return {
        success: true as const,
        data: await ctx.contactLists.removeMembers(
          caller.organizationId,
          request.params.id,
          request.body.contactIds,
        ),
      };
    },
  );
}

/** The optional `{reason}` body of opt-out and opt-in, which clients may also omit entirely. */
function optionalReason(body: unknown): string | null {
  if (body === undefined || body === null) return null;
  if (typeof body !== 'object' || Array.isArray(body)) throw ApiError.badRequest('body must be an object');
  const { reason, ...rest } = body as { reason?: unknown };
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw ApiError.badRequest(`body.${unknown[0]} is not a known field`);
  if (reason === undefined || reason === null) return null;
  if (typeof reason !== 'string' || reason.length > 500) {
    throw ApiError.badRequest('body.reason must be a string of at most 500 characters');
  }
  return reason.trim() || null;
}

function noInput() {
  return new ApiError(400, 'Send a CSV file in the multipart field "file" or a non-empty "contacts" array', {
    code: 'CONTACTS_IMPORT_NO_INPUT',
  });
}

/** The developer API surface: API key, contacts scopes, the messaging product's request limit. */
export function developerContactSurface(errorSchema: TSchema): Surface {
  return {
    name: 'api',
    tag: 'Contacts',
    security: [{ apiKey: [] }],
    errorSchema,
    config: (access) => ({ scope: CONTACT_SCOPES[access], rateLimit: 'messaging' }),
    caller: async (request) => ({
      organizationId: request.organization!.id,
      region: request.organization!.region,
      actor: `api_key:${request.apiKey!.id}`,
    }),
    optOutMethod: 'api',
  };
}

/**
 * The portal surface for the web console: a signed-in person of any role may read and change contacts (they
 * are day-to-day work, not account administration); opt-outs made here are recorded as `manual`.
 */
export function portalContactSurface(ctx: AppContext, errorSchema: TSchema): Surface {
  return {
    name: 'portal',
    tag: 'Portal: contacts',
    security: [{ session: [] }, { sessionCookie: [] }],
    errorSchema,
    config: () => ({}),
    caller: async (request) => {
      const session = currentSession(request);
      const organization = await ctx.organizations.get(session.organizationId);
      return {
        organizationId: organization.id,
        region: organization.region,
        actor: `user:${session.userId}`,
      };
    },
    optOutMethod: 'manual',
  };
}
