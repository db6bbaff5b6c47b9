// Key management for people (`/api/api-keys`, session token, Shape A; CONTRACT section 5). Any member may
// see the organization's keys (never a secret); owners and admins create and revoke them, with fresh
// two-factor verification when they have 2FA on. The full key is in the creation response only.
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf } from '../../platform/http/caller.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { organizationsModule } from '../organizations/index.ts';
import { ApiKeySchema, CreatedApiKeySchema } from './schemas.ts';
import { SCOPE_CATALOG, SCOPES } from './scopes.ts';
import { type ApiKeyService, EXPIRY_DAYS, publicApiKey } from './service.ts';

const tags = ['API keys'];
/** Creating and revoking keys: owners and admins, with fresh two-factor verification when 2FA is on. */
const sensitive = { role: 'manager', stepUp: true } as const;

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

/** Key management on the management interface (`/api/api-keys`). */
export const apiKeyRoutes: ModuleRoutes<{ apiKeys: ApiKeyService }> =
  ({ apiKeys }, _platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);

    app.get(
      '/api-keys/scopes',
      {
        schema: {
          operationId: 'apiKeys.scopes',
          tags,
          summary: 'The scope catalog',
          response: {
            200: envelope(Type.Array(Type.Object({ scope: Type.String(), description: Type.String() }))),
          },
        },
      },
      async () => ({ success: true as const, data: SCOPE_CATALOG.map((entry) => ({ ...entry })) }),
    );

    app.get(
      '/api-keys',
      {
        schema: {
          operationId: 'apiKeys.list',
          tags,
          summary: "List the organization's API keys, newest first (never the keys themselves)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(ApiKeySchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await apiKeys.list(caller.organizationId, request.query));
      },
    );

    app.post(
      '/api-keys',
      {
        config: sensitive,
        schema: {
          operationId: 'apiKeys.create',
          tags,
          summary: 'Create an API key (owner or admin; fresh two-factor verification when 2FA is on)',
          body: ApiKeyCreate,
          response: { 201: envelope(CreatedApiKeySchema) },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request);
        const organization = await organizations.ofCaller(caller);
        if (organization.plan === 'starter') {
          throw ApiError.forbidden('Your plan does not include API access; upgrade to create API keys');
        }
        const { key, secret } = await apiKeys.create(caller.organizationId, {
          name: request.body.name.trim(),
          scopes: request.body.scopes,
          expiresInDays: request.body.expiresInDays ?? null,
          createdBy: caller.userId,
        });
        return reply.status(201).send({ success: true, data: { ...publicApiKey(key), key: secret } });
      },
    );

    app.get(
      '/api-keys/:id',
      {
        schema: {
          operationId: 'apiKeys.get',
          tags,
          summary: 'Read an API key (never the key itself)',
          params: IdParams,
          response: { 200: envelope(ApiKeySchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return {
          success: true as const,
          data: publicApiKey(await apiKeys.get(caller.organizationId, request.params.id)),
        };
      },
    );

    app.delete(
      '/api-keys/:id',
      {
        config: sensitive,
        schema: {
          operationId: 'apiKeys.revoke',
          tags,
          summary:
            'Revoke an API key: refused from the next request on (owner or admin; step-up when 2FA is on)',
          params: IdParams,
          response: { 200: envelope(ApiKeySchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const key = await apiKeys.revoke(caller.organizationId, request.params.id);
        return { success: true as const, data: publicApiKey(key) };
      },
    );
  };
