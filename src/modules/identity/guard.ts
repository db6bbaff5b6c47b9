// The session guard of the portal (`/v2/portal/*`) and of key and webhook management (`/api/api-keys`,
// `/api/webhooks`): the interfaces where a signed-in person calls. It turns a request into a Caller and
// enforces what the route's config asks (platform/http/route-access.ts):
//   anonymous                  no session needed (sign-in, registration, password reset)
//   allowExpired               a token past its expiry is accepted (refresh)
//   allowPendingPasswordChange allowed while the user must change their password (me, password, refresh)
//   role: 'manager'            owner or admin (CONTRACT section 4), else 403 FORBIDDEN
//   stepUp                     with 2FA on, a verification within 10 minutes, else 403 MFA_STEP_UP_REQUIRED
//   sendLimit                  counts against the organization's 30 sends per minute (shared with the API)
//   allowSuspended             answered while the organization is suspended (sign-in, me, logout); every other
//                              route answers 403 ACCOUNT_SUSPENDED then
//   product                    an organization without that product gets 402 SUBSCRIPTION_REQUIRED
// The token comes from `Authorization: Bearer` or, failing that, the `portal_token` cookie (spec
// "Authentication"). The 401 codes say exactly what happened (see SessionService.authenticate, docs/auth.md).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bearerToken } from '../../platform/auth/secrets.ts';
import type { Clock } from '../../platform/clock.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Caller } from '../../platform/http/caller.ts';
import { crossOriginRefusal } from '../../platform/http/cross-origin.ts';
import { useOrganizationVersion } from '../../platform/http/versioning.ts';
import {
  type RateLimiter,
  rateLimitExceeded,
  rateLimitHeaders,
  SEND_RATE_RULE,
} from '../../platform/rate-limit.ts';
import { accountRefusal } from '../organizations/index.ts';
import {
  AUTH_MESSAGES,
  type AuthenticatedSession,
  type IssuedToken,
  type SessionService,
} from './sessions.ts';

export const SESSION_COOKIE = 'portal_token';
/** How long a two-factor verification counts as fresh for sensitive actions (CONTRACT section 4). */
export const STEP_UP_WINDOW_SECONDS = 10 * 60;

export type PortalSession = AuthenticatedSession;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the session guard; undefined on routes without a session. */
    session?: PortalSession;
  }
}

export interface SessionOptions {
  /** Accept a token past its expiry (refresh and logout only). */
  allowExpired?: boolean;
  /** Allow the route while the user must still change their password. */
  allowPendingPasswordChange?: boolean;
}

/**
 * The session token of the request: the Bearer header wins over the cookie. Whether a cookie-borne request
 * may change something is the guard's cross-site check (platform/http/cross-origin.ts), not a header of ours:
 * clients built from the spec send none.
 */
export function sessionTokenOf(request: FastifyRequest): string | undefined {
  return bearerToken(request.headers.authorization) ?? request.cookies?.[SESSION_COOKIE] ?? undefined;
}

/** True when the session has had a two-factor verification within the last 10 minutes. */
export function hasFreshVerification(session: PortalSession, nowMs: number): boolean {
  return (
    session.mfaVerifiedAt !== null && nowMs - session.mfaVerifiedAt.getTime() < STEP_UP_WINDOW_SECONDS * 1000
  );
}

/** The session the guard attached; a route without a session fails loudly rather than openly. */
export function currentSession(request: FastifyRequest): PortalSession {
  if (!request.session) throw new Error('currentSession() called on a route without a session');
  return request.session;
}

export class SessionGuard {
  private readonly sessions: SessionService;
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter;
  private readonly production: boolean;
  private readonly publicOrigin: string | undefined;

  constructor(deps: {
    sessions: SessionService;
    clock: Clock;
    rateLimiter: RateLimiter;
    production: boolean;
    /** PUBLIC_URL's origin: a page served there is ours even when a proxy rewrites Host. */
    publicOrigin?: string;
  }) {
    this.sessions = deps.sessions;
    this.clock = deps.clock;
    this.rateLimiter = deps.rateLimiter;
    this.production = deps.production;
    this.publicOrigin = deps.publicOrigin;
  }

  /** The guard of the session interfaces (see the header). */
  guard = async (request: FastifyRequest, reply: FastifyReply): Promise<Caller | null> => {
    const config = request.routeOptions.config;
    // Anonymous routes too: a forged cross-site sign-in would put the victim in the attacker's account.
    // A Bearer token is never sent by a browser on its own, so a request carrying one is not forged.
    if (!bearerToken(request.headers.authorization)) {
      const refusal = crossOriginRefusal(request, this.publicOrigin);
      if (refusal) throw refusal;
    }
    if (config.anonymous) return null;
    const session = await this.authenticate(request, config);
    useOrganizationVersion(request, reply, session.apiVersion, this.clock.now());
    const refusal = accountRefusal(session, config);
    if (refusal) throw refusal;
    if (config.role === 'manager' && session.role !== 'owner' && session.role !== 'admin') {
      throw ApiError.forbidden('This needs the role owner or admin in the organization');
    }
    if (config.stepUp && session.twoFactorEnabled && !hasFreshVerification(session, this.clock.nowMs())) {
      throw new ApiError(
        403,
        'This action needs fresh two-factor verification: POST /v2/portal/auth/2fa/verify with a code, then retry',
        { code: 'MFA_STEP_UP_REQUIRED' },
      );
    }
    if (config.sendLimit) {
      const state = await this.rateLimiter.consume(SEND_RATE_RULE, session.organizationId);
      reply.headers(rateLimitHeaders(state));
      if (!state.allowed) {
        throw rateLimitExceeded(state, `Rate limit of ${state.limit} sends per minute exceeded`, {
          retryAfter: true,
        });
      }
    }
    return {
      organizationId: session.organizationId,
      region: session.region,
      actor: `user:${session.userId}`,
      scopes: null,
      interface: config.interface ?? 'portal',
      role: session.role ?? null,
      userId: session.userId,
    };
  };

  /** Authenticates the request's session token and attaches it as `request.session`. */
  async authenticate(request: FastifyRequest, options: SessionOptions = {}): Promise<PortalSession> {
    const token = sessionTokenOf(request);
    if (!token) throw ApiError.unauthorized(AUTH_MESSAGES.required, 'AUTH_REQUIRED');
    const session = await this.sessions.authenticate(token, { allowExpired: options.allowExpired });
    // The user was removed from the organization this session is scoped to: the session has nothing left.
    if (!session.role) throw ApiError.unauthorized(AUTH_MESSAGES.gone, 'SESSION_EXPIRED');
    if (session.requirePasswordChange && !options.allowPendingPasswordChange) {
      throw ApiError.forbidden(
        'Password change required: change it with POST /v2/portal/auth/password before doing anything else',
      );
    }
    request.session = session;
    return session;
  }

  /** Sets `portal_token`: HttpOnly, SameSite=Lax, Path=/, Secure in production, Max-Age = lifetime. */
  setCookie(reply: FastifyReply, issued: IssuedToken): void {
    reply.setCookie(SESSION_COOKIE, issued.token, {
      httpOnly: true,
      sameSite: 'lax',
      path: '/',
      secure: this.production,
      maxAge: issued.maxAgeSeconds,
    });
  }

  clearCookie(reply: FastifyReply): void {
    reply.clearCookie(SESSION_COOKIE, {
      httpOnly: true,
      sameSite: 'lax',
      path: '/',
      secure: this.production,
    });
  }
}
