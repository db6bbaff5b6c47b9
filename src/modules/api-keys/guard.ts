// The developer API's front door (`/api/v2`). Every request passes, in order:
//   1. authentication by `x-api-key` (401 Shape B without code: spec, API key rule 4),
//   2. the plan gate (starter has no API access: 403),
//   3. the request rate limits of the spec's Limits section (429, RateLimit-* headers),
//   4. the route's scope (403 insufficient_scope; a key with no scopes can call nothing).
// Each route declares what it needs in its config: `{ scope, rateLimit: 'messaging' | 'other', sendLimit }`.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../../app.ts';
import type { AppContext } from '../../context.ts';
import { bearerToken } from '../../platform/auth/secrets.ts';
import { ApiError } from '../../platform/errors.ts';
import { type RateLimitRule, type RateLimitState, rateLimitHeaders } from '../../platform/rate-limit.ts';
import type { Organization, Plan } from '../organizations/service.ts';
import { type Scope, scopeSatisfied } from './scopes.ts';
import type { ApiKey } from './service.ts';

export type RateLimitClass = 'messaging' | 'other';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Scope a key needs; undefined means any key with at least one scope. */
    scope?: Scope;
    /** Which request limit counts this route: the messaging product per organization, or per key. */
    rateLimit?: RateLimitClass;
    /** Also counts against the 30 sends per minute per organization. */
    sendLimit?: boolean;
  }
  interface FastifyRequest {
    apiKey?: ApiKey;
    organization?: Organization;
  }
}

// Spec "Request rate limits". Enterprise has no messaging request limit (null).
const MESSAGING_LIMIT_PER_MINUTE: Record<Plan, number | null> = {
  starter: 0,
  pro: 60,
  ultra: 300,
  enterprise: null,
};
const OTHER_LIMIT_PER_MINUTE = 100;
/**
 * Spec "SMS sending endpoints: 30 sends/minute", per organization. One budget whichever way the organization
 * sends: the portal's send route consumes the same rule.
 */
export const SEND_RATE_RULE: RateLimitRule = { name: 'api-sends', limit: 30, windowSeconds: 60 };

const INVALID_KEY = 'Invalid API key';

/** Installs the guard on a plugin scope that holds developer API routes. */
export function installApiKeyGuard(app: App, ctx: AppContext): void {
  app.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config;
    const key = await authenticate(request, ctx);
    const organization = await ctx.organizations.get(key.organizationId);
    if (organization.plan === 'starter') {
      throw ApiError.forbidden('Your plan does not include API access; upgrade to use the developer API');
    }
    request.apiKey = key;
    request.organization = organization;

    await applyRateLimits(reply, ctx, organization, key, config.rateLimit ?? 'other', config.sendLimit);

    if (!scopeSatisfied(key.scopes, config.scope)) {
      throw new ApiError(
        403,
        config.scope
          ? `This API key lacks the scope ${config.scope}`
          : 'This API key has no scopes and can call nothing',
        { code: 'insufficient_scope' },
      );
    }
  });
}

async function authenticate(request: FastifyRequest, ctx: AppContext): Promise<ApiKey> {
  const header = request.headers['x-api-key'];
  const presented = Array.isArray(header) ? header[0] : header;
  if (!presented) {
    // Credentials are not interchangeable: a Bearer value here is a session token or a misplaced key.
    const message = bearerToken(request.headers.authorization)
      ? 'The developer API takes an API key in the x-api-key header, not a Bearer token'
      : 'API key required in the x-api-key header';
    throw new ApiError(401, message);
  }
  const result = await ctx.apiKeys.check(presented.trim());
  if (result.ok) return result.key;
  const messages = {
    unknown: INVALID_KEY,
    revoked: 'This API key has been revoked',
    expired: 'This API key has expired',
    test_key_in_production: 'Test keys (sk_test_) are not accepted in production',
  } as const;
  throw new ApiError(401, messages[result.reason]);
}

async function applyRateLimits(
  reply: FastifyReply,
  ctx: AppContext,
  organization: Organization,
  key: ApiKey,
  kind: RateLimitClass,
  sendLimit: boolean | undefined,
): Promise<void> {
  const checks: { rule: RateLimitRule; subject: string; retryAfter: boolean }[] = [];
  if (kind === 'messaging') {
    const limit = MESSAGING_LIMIT_PER_MINUTE[organization.plan];
    if (limit !== null) {
      checks.push({
        rule: { name: `api-messaging-${organization.plan}`, limit, windowSeconds: 60 },
        subject: organization.id,
        retryAfter: true,
      });
    }
  } else {
    checks.push({
      rule: { name: 'api-other', limit: OTHER_LIMIT_PER_MINUTE, windowSeconds: 60 },
      subject: key.id,
      retryAfter: false,
    });
  }
  if (sendLimit) {
    checks.push({
      rule: SEND_RATE_RULE,
      subject: organization.id,
      retryAfter: true,
    });
  }
  if (checks.length === 0) return;

  let tightest: { state: RateLimitState; retryAfter: boolean } | undefined;
  let refused: { state: RateLimitState; retryAfter: boolean } | undefined;
  for (const check of checks) {
    const state = await ctx.rateLimiter.consume(check.rule, check.subject);
    if (!tightest || state.remaining < tightest.state.remaining)
      tightest = { state, retryAfter: check.retryAfter };
    if (!state.allowed && !refused) refused = { state, retryAfter: check.retryAfter };
  }
  const shown = refused ?? tightest!;
  reply.headers(rateLimitHeaders(shown.state));
  if (refused) {
    const headers: Record<string, string> = rateLimitHeaders(refused.state);
    if (refused.retryAfter) headers['Retry-After'] = String(refused.state.resetSeconds);
    throw new ApiError(429, `Rate limit of ${refused.state.limit} requests per minute exceeded`, {
      code: 'RATE_LIMITED',
      headers,
    });
  }
}
