// Extensions on the developer API and the portal (CONTRACT section 9). Scopes extensions:read and
// extensions:write; the voice product; in the portal any member reads and owners and admins change them.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { sendBytes } from '../../platform/http/byte-range.ts';
import { callerOf, cursorScope } from '../../platform/http/caller.ts';
import { multipartUpload, REQUEST_BODY_DOC } from '../../platform/http/openapi.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { organizationsModule } from '../organizations/index.ts';
import { MAX_GREETING_SECONDS } from './extensions.ts';
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

    app.put(
      '/extensions/:id/voicemail-greeting',
      {
        config: { ...write, uploadLimit: MAX_GREETING_UPLOAD_BYTES + 64 * 1024, errorStatuses: [413] },
        schema: {
          operationId: 'extensions.uploadGreeting',
          tags,
          summary: "Upload the voicemail box's own greeting (multipart field `file`, a WAV file)",
          description:
            'Send `multipart/form-data` with a WAV file in field `file`: linear PCM (8, 16, 24 or 32-bit), 32-bit ' +
            `float, A-law or µ-law, any sample rate, mono or stereo, at most ${MAX_GREETING_SECONDS} seconds and ` +
            `${MAX_GREETING_UPLOAD_BYTES / 1024 / 1024} MB. It is kept as telephone audio (8 kHz mono) and played ` +
            'instead of the text greeting until it is deleted. Refusals: 400 INVALID_AUDIO (not a readable WAV, ' +
            'empty or too long), 413 (too large).',
          [REQUEST_BODY_DOC]: multipartUpload('A WAV file'),
          params: IdParams,
          response: { 200: envelope(ExtensionSchema) },
        },
      },
      async (request) => {
        const { organizationId } = callerOf(request);
        await extensions.get(organizationId, request.params.id); // 404 before the body is read
        const file = await greetingFile(request);
        return {
          success: true as const,
          data: await extensions.uploadGreeting(organizationId, request.params.id, file),
        };
      },
    );

    app.get(
      '/extensions/:id/voicemail-greeting',
      {
        config: { ...read, errorStatuses: [416] },
        schema: {
          operationId: 'extensions.greetingAudio',
          tags,
          summary:
            'The uploaded voicemail greeting (audio/wav, 8 kHz mono); 404 when the box speaks its text',
          params: IdParams,
          response: {
            200: {
              description: 'audio/wav, 8 kHz mono',
              content: { 'audio/wav': { schema: Type.String({ format: 'binary' }) } },
            },
          },
        },
      },
      async (request, reply) => {
        const audio = await extensions.greetingAudio(callerOf(request).organizationId, request.params.id);
        return sendBytes(request, reply, audio, 'audio/wav');
      },
    );

    app.delete(
      '/extensions/:id/voicemail-greeting',
      {
        config: write,
        schema: {
          operationId: 'extensions.deleteGreeting',
          tags,
          summary: 'Delete the uploaded greeting: the box speaks its text greeting again',
          params: IdParams,
          response: { 200: envelope(ExtensionSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await extensions.removeGreeting(callerOf(request).organizationId, request.params.id),
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

/** A WAV of two minutes at 44.1 kHz stereo 16-bit is 21 MB; telephone-quality files are far smaller. */
const MAX_GREETING_UPLOAD_BYTES = 25 * 1024 * 1024;

/** The bytes of the multipart field `file`; 400 INVALID_AUDIO without one, 413 past the limit. */
async function greetingFile(request: FastifyRequest): Promise<Buffer> {
  if (!request.isMultipart()) throw noGreetingFile();
  try {
    for await (const part of request.parts({ limits: { fileSize: MAX_GREETING_UPLOAD_BYTES } })) {
      if (part.type === 'file' && part.fieldname === 'file') {
        const file = await part.toBuffer();
        // The parser marks a file cut at the limit but does not always throw for it.
        if (part.file.truncated) throw new ApiError(413, 'The greeting file is larger than 25 MB');
        return file;
      }
      if (part.type === 'file') part.file.resume();
    }
  } catch (error) {
    // The parser's own refusals (a file past the limit: 413) carry their status; a body that cannot be read
    // at all is the client's fault.
    if (error instanceof ApiError || (error as { statusCode?: number }).statusCode) throw error;
    throw ApiError.badRequest(`The multipart body could not be read: ${(error as Error).message}`);
  }
  throw noGreetingFile();
}

function noGreetingFile(): ApiError {
  return new ApiError(400, 'Send the greeting as a WAV file in the multipart field "file"', {
    code: 'INVALID_AUDIO',
  });
}
