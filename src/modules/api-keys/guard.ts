// The developer API's front door (`/api/v2`). Every request passes, in order:
//   1. authentication by `x-api-key` (401 Shape B without code: spec, API key rule 4),
//   2. the account state: suspended (403 ACCOUNT_SUSPENDED), a route of a product the organization lacks
//      (402 SUBSCRIPTION_REQUIRED), then the plan gate (starter has no API access: 403),
//   3. the request rate limits of the spec's Limits section (429, RateLimit-* headers),
//   4. the route's scope (403 insufficient_scope; a key with no scopes can call nothing).
// Each route declares what it needs in its config: `{ scope, rateLimit: 'messaging' | 'other', sendLimit }`.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bearerToken } from '../../platform/auth/secrets.ts';
import type { Clock } from '../../platform/clock.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Caller } from '../../platform/http/caller.ts';
import type { RateLimitClass } from '../../platform/http/route-access.ts';
import { useOrganizationVersion } from '../../platform/http/versioning.ts';
import {
  type RateLimiter,
  type RateLimitRule,
  type RateLimitState,
  rateLimitExceeded,
  rateLimitHeaders,
  SEND_RATE_RULE,
} from '../../platform/rate-limit.ts';
import {
  accountRefusal,
  type Organization,
  type OrganizationService,
  type Plan,
} from '../organizations/index.ts';
import { SCOPES, type Scope, scopeSatisfied } from './scopes.ts';
import type { ApiKey, ApiKeyService } from './service.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key the developer guard authenticated. */
    apiKey?: ApiKey;
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

const INVALID_KEY = 'Invalid API key';

export class DeveloperGuard {
  private readonly apiKeys: ApiKeyService;
  private readonly organizations: OrganizationService;
  private readonly rateLimiter: RateLimiter;
  private readonly clock: Clock;

  constructor(deps: {
    apiKeys: ApiKeyService;
    organizations: OrganizationService;
    rateLimiter: RateLimiter;
    clock: Clock;
  }) {
    this.apiKeys = deps.apiKeys;
    this.organizations = deps.organizations;
    this.rateLimiter = deps.rateLimiter;
    this.clock = deps.clock;
  }

  /** At mount: a route must name a scope that exists, or a typo would lock every key out of it. */
  checkRoute = (config: { scope?: string }): void => {
    if (config.scope !== undefined && !(SCOPES as readonly string[]).includes(config.scope)) {
      throw new Error(`A developer API route declares the unknown scope ${config.scope}`);
    }
  };

  guard = async (request: FastifyRequest, reply: FastifyReply): Promise<Caller> => {
    const config = request.routeOptions.config;
    const { key, organization: record } = await this.authenticate(request);
    // Read with the key (one statement, then cached with it until either changes: ApiKeyService.check).
    const organization = this.organizations.fromRecord(record);
    useOrganizationVersion(request, reply, organization.apiVersion, this.clock.now());
    // Suspended, or a route of a product the organization lacks: refused before anything is counted.
    const refusal = accountRefusal(organization, { product: config.product });
    if (refusal) throw refusal;
    if (organization.plan === 'starter') {
      throw ApiError.forbidden('Your plan does not include API access; upgrade to use the developer API');
    }
    request.apiKey = key;

    await this.applyRateLimits(reply, organization, key, config.rateLimit ?? 'other', config.sendLimit);

    if (!scopeSatisfied(key.scopes, config.scope as Scope | undefined)) {
      throw new ApiError(
        403,
        config.scope
          ? `This API key lacks the scope ${config.scope}`
          : 'This API key has no scopes and can call nothing',
        { code: 'insufficient_scope' },
      );
    }
    const caller: Caller = {
      organizationId: organization.id,
      region: organization.region,
      actor: `api_key:${key.id}`,
      scopes: key.scopes,
      interface: 'developer',
      role: null,
      userId: null,
    };
    // Handlers that need the whole organization (sends check its plan limits) need not read it again.
    this.organizations.remember(caller, organization);
    return caller;
  };

  private async authenticate(request: FastifyRequest): Promise<{ key: ApiKey; organization: unknown }> {
    const header = request.headers['x-api-key'];
    const presented = Array.isArray(header) ? header[0] : header;
    if (!presented) {
      // Credentials are not interchangeable: a Bearer value here is a session token or a misplaced key.
      const message = bearerToken(request.headers.authorization)
        ? 'The developer API takes an API key in the x-api-key header, not a Bearer token'
        : 'API key required in the x-api-key header';
      throw new ApiError(401, message);
    }
    const result = await this.apiKeys.check(presented.trim());
    if (result.ok) return { key: result.key, organization: result.organization };
    const messages = {
      unknown: INVALID_KEY,
      revoked: 'This API key has been revoked',
      expired: 'This API key has expired',
      test_key_in_production: 'Test keys (sk_test_) are not accepted in production',
    } as const;
    throw new ApiError(401, messages[result.reason]);
  }

  private async applyRateLimits(
    reply: FastifyReply,
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
    if (sendLimit) checks.push({ rule: SEND_RATE_RULE, subject: organization.id, retryAfter: true });
    if (checks.length === 0) return;

    let tightest: { state: RateLimitState; retryAfter: boolean } | undefined;
    let refused: { state: RateLimitState; retryAfter: boolean } | undefined;
    for (const check of checks) {
      const state = await this.rateLimiter.consume(check.rule, check.subject);
      if (!tightest || state.remaining < tightest.state.remaining)
        tightest = { state, retryAfter: check.retryAfter };
      if (!state.allowed && !refused) refused = { state, retryAfter: check.retryAfter };
    }
    const shown = refused ?? tightest!;
    reply.headers(rateLimitHeaders(shown.state));
    if (refused) {
      throw rateLimitExceeded(
        refused.state,
        `Rate limit of ${refused.state.limit} requests per minute exceeded`,
        { retryAfter: refused.retryAfter },
      );
    }
  }
}
