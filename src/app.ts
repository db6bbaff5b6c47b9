// Builds the Fastify app: platform behaviour first (errors, versioning, OpenAPI), then every module's routes
// on the interfaces it names, in one loop. The app holds no state of its own; it serves a Runtime.
import cookie from '@fastify/cookie';
import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import Fastify, { type FastifyError, type FastifyReply } from 'fastify';
import { ApiError, renderError, shapeForPath } from './platform/errors.ts';
import { registerApiReference } from './platform/http/api-reference.ts';
import type { App } from './platform/http/app-type.ts';
import { INTERFACE_NAMES } from './platform/http/caller.ts';
import { answerClientError, trackRequestPaths } from './platform/http/client-errors.ts';
import { type ConsoleServing, serveConsole } from './platform/http/console.ts';
import { mountInterface, type RoutePlugin, SECURITY_SCHEMES } from './platform/http/interfaces.ts';
import { boundJsonDepth } from './platform/http/json-body.ts';
import { serializerCompiledOnFirstUse, validatorCompiledOnFirstUse } from './platform/http/lazy-schemas.ts';
import { webhooksDocument, withDocumentedRequestBodies } from './platform/http/openapi.ts';
import { countRequests } from './platform/http/request-metrics.ts';
import { requestTracing } from './platform/telemetry/index.ts';
import { findUnstorableText } from './platform/text.ts';
import {
  CURRENT_VERSION,
  deprecationHeaders,
  KNOWN_VERSIONS,
  servedVersion,
  versionStatus,
} from './platform/version.ts';
import type { Runtime } from './runtime.ts';

export type { App };

declare module 'fastify' {
  interface FastifyRequest {
    /** The API version the request is answered as of. */
    apiVersion: string;
    /** True when the request named it (API-Version header); else the organization's pinned version applies. */
    apiVersionAsked: boolean;
  }
}

