// The session guard for everything a signed-in person calls: the portal (`/v2/portal/*`) and key and webhook
// management (`/api/api-keys`, `/api/webhooks`). Reuse it from any route plugin:
//
//   app.addHook('preHandler', requireSession(ctx));                       // every route of the plugin
//   app.post('/x', { preHandler: [requireRole('owner', 'admin'), requireStepUp(ctx)] }, handler);
//   const session = currentSession(request);                              // in the handler
//
// The token comes from `Authorization: Bearer` or, failing that, the `portal_token` cookie (spec
// "Authentication"). The 401 codes say exactly what happened (see SessionService.authenticate and
// docs/auth.md). A user who must change their password may only change it, see who they are, refresh and
// sign out; everything else answers 403 FORBIDDEN.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { AuthenticatedSession, IssuedToken } from '../../modules/identity/sessions.ts';
import { AUTH_MESSAGES } from '../../modules/identity/sessions.ts';
import type { Role } from '../../modules/identity/users.ts';
import { ApiError } from '../errors.ts';
import { bearerToken } from './secrets.ts';

export const SESSION_COOKIE = 'portal_token';
/** How long a two-factor verification counts as fresh for sensitive actions (CONTRACT section 4). */
export const STEP_UP_WINDOW_SECONDS = 10 * 60;

export type PortalSession = AuthenticatedSession;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the session guard; null on routes without it. */
    session: PortalSession | null;
  }
}

export interface SessionGuardOptions {
  /** Accept a token past its expiry (refresh and logout only). */
  allowExpired?: boolean;
  /** Allow the route while the user must still change their password. */
  allowPendingPasswordChange?: boolean;
}

/** The session token of the request: the Bearer header wins over the cookie. */
export function sessionTokenOf(request: FastifyRequest): string | undefined {
  const fromHeader = bearerToken(request.headers.authorization);
  if (fromHeader) return fromHeader;
  const fromCookie = request.cookies?.[SESSION_COOKIE];
  return fromCookie || undefined;
}

/** Authenticates the request's session token and attaches it as `request.session`. */
export async function authenticateSession(
  request: FastifyRequest,
  ctx: AppContext,
  options: SessionGuardOptions = {},
): Promise<PortalSession> {
  const token = sessionTokenOf(request);
  if (!token) throw ApiError.unauthorized(AUTH_MESSAGES.required, 'AUTH_REQUIRED');
  const session = await ctx.sessions.authenticate(token, { allowExpired: options.allowExpired });
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

/** preHandler: the request must carry a valid session. */
export function requireSession(ctx: AppContext, options: SessionGuardOptions = {}) {
  return async (request: FastifyRequest) => {
    await authenticateSession(request, ctx, options);
  };
}

/** The session attached by the guard; a route that forgot the guard fails loudly rather than openly. */
export function currentSession(request: FastifyRequest): PortalSession {
  if (!request.session) throw new Error('currentSession() called on a route without the session guard');
  return request.session;
}

/** preHandler (after the guard): the caller's role in the session's organization must be one of `roles`. */
export function requireRole(...roles: Role[]) {
  return async (request: FastifyRequest) => {
    const session = currentSession(request);
    if (!session.role || !roles.includes(session.role)) {
      throw ApiError.forbidden(`This needs the role ${roles.join(' or ')} in the organization`);
    }
  };
}

/** `member` may read; `owner` and `admin` may manage (CONTRACT section 4). */
export const requireManager = () => requireRole('owner', 'admin');

/** True when the session has had a two-factor verification within the last 10 minutes. */
export function hasFreshVerification(session: PortalSession, nowMs: number): boolean {
  return (
    session.mfaVerifiedAt !== null && nowMs - session.mfaVerifiedAt.getTime() < STEP_UP_WINDOW_SECONDS * 1000
  );
}

/**
 * preHandler (after the guard) for sensitive actions: a user with 2FA on needs a fresh verification
 * (POST /v2/portal/auth/2fa/verify) within the last 10 minutes, else 403 MFA_STEP_UP_REQUIRED.
 * Users without 2FA pass: there is nothing to step up to.
 */
export function requireStepUp(ctx: AppContext) {
  return async (request: FastifyRequest) => {
    const session = currentSession(request);
    if (session.twoFactorEnabled && !hasFreshVerification(session, ctx.clock.nowMs())) {
      throw new ApiError(
        403,
        'This action needs fresh two-factor verification: POST /v2/portal/auth/2fa/verify with a code, then retry',
        { code: 'MFA_STEP_UP_REQUIRED' },
      );
    }
  };
}

/** Sets the `portal_token` cookie: HttpOnly, SameSite=Lax, Path=/, Secure in production, Max-Age = lifetime. */
export function setSessionCookie(reply: FastifyReply, ctx: AppContext, issued: IssuedToken): void {
  reply.setCookie(SESSION_COOKIE, issued.token, {
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: ctx.config.appEnv === 'production',
    maxAge: issued.maxAgeSeconds,
  });
}

export function clearSessionCookie(reply: FastifyReply, ctx: AppContext): void {
  reply.clearCookie(SESSION_COOKIE, {
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: ctx.config.appEnv === 'production',
  });
}
