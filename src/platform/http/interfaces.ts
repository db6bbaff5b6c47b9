// An interface is a way into the product: the developer API (`/api/v2`, API key, Shape B), the portal
// (`/v2/portal`, session, Shape A), key and webhook management (`/api`, session, Shape A), the operator API
// (`/admin/v1`, admin token, Shape A) and the public routes (no credential). A module writes a route once and
// lists the interfaces that serve it; mounting it on an interface decides the guard, the error shape in the
// OpenAPI document, the security requirement, and the operationId namespace.
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import type { ErrorShape } from '../errors.ts';
import type { Idempotency } from '../idempotency.ts';
import type { App } from './app-type.ts';
import type { Caller, InterfaceName } from './caller.ts';
import { addIdempotentWrites, takesIdempotencyKey, withIdempotencyKeyHeader } from './idempotent-writes.ts';
import { ErrorShapeA, ErrorShapeB } from './schemas.ts';
import './route-access.ts';

export type SecurityRequirement = Record<string, string[]>;

/** The security schemes of the OpenAPI document; each interface names the ones it accepts. */
export const SECURITY_SCHEMES = {
  apiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: 'A developer API key (sk_live_…/sk_test_…)',
  },
  bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A portal session token' },
  cookieAuth: {
    type: 'apiKey',
    in: 'cookie',
    name: 'portal_token',
    description: 'The portal session cookie',
  },
  adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (ADMIN_TOKEN)' },
} as const;

export type Guard = (request: FastifyRequest, reply: FastifyReply) => Promise<Caller | null>;

export interface HttpInterface {
  name: InterfaceName;
  /** The path every route of the interface sits under. */
  prefix: string;
  errorShape: ErrorShape;
  security: SecurityRequirement[];
  /** Namespace of operationIds; '' for the developer API, whose ids the SDK is named after. */
  operationPrefix: string;
  /** Prefix of OpenAPI tags, so a product's twins are grouped per interface in /docs. */
  tagPrefix: string;
  /** Statuses every guarded route of the interface may answer besides its own (the guard's refusals). */
  guardStatuses: number[];
  /** Authenticates and authorizes a request per its route config (onRequest: before the body is read). */
  guard?: Guard;
  /**
   * Every write takes an Idempotency-Key (http/idempotent-writes.ts): the same request again answers the
   * first answer, without acting twice.
   */
  idempotentWrites?: Idempotency;
  /** Checks a route's declaration when it is mounted (e.g. that its scope exists); throws to refuse it. */
  checkRoute?: (config: NonNullable<RouteOptions['config']>) => void;
}

/** A route plugin a module mounts on an interface: plain Fastify routes, paths relative to the prefix. */
export type RoutePlugin = (app: App) => void | Promise<void>;

/** Error statuses any route can answer: malformed input, a missing resource. */
const COMMON_ERROR_STATUSES = [400, 404];

/** Mounts `plugins` on `app` under the interface: its guard runs first, its conventions mark every route. */
export async function mountInterface(app: App, iface: HttpInterface, plugins: RoutePlugin[]): Promise<void> {
  await app.register(
    async (scope) => {
      scope.addHook('onRoute', (route) => markRoute(route, iface));
      const guard = iface.guard;
      if (guard) {
        scope.addHook('onRequest', async (request, reply) => {
          request.caller = await guard(request, reply);
        });
      }
      if (iface.idempotentWrites) addIdempotentWrites(scope as App, iface.idempotentWrites);
      for (const plugin of plugins) await plugin(scope as App);
    },
    { prefix: iface.prefix },
  );
}

function markRoute(route: RouteOptions, iface: HttpInterface): void {
  const config = { ...(route.config ?? {}), interface: iface.name } as NonNullable<RouteOptions['config']>;
  route.config = config;
  iface.checkRoute?.(config);
  // A copy: route plugins share schema constants between interfaces (and Fastify reuses a GET's for HEAD).
  const schema = { ...((route.schema ?? {}) as Record<string, unknown>) } as Record<string, unknown> & {
    operationId?: string;
    tags?: string[];
    response?: Record<string, unknown>;
  };
  if (schema.hide) return;
  const anonymous = config.anonymous === true || !iface.guard;
  schema.security = anonymous ? [] : iface.security;
  // The key is validated as a header of the route and named in its OpenAPI parameters (the SDK sends one).
  const keyed =
    iface.idempotentWrites !== undefined && !anonymous && takesIdempotencyKey(route.method, config);
  if (keyed) schema.headers = withIdempotencyKeyHeader(schema.headers);
  if (schema.operationId && !schema.operationId.startsWith(iface.operationPrefix)) {
    schema.operationId = `${iface.operationPrefix}${schema.operationId}`;
  }
  if (schema.tags && iface.tagPrefix) {
    schema.tags = schema.tags.map((tag) =>
      tag.startsWith(iface.tagPrefix) ? tag : `${iface.tagPrefix}${tag}`,
    );
  }
  const errorSchema: TSchema = iface.errorShape === 'A' ? ErrorShapeA : ErrorShapeB;
  const statuses = anonymous ? COMMON_ERROR_STATUSES : [...COMMON_ERROR_STATUSES, ...iface.guardStatuses];
  const response = { ...(schema.response ?? {}) };
  // A route of a product answers 402 SUBSCRIPTION_REQUIRED to an organization without it (CONTRACT 7).
  const productStatuses = config.product && !anonymous ? [402] : [];
  // A keyed write may answer 409 IDEMPOTENCY_KEY_IN_USE and 422 IDEMPOTENCY_KEY_REUSED.
  const keyStatuses = keyed ? [409, 422] : [];
  for (const status of [...statuses, ...productStatuses, ...keyStatuses, ...(config.errorStatuses ?? [])]) {
    response[status] ??= errorSchema;
  }
  schema.response = response;
  route.schema = schema;
}
