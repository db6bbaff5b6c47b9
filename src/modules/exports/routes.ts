// Data exports on the developer API and the portal (CONTRACT section 11): one declaration, mounted on both.
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf } from '../../platform/http/caller.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { rateLimitHeaders } from '../../platform/rate-limit.ts';
import { ExportCreate, ExportSchema } from './schemas.ts';
import type { ExportService } from './service.ts';

export interface ExportsServices {
  exports: ExportService;
}

const tags = ['Exports'];
// Exports count against the messaging product's request limit (CONTRACT section 7).
const read = { scope: 'exports:read', rateLimit: 'messaging' } as const;
const write = { scope: 'exports:write', rateLimit: 'messaging', errorStatuses: [429] } as const;

export const exportRoutes: ModuleRoutes<ExportsServices> =
  ({ exports }) =>
  async (app: App) => {
    app.post(
      '/exports',
      {
        config: write,
        schema: {
          operationId: 'exports.create',
          tags,
          summary: 'Export messages, contacts, calls or campaign recipients as CSV or JSON Lines (202)',
          description:
            'The file is built in the background; poll GET /exports/{id} or listen for `export.completed`, then ' +
            "download it within 7 days. `filters` are those of the resource's list endpoint (campaign_recipients " +
            'needs `campaignId`). 10 exports per hour per organization: the 11th is 429 RATE_LIMITED with ' +
            'RateLimit-* and Retry-After.',
          body: ExportCreate,
          response: { 202: envelope(ExportSchema) },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request);
        const created = await exports.create(caller.organizationId, caller.actor, request.body);
        reply.headers(rateLimitHeaders(created.rateLimit));
        return reply.status(202).send({ success: true as const, data: created.export });
      },
    );

    app.get(
      '/exports',
      {
        config: read,
        schema: {
          operationId: 'exports.list',
          tags,
          summary: "The organization's exports of the last 7 days, newest first",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(ExportSchema) },
        },
      },
      async (request) => pageResponse(await exports.list(callerOf(request).organizationId, request.query)),
    );

    app.get(
      '/exports/:id',
      {
        config: read,
        schema: {
          operationId: 'exports.get',
          tags,
          summary: 'An export and its status',
          params: IdParams,
          response: { 200: envelope(ExportSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await exports.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.get(
      '/exports/:id/download',
      {
        config: read,
        schema: {
          operationId: 'exports.download',
          tags,
          summary: "The export's file, streamed (404 until it has completed)",
          params: IdParams,
          response: {
            200: {
              description: 'The file: text/csv or application/x-ndjson, as an attachment',
              content: {
                'text/csv': { schema: Type.String() },
                'application/x-ndjson': { schema: Type.String() },
              },
            },
          },
        },
      },
      async (request, reply: FastifyReply) => {
        // The raw response schema (a file, not JSON) costs the route its inferred types: params as declared.
        const { id } = request.params as { id: string };
        const file = await exports.download(callerOf(request).organizationId, id);
        return reply
          .header('content-type', file.contentType)
          .header('content-length', String(file.size))
          .header('content-disposition', `attachment; filename="${file.filename}"`)
          .header('cache-control', 'private, no-store')
          .send(file.body);
      },
    );
  };