export async function buildApp(runtime: Runtime): Promise<App> {
  const app = Fastify({
    loggerInstance: runtime.log,
    // Only behind a proxy we run may X-Forwarded-For name the client: login limits per IP depend on it.
    trustProxy:
      typeof runtime.config.trustProxy === 'number'
        ? (
            (hops) => (_address: string, hop: number) =>
              hop < hops
          )(runtime.config.trustProxy)
        : runtime.config.trustProxy,
    bodyLimit: 8 * 1024 * 1024,
    // A client must finish its headers within HEADERS_TIMEOUT_MS and its whole request within requestTimeout
    // (a trickled body is cut off), and a kept-alive connection may wait KEEP_ALIVE_TIMEOUT_MS for its next
    // request. There is no socket idle timeout: it would also cut a response still being worked on (a large
    // import takes minutes after its upload has arrived).
    requestTimeout: runtime.config.requestTimeoutSeconds * 1000,
    connectionTimeout: 0,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // Node checks those timeouts on an interval (30 s by default); check often enough to honour short ones.
    http: {
      connectionsCheckingInterval: Math.min(5_000, (runtime.config.requestTimeoutSeconds * 1000) / 2),
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, runtime.config.requestTimeoutSeconds * 1000),
    },
    // Refusals Node makes before routing (a timed-out or malformed request) in our shapes, not Fastify's.
    clientErrorHandler: answerClientError(CURRENT_VERSION),
    // Ids are at most 100 characters; a longer path segment is refused before routing (in our shape, below).
    routerOptions: { maxParamLength: 200 },
    // The router's own refusals (a path that is not valid percent-encoding, a segment too long) are rendered
    // like every other refusal, with API-Version, and never echo the path.
    frameworkErrors: (error, request, reply) => {
      const status = error.statusCode === 414 ? 414 : 400;
      const message =
        status === 414
          ? 'The request path is too long'
          : 'The request path is not valid percent-encoded UTF-8';
      const rendered = renderError(new ApiError(status, message), shapeForPath(request.url));
      const raw = reply as unknown as FastifyReply;
      raw.header('API-Version', CURRENT_VERSION).status(rendered.status).headers(rendered.headers);
      raw.send(rendered.body);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Observability first, so its hooks see every request (docs/operations.md): a span per request when tracing,
  // and the request metrics.
  const tracing = requestTracing();
  if (tracing) await app.register(tracing);
  countRequests(app as never, runtime.metrics);
  // The shared caches' subscription (a Redis or database connection) ends with the app.
  app.addHook('onClose', () => runtime.caches.close());
  boundJsonDepth(app as never);
  trackRequestPaths(app as never);
  app.decorateRequest('apiVersion', CURRENT_VERSION);
  app.decorateRequest('apiVersionAsked', false);
  app.decorateRequest('caller', null);
  // Portal sessions: the portal_token cookie.
  await app.register(cookie);

  // Query strings, params and headers arrive as text, so they are coerced to their schema types; a JSON
  // body is already typed and is validated as sent (a number stays a number, "3" stays a string).
  const coercing = validator({ coerceTypes: 'array' });
  const strict = validator({ coerceTypes: false });
  app.setValidatorCompiler(({ schema, httpPart }) =>
    validatorCompiledOnFirstUse(() =>
      (httpPart === 'body' ? strict : coercing).compile(withIntegerBounds(schema)),
    ),
  );
  app.setSerializerCompiler(serializerCompiledOnFirstUse);

  // Versioning (CONTRACT sections 2 and 11, docs/versioning.md): a request may pin a known version with the
  // API-Version header; without one, the guards answer it as of its organization's pinned version
  // (useOrganizationVersion). Every response names the version in force, and one in force that is deprecated
  // carries Deprecation, Sunset and a Link to its successor. A version past its sunset is refused when asked for.
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
    if (versionStatus(version, runtime.clock.now()) === 'sunset') {
      throw ApiError.badRequest(
        `API-Version ${version} is retired; use ${servedVersion(version, runtime.clock.now())} (GET /api/version)`,
      );
    }
    request.apiVersion = version;
    request.apiVersionAsked = true;
    reply.header('API-Version', version);
  });
  app.addHook('onSend', async (request, reply) => {
    const headers = deprecationHeaders(request.apiVersion, runtime.clock.now());
    if (headers) reply.headers(headers);
  });

  // A streamed upload that says up front it is too large is refused before it is read (multipart bodies
  // are not held to bodyLimit by Fastify: the handler reads them).
  app.addHook('preParsing', async (request) => {
    const limit = request.routeOptions.config.uploadLimit;
    const declared = Number(request.headers['content-length']);
    if (limit !== undefined && Number.isFinite(declared) && declared > limit) {
      throw new ApiError(413, `The request body is larger than this route's limit of ${limit} bytes`);
    }
  });

  // Text the database cannot store (NUL) or that is not Unicode (a lone surrogate) is refused for every
  // string a client sends, before any handler or SQL sees it.
  app.addHook('preValidation', async (request) => {
    for (const [part, value] of [
      ['params', request.params],
      ['querystring', request.query],
      ['body', request.body],
    ] as const) {
      const where = findUnstorableText(value, part);
      if (where) throw ApiError.badRequest(`${where} must not contain NUL characters or invalid Unicode`);
    }
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const apiError = toApiError(error);
    const rendered = renderError(apiError ?? error, shapeForPath(request.url));
    if (rendered.status >= 500) request.log.error({ err: error }, 'request failed');
    reply.status(rendered.status).headers(rendered.headers).send(rendered.body);
  });

  let consoleServing: ConsoleServing | undefined;
  app.setNotFoundHandler(async (request, reply) => {
    if (consoleServing?.fallback(request, reply)) return reply;
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
          'SMS/MMS messaging, cloud phone system and AI voice agents. Developer API (`/api/v2`, `x-api-key`), ' +
          'portal API (`/v2/portal`, session token), key and webhook management (`/api/api-keys`, ' +
          '`/api/webhooks`, session token) and the operator API (`/admin/v1`). Operation ids without a prefix ' +
          'are the developer API (the SDK names its methods after them); `portal.`, `manage.` and `admin.` ' +
          'name the other interfaces.',
      },
      components: { securitySchemes: SECURITY_SCHEMES as never },
    },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => ({
    ...withDocumentedRequestBodies(app.swagger()),
    webhooks: webhooksDocument(runtime.events.definitions()),
  }));
  registerApiReference(app, '/openapi.json');

  // Every module's routes, per interface. Without ADMIN_TOKEN the operator API does not exist (404), and
  // test controls exist only under APP_ENV=test.
  const testing = runtime.config.appEnv === 'test';
  for (const name of INTERFACE_NAMES) {
    if (name === 'operator' && !runtime.config.adminToken) continue;
    const plugins: RoutePlugin[] = [];
    for (const { definition, services } of runtime.modules) {
      for (const routes of definition.routes?.[name] ?? [])
        plugins.push(routes(services, runtime, runtime.use));
      if (name === 'operator' && testing) {
        for (const routes of definition.testControls ?? []) {
          plugins.push(routes(services, runtime, runtime.use));
        }
      }
    }
    await mountInterface(app as unknown as App, runtime.interfaces[name], plugins);
  }

  // The web console at `/`, with the SPA fallback for its own paths (the not-found handler above).
  consoleServing = await serveConsole(app as unknown as App);

  return app as unknown as App;
}

const KEEP_ALIVE_TIMEOUT_MS = 5_000;
const HEADERS_TIMEOUT_MS = 10_000;
const INT32 = { minimum: -2_147_483_648, maximum: 2_147_483_647 };

/**
 * Every integer a client sends fits PostgreSQL's `integer` unless its schema says otherwise: an integer
 * schema without bounds gets the 32-bit ones, so an oversized number is a 400, never a database error.
 */
export function withIntegerBounds(schema: unknown): object {
  if (Array.isArray(schema)) return schema.map(withIntegerBounds);
  if (!schema || typeof schema !== 'object') return schema as object;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) copy[key] = withIntegerBounds(value);
  // TypeBox marks its schemas with symbol keys (Kind); Object.entries skips them, which ajv does not need.
  if (copy.type === 'integer') {
    copy.minimum ??= INT32.minimum;
    copy.maximum ??= INT32.maximum;
  }
  return copy;
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
