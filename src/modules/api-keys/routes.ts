// Key management for people (`/api/api-keys`, session token, Shape A; CONTRACT section 5). Any member may
// see the organization's keys (never a secret); owners and admins create and revoke them, with fresh
// two-factor verification when they have 2FA on. The full key is in the creation response only.
import { Type } from 'typebox';
import type { App } from '../../app.ts';
import type { AppContext } from '../../context.ts';
import {
  currentSession,
  requireManager,
  requireSession,
  requireStepUp,
} from '../../platform/auth/session-guard.ts';
import { ApiError } from '../../platform/errors.ts';
import { ErrorShapeA, envelope, IdParams } from '../../platform/http/schemas.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { SCOPE_CATALOG, SCOPES } from './scopes.ts';
import { EXPIRY_DAYS, publicApiKey } from './service.ts';

const errors = { 400: ErrorShapeA, 401: ErrorShapeA, 403: ErrorShapeA, 404: ErrorShapeA };
const security: Record<string, string[]>[] = [{ session: [] }, { sessionCookie: [] }];
const tags = ['API keys'];

const ApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  lastFour: Type.String(),
  scopes: Type.Array(Type.String()),
  expiresAt: Type.Union([Type.String(), Type.Null()]),
  revokedAt: Type.Union([Type.String(), Type.Null()]),
  lastUsedAt: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
});
const CreatedApiKeySchema = Type.Object({
  ...ApiKeySchema.properties,
  key: Type.String({ description: 'The full key. Shown in this response only: store it now.' }),
});

const ApiKeyCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    scopes: Type.Array(Type.Enum(SCOPES), {
      maxItems: SCOPES.length,
      description: 'Capability scopes; `*` grants all. A key with no scopes can call nothing.',
    }),
    expiresInDays: Type.Optional(
      Type.Union([Type.Enum(EXPIRY_DAYS), Type.Null()], {
        description: '30, 60, 90 or 365; absent or null: never',
      }),
    ),
  },
  { additionalProperties: false },
);

export async function apiKeyRoutes(app: App, ctx: AppContext) {
  // Authentication comes before validation, so a caller without a session learns that first.
  app.addHook('onRequest', requireSession(ctx));

  app.get(
    '/scopes',
    {
      schema: {
        tags,
        summary: 'The scope catalog',
        security,
        response: {
          200: envelope(Type.Array(Type.Object({ scope: Type.String(), description: Type.String() }))),
          ...errors,
        },
      },
    },
    async () => ({ success: true as const, data: SCOPE_CATALOG.map((entry) => ({ ...entry })) }),
  );

  app.get(
    '/',
    {
      schema: {
        tags,
        summary: "List the organization's API keys, newest first (never the keys themselves)",
        security,
        querystring: OffsetPageQuery,
        response: { 200: PageEnvelope(ApiKeySchema), ...errors },
      },
    },
    async (request) => {
      const session = currentSession(request);
      return pageResponse(await ctx.apiKeys.list(session.organizationId, request.query));
    },
  );

  app.post(
    '/',
    {
      preHandler: [requireManager(), requireStepUp(ctx)],
      schema: {
        tags,
        summary: 'Create an API key (owner or admin; fresh two-factor verification when 2FA is on)',
        security,
        body: ApiKeyCreate,
        response: { 201: envelope(CreatedApiKeySchema), ...errors },
      },
    },
    async (request, reply) => {
      const session = currentSession(request);
      const organization = await ctx.organizations.get(session.organizationId);
      if (organization.plan === 'starter') {
        throw ApiError.forbidden('Your plan does not include API access; upgrade to create API keys');
      }
      const { key, secret } = await ctx.apiKeys.create(session.organizationId, {
        name: request.body.name.trim(),
        scopes: request.body.scopes,
        expiresInDays: request.body.expiresInDays ?? null,
        createdBy: session.userId,
      });
      return reply.status(201).send({ success: true, data: { ...publicApiKey(key), key: secret } });
    },
  );

  app.get(
    '/:id',
    {
      schema: {
        tags,
        summary: 'Read an API key (never the key itself)',
        security,
        params: IdParams,
        response: { 200: envelope(ApiKeySchema), ...errors },
      },
    },
    async (request) => {
      const session = currentSession(request);
      return {
        success: true as const,
        data: publicApiKey(await ctx.apiKeys.get(session.organizationId, request.params.id)),
      };
    },
  );

  app.delete(
    '/:id',
    {
      preHandler: [requireManager(), requireStepUp(ctx)],
      schema: {
        tags,
        summary:
          'Revoke an API key: refused from the next request on (owner or admin; step-up when 2FA is on)',
        security,
        params: IdParams,
        response: { 200: envelope(ApiKeySchema), ...errors },
      },
    },
    async (request) => {
      const session = currentSession(request);
      const key = await ctx.apiKeys.revoke(session.organizationId, request.params.id);
      return { success: true as const, data: publicApiKey(key) };
    },
  );
}
