// Contacts over HTTP, written once and mounted on the developer API (`/api/v2`, API key, Shape B) and the
// portal (`/v2/portal`, session, Shape A). Handlers are thin: they read the Caller the interface's guard
// produced and call the service. Contact lists are in list-routes.ts.
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { type Caller, callerOf, cursorScope } from '../../platform/http/caller.ts';
import { multipartUpload, REQUEST_BODY_DOC } from '../../platform/http/openapi.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, PageQuery, pageResponse } from '../../platform/pagination.ts';
import { spoolUpload } from '../../platform/uploads.ts';
import type { ContactImporter } from './import.ts';
import type { ContactListService } from './lists.ts';
import {
  ConsentEventSchema,
  ContactCreate,
  ContactPatch,
  ContactSchema,
  ImportResultSchema,
} from './schemas.ts';
import type { ContactService } from './service.ts';

export const MAX_JSON_IMPORT_ROWS = 10_000;
/** The 50 MB file plus room for the multipart framing around it. */
const MAX_IMPORT_UPLOAD_BYTES = 50 * 1024 * 1024 + 64 * 1024;

export interface ContactsServices {
  contacts: ContactService;
  contactImporter: ContactImporter;
  contactLists: ContactListService;
}

/** Contacts are the messaging product: counted per organization on the developer API (CONTRACT section 6). */
const read = { scope: 'contacts:read', rateLimit: 'messaging' } as const;
const write = { scope: 'contacts:write', rateLimit: 'messaging' } as const;
const tags = ['Contacts'];
/** Opt-out and opt-in read an optional body themselves (it may be absent altogether); documented only. */
const OPTIONAL_REASON_BODY = {
  required: false,
  content: {
    'application/json': {
      schema: Type.Object({ reason: Type.Optional(Type.String({ maxLength: 500 })) }),
    },
  },
};

/** How an opt-out is recorded: `api` for a key, `manual` for a person in the console. */
function optOutMethodOf(caller: Caller): 'api' | 'manual' {
  return caller.interface === 'developer' ? 'api' : 'manual';
}

