// Builds the Fastify app: platform behaviour first (errors, versioning, OpenAPI), then every module's routes.
// The app holds no state of its own; everything it needs comes in through the AppContext.

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import cookie from '@fastify/cookie';
import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import scalar from '@scalar/fastify-api-reference';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import type { AppContext } from './context.ts';
import { adminRoutes } from './modules/admin/routes.ts';
import { apiKeyDeveloperRoutes } from './modules/api-keys/developer-routes.ts';
import { installApiKeyGuard } from './modules/api-keys/guard.ts';
import { apiKeyRoutes } from './modules/api-keys/routes.ts';
import { contactRoutes, developerContactSurface, portalContactSurface } from './modules/contacts/routes.ts';
import { portalAuthRoutes } from './modules/identity/routes.ts';
import { developerMessageSurface, messageRoutes, portalMessageRoutes } from './modules/messaging/routes.ts';
import { systemRoutes } from './modules/system/routes.ts';
import { webhookDeveloperRoutes, webhookRoutes } from './modules/webhooks/routes.ts';
import { requireSession } from './platform/auth/session-guard.ts';
import { ApiError, renderError, shapeForPath } from './platform/errors.ts';
import { ErrorShapeA, ErrorShapeB } from './platform/http/schemas.ts';
import { CURRENT_VERSION, KNOWN_VERSIONS } from './platform/version.ts';

export type App = FastifyInstance<
  Server,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

declare module 'fastify' {
  interface FastifyRequest {
    apiVersion: string;
  }
}

export async function buildApp(ctx: AppContext): Promise<App> {
  const app = Fastify({
    loggerInstance: ctx.log,
    // Only behind a proxy we run may X-Forwarded-For name the client: login limits per IP depend on it.
    trustProxy:
      typeof ctx.config.trustProxy === 'number'
        ? (
            (hops) => (_address: string, hop: number) =>
              hop < hops
          )(ctx.config.trustProxy)
        : ctx.config.trustProxy,
    bodyLimit: 8 * 1024 * 1024,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorateRequest('apiVersion', CURRENT_VERSION);
  // Portal sessions: the portal_token cookie, and request.session set by the session guard.
  await app.register(cookie);
  app.decorateRequest('session', null);

  // Query strings, params and headers arrive as text, so they are coerced to their schema types; a JSON
  // body is already typed and is validated as sent (a number stays a number, "3" stays a string).
  const coercing = validator({ coerceTypes: 'array' });
  const strict = validator({ coerceTypes: false });
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? strict : coercing).compile(schema as object),
  );

  // Versioning (CONTRACT section 2): a request may pin a known version; every response names the one in force.
  app.addHook('onRequest', async (request, reply) => {
    reply.header('API-Version', CURRENT_VERSION);
    const asked = request.headers['api-version'];
    if (asked === undefined) return;
    const version = Array.isArray(asked) ? asked[0]! : asked;
    if (!KNOWN_VERSIONS.has(version)) {
      throw ApiError.badRequest(
        `Unknown API-Version "${version}"; known versions: ${[...KNOWN_VERSIONS].join(', ')}`,
      );
    }
    request.apiVersion = version;
    reply.header('API-Version', version);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const apiError = toApiError(error);
    const rendered = renderError(apiError ?? error, shapeForPath(request.url));
    if (rendered.status >= 500) request.log.error({ err: error }, 'request failed');
    reply.status(rendered.status).headers(rendered.headers).send(rendered.body);
  });

  app.setNotFoundHandler(async (request) => {
    throw ApiError.notFound(`Route ${request.method} ${request.url.split('?')[0]}`);
  });

  // CSV uploads (contact import) stream through; one file of at most 50 MB per request.
  await app.register(multipart, { limits: { fileSize: 50 * 1024 * 1024, files: 1, fields: 20 } });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Communications Platform API',
        version: CURRENT_VERSION,
        description:
          'SMS/MMS messaging, cloud phone system and AI voice agents. Portal API (`/v2/portal`, session token), ' +
          'key and webhook management (`/api/api-keys`, `/api/webhooks`, session token), developer API ' +
          '(`/api/v2`, `x-api-key`) and the operator API (`/admin/v1`).',
      },
      components: {
        securitySchemes: {
          session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          sessionCookie: { type: 'apiKey', in: 'cookie', name: 'portal_token' },
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          admin: { type: 'http', scheme: 'bearer' },
        },
      },
    },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await app.register(scalar, { routePrefix: '/docs', configuration: { url: '/openapi.json' } });

  await app.register(async (scope) => systemRoutes(scope as App, ctx));
  // The developer API: every route in this scope passes the API-key guard.
  await app.register(
    async (scope) => {
      const developer = scope as App;
      installApiKeyGuard(developer, ctx);
      await apiKeyDeveloperRoutes(developer);
      await contactRoutes(developer, ctx, developerContactSurface(ErrorShapeB));
      await webhookDeveloperRoutes(developer, ctx);
      await messageRoutes(developer, ctx, developerMessageSurface);
    },
    { prefix: '/api/v2' },
  );
  await app.register(async (scope) => portalAuthRoutes(scope as App, ctx), { prefix: '/v2/portal/auth' });
  await app.register(async (scope) => portalMessageRoutes(scope as App, ctx), { prefix: '/v2/portal' });
  await app.register(async (scope) => apiKeyRoutes(scope as App, ctx), { prefix: '/api/api-keys' });
  // The portal twins of developer routes: the same handlers, for a signed-in person.
  await app.register(
    async (scope) => {
      const portal = scope as App;
      portal.addHook('onRequest', requireSession(ctx));
      await contactRoutes(portal, ctx, portalContactSurface(ctx, ErrorShapeA));
    },
    { prefix: '/v2/portal' },
  );
  await app.register(async (scope) => webhookRoutes(scope as App, ctx), { prefix: '/api/webhooks' });
  if (ctx.config.adminToken) {
    // Without ADMIN_TOKEN the operator API does not exist: the whole /admin tree answers 404.
    await app.register(async (scope) => adminRoutes(scope as App, ctx), { prefix: '/admin/v1' });
  }

  return app as unknown as App;
}

function validator(options: { coerceTypes: boolean | 'array' }): Ajv {
  const ajv = new Ajv({
    ...options,
    allErrors: true,
    removeAdditional: false,
    useDefaults: true,
    strict: false,
  });
  addFormats.default(ajv);
  return ajv;
}

/**
 * Fastify's own refusals (schema validation, unparseable body, unsupported content type, oversized body)
 * become ApiErrors with their 4xx status and no code. Anything else that is not already an ApiError is
 * left alone and rendered as a generic 500.
 */
function toApiError(error: FastifyError): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (error.validation) {
    const context = error.validationContext ?? 'body';
    const messages = error.validation.map((issue) => {
      const path = issue.instancePath ? issue.instancePath.slice(1).replaceAll('/', '.') : '';
      const missing = (issue.params as { missingProperty?: string } | undefined)?.missingProperty;
      const field = [context, path, missing].filter(Boolean).join('.');
      return missing ? `${field} is required` : `${field} ${issue.message}`;
    });
    return ApiError.badRequest([...new Set(messages)].join('; '));
  }
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    return new ApiError(error.statusCode, error.message);
  }
  return undefined;
}