/** Contacts on the developer API and the portal: one declaration, mounted on both. */
export const contactRoutes: ModuleRoutes<ContactsServices> =
  ({ contacts, contactImporter }) =>
  async (app: App) => {
    app.get(
      '/contacts',
      {
        config: read,
        schema: {
          operationId: 'contacts.list',
          tags,
          summary: 'List contacts, newest first (offset or keyset paging)',
          querystring: Type.Object({
            ...PageQuery.properties,
            optedOut: Type.Optional(
              Type.Boolean({ description: 'Only opted-out (true) or reachable (false) contacts' }),
            ),
            search: Type.Optional(
              Type.String({ maxLength: 100, description: 'Matches phone, name, e-mail or company' }),
            ),
          }),
          response: { 200: PageEnvelope(ContactSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await contacts.list(caller.organizationId, request.query, cursorScope(caller)));
      },
    );

    app.post(
      '/contacts',
      {
        config: write,
        schema: {
          operationId: 'contacts.create',
          tags,
          summary: 'Create a contact',
          body: ContactCreate,
          response: { 201: envelope(ContactSchema) },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request);
        const contact = await contacts.create(
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
          operationId: 'contacts.get',
          tags,
          summary: 'Read a contact',
          params: IdParams,
          response: { 200: envelope(ContactSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return {
          success: true as const,
          data: await contacts.get(caller.organizationId, request.params.id),
        };
      },
    );

    app.patch(
      '/contacts/:id',
      {
        config: write,
        schema: {
          operationId: 'contacts.update',
          tags,
          summary: 'Change a contact (opt-out state changes only through opt-out and opt-in)',
          params: IdParams,
          body: ContactPatch,
          response: { 200: envelope(ContactSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const contact = await contacts.update(
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
          operationId: 'contacts.delete',
          tags,
          summary: 'Delete a contact (an opt-out of its number is kept)',
          params: IdParams,
          response: {
            200: envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) })),
          },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        await contacts.delete(caller.organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );

    app.post(
      '/contacts/import',
      {
        config: { ...write, uploadLimit: MAX_IMPORT_UPLOAD_BYTES },
        bodyLimit: 8 * 1024 * 1024,
        schema: {
          operationId: 'contacts.import',
          tags,
          summary: 'Import contacts from a CSV file (multipart field `file`) or a JSON `contacts` array',
          description:
            'Send `multipart/form-data` with the CSV in field `file`, or JSON `{"contacts": [{"phone": …}, …]}` ' +
            `(at most ${MAX_JSON_IMPORT_ROWS} rows). The whole file is validated first (a file with no valid row changes nothing), then valid rows ` +
            'are applied in batches, in file order; rejected rows are reported (the first 20). Refusals: CONTACTS_IMPORT_NO_INPUT, CONTACTS_IMPORT_EMPTY_FILE, ' +
            'CONTACTS_IMPORT_NO_VALID_ROWS (with data.errors).',
          [REQUEST_BODY_DOC]: multipartUpload(
            'CSV with a header row (phone, name and e-mail columns recognised by name; others become custom fields)',
            {},
            Type.Object({ contacts: Type.Array(Type.Record(Type.String(), Type.Unknown())) }),
          ),
          response: { 200: envelope(ImportResultSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        if (request.isMultipart()) {
          try {
            for await (const part of request.parts()) {
              if (part.type === 'file' && part.fieldname === 'file') {
                // Received whole first, then imported: see platform/uploads.ts.
                const upload = await spoolUpload(part.file);
                try {
                  const result = await contactImporter.importCsv(
                    caller.organizationId,
                    caller.region,
                    upload.open(),
                    caller.actor,
                    { truncated: upload.truncated },
                  );
                  return { success: true as const, data: result };
                } finally {
                  await upload.discard();
                }
              }
              if (part.type === 'file') part.file.resume();
            }
          } catch (error) {
            // A multipart body without a boundary, with the wrong one, or cut short cannot be read: the
            // client's fault, told as such (the parser's own errors carry no status).
            if (error instanceof ApiError || (error as { statusCode?: number }).statusCode) throw error;
            throw ApiError.badRequest(`The multipart body could not be read: ${(error as Error).message}`);
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
        const result = await contactImporter.importJson(
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
          operationId: 'contacts.optOut',
          tags,
          summary: 'Opt a contact out: no more messages to this number until it opts in',
          description:
            'Optional JSON body `{"reason": "…"}` (at most 500 characters); the body may be omitted.',
          [REQUEST_BODY_DOC]: OPTIONAL_REASON_BODY,
          params: IdParams,
          response: { 200: envelope(ContactSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const reason = optionalReason(request.body);
        const contact = await contacts.optOut(
          caller.organizationId,
          request.params.id,
          optOutMethodOf(caller),
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
          operationId: 'contacts.optIn',
          tags,
          summary: 'Opt a contact back in; a reason is required when they opted out by texting STOP',
          description:
            'Optional JSON body `{"reason": "…"}` (at most 500 characters); the body may be omitted.',
          [REQUEST_BODY_DOC]: OPTIONAL_REASON_BODY,
          params: IdParams,
          response: { 200: envelope(ContactSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const reason = optionalReason(request.body);
        const contact = await contacts.optIn(caller.organizationId, request.params.id, reason, caller.actor);
        return { success: true as const, data: contact };
      },
    );

    app.get(
      '/contacts/:id/consent-history',
      {
        config: read,
        schema: {
          operationId: 'contacts.consentHistory',
          tags,
          summary: "A contact's consent history, newest first (offset paging)",
          params: IdParams,
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(ConsentEventSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await contacts.consentHistory(
            caller.organizationId,
            request.params.id,
            request.query,
            cursorScope(caller),
          ),
        );
      },
    );
  };

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
