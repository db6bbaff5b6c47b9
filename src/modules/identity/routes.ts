// Portal sign-in routes (prefix /v2/portal/auth): thin handlers over PortalAuthService. Errors in Shape A.
import type { FastifyReply } from 'fastify';
import type { App } from '../../app.ts';
import type { AppContext } from '../../context.ts';
import {
  authenticateSession,
  clearSessionCookie,
  currentSession,
  requireSession,
  requireStepUp,
  STEP_UP_WINDOW_SECONDS,
  setSessionCookie,
} from '../../platform/auth/session-guard.ts';
import { ApiError } from '../../platform/errors.ts';
import { ErrorShapeA, envelope } from '../../platform/http/schemas.ts';
import { rateLimitHeaders } from '../../platform/rate-limit.ts';
import {
  ChangePasswordBody,
  CodeBody,
  LoginBody,
  LoginResponse,
  LoginVerifyBody,
  MeData,
  RecoveryCodesResponse,
  RefreshData,
  RegisterBody,
  ResetConfirmBody,
  ResetConfirmedResponse,
  ResetRequestBody,
  ResetRequestedResponse,
  SessionResponse,
  SignedOutEverywhereResponse,
  SignedOutResponse,
  SwitchOrganizationBody,
  TwoFactorDisabledResponse,
  TwoFactorSetupResponse,
  VerifiedResponse,
} from './schemas.ts';
import type { SessionResult } from './service.ts';
import type { User } from './users.ts';

const tags = ['Portal auth'];
const security: { [name: string]: string[] }[] = [{ session: [] }, { sessionCookie: [] }];
const errors = {
  400: ErrorShapeA,
  401: ErrorShapeA,
  403: ErrorShapeA,
  404: ErrorShapeA,
  409: ErrorShapeA,
  429: ErrorShapeA,
};

function portalUser(user: User, twoFactorEnabled: boolean) {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    requirePasswordChange: user.requirePasswordChange,
    twoFactorEnabled,
    createdAt: user.createdAt.toISOString(),
  };
}

/** The standard session response (spec "Login response"), with the cookie set. */
function sendSession(reply: FastifyReply, ctx: AppContext, result: SessionResult, status = 200) {
  setSessionCookie(reply, ctx, result.issued);
  return reply.status(status).send({
    success: true as const,
    data: {
      token: result.issued.token,
      user: portalUser(result.user, result.twoFactorEnabled),
      availableOrganizations: result.memberships.map((m) => ({
        id: m.organizationId,
        name: m.organizationName,
        role: m.role,
      })),
      requiresOrgSelection: result.memberships.length > 1,
      requirePasswordChange: result.user.requirePasswordChange,
      organizationId: result.organizationId,
      expiresAt: result.issued.expiresAt.toISOString(),
    },
  });
}

export async function portalAuthRoutes(app: App, ctx: AppContext) {
  const session = requireSession(ctx);
  // What a user who must change their password may still do: change it, see who they are, sign out.
  const sessionPendingOk = requireSession(ctx, { allowPendingPasswordChange: true });
  const sessionExpiredOk = requireSession(ctx, { allowExpired: true, allowPendingPasswordChange: true });

  app.post(
    '/login',
    {
      schema: {
        tags,
        summary: 'Sign in; answers a session, or a two-factor challenge when 2FA is on',
        body: LoginBody,
        response: { 200: LoginResponse, ...errors },
      },
    },
    async (request, reply) => {
      const result = await ctx.portalAuth.login({ ...request.body, ip: request.ip });
      reply.headers(rateLimitHeaders(result.rateLimit));
      if (result.kind === 'challenge') {
        // No cookie: the challenge is not a session.
        return reply.send({
          success: true as const,
          data: {
            requiresTwoFactor: true as const,
            tempToken: result.tempToken,
            expiresAt: result.expiresAt.toISOString(),
          },
        });
      }
      return sendSession(reply, ctx, result);
    },
  );

  app.post(
    '/2fa/login-verify',
    {
      schema: {
        tags,
        summary: 'Complete a two-factor login challenge with a TOTP or recovery code',
        body: LoginVerifyBody,
        response: { 200: SessionResponse, ...errors },
      },
    },
    async (request, reply) => sendSession(reply, ctx, await ctx.portalAuth.loginVerify(request.body)),
  );

  app.post(
    '/register',
    {
      schema: {
        tags,
        summary: 'Create an account and its organization (pro plan, trial) and sign in as its owner',
        body: RegisterBody,
        response: { 201: SessionResponse, ...errors },
      },
    },
    async (request, reply) =>
      sendSession(reply, ctx, await ctx.portalAuth.register({ ...request.body, ip: request.ip }), 201),
  );

  app.post(
    '/token/refresh',
    {
      preHandler: sessionExpiredOk,
      schema: {
        tags,
        summary: 'A fresh token for a session that still exists; the expired token is accepted',
        security,
        response: { 200: envelope(RefreshData), ...errors },
      },
    },
    async (request, reply) => {
      const issued = await ctx.sessions.refresh(currentSession(request).sessionId);
      setSessionCookie(reply, ctx, issued);
      return {
        success: true as const,
        data: { accessToken: issued.token, token: issued.token, expiresAt: issued.expiresAt.toISOString() },
      };
    },
  );

  app.post(
    '/logout',
    {
      schema: {
        tags,
        summary: 'End this session and clear the cookie (an expired, revoked or ended session is fine too)',
        security,
        response: { 200: SignedOutResponse, ...errors },
      },
    },
    async (request, reply) => {
      // Logout is idempotent: whatever state the session is in, the client ends up signed out.
      try {
        const current = await authenticateSession(request, ctx, {
          allowExpired: true,
          allowPendingPasswordChange: true,
        });
        await ctx.sessions.end(current.sessionId);
      } catch (error) {
        const code = error instanceof ApiError ? error.code : undefined;
        if (code !== 'SESSION_EXPIRED' && code !== 'TOKEN_REVOKED') {
          if (code === 'TOKEN_INVALID') clearSessionCookie(reply, ctx);
          throw error;
        }
      }
      clearSessionCookie(reply, ctx);
      return { success: true as const, data: { signedOut: true as const } };
    },
  );

  app.post(
    '/logout-all',
    {
      preHandler: session,
      schema: {
        tags,
        summary: 'Sign out everywhere: every session of the user, this one included, is revoked',
        security,
        response: { 200: SignedOutEverywhereResponse, ...errors },
      },
    },
    async (request, reply) => {
      const revokedSessions = await ctx.portalAuth.signOutEverywhere(currentSession(request).userId);
      clearSessionCookie(reply, ctx);
      return { success: true as const, data: { signedOut: true as const, revokedSessions } };
    },
  );

  app.post(
    '/switch-organization',
    {
      preHandler: session,
      schema: {
        tags,
        summary: 'Re-scope the session to another organization of the user; a new token, cookie updated',
        security,
        body: SwitchOrganizationBody,
        response: { 200: SessionResponse, ...errors },
      },
    },
    async (request, reply) =>
      sendSession(
        reply,
        ctx,
        await ctx.portalAuth.switchOrganization(currentSession(request), request.body.organizationId),
      ),
  );

  app.post(
    '/password',
    {
      preHandler: sessionPendingOk,
      schema: {
        tags,
        summary: 'Change the password; other sessions are revoked and this one gets a fresh token',
        security,
        body: ChangePasswordBody,
        response: { 200: SessionResponse, ...errors },
      },
    },
    async (request, reply) =>
      sendSession(reply, ctx, await ctx.portalAuth.changePassword(currentSession(request), request.body)),
  );

  app.post(
    '/password-reset/request',
    {
      schema: {
        tags,
        summary: 'Mail a one-time password reset link (answers the same whether or not the account exists)',
        body: ResetRequestBody,
        response: { 200: ResetRequestedResponse, ...errors },
      },
    },
    async (request) => {
      await ctx.portalAuth.requestPasswordReset(request.body.email);
      return {
        success: true as const,
        data: { message: 'If an account exists for that e-mail, a reset link is on its way' },
      };
    },
  );

  app.post(
    '/password-reset/confirm',
    {
      schema: {
        tags,
        summary: 'Set a new password with a reset token; every session of the user is revoked',
        body: ResetConfirmBody,
        response: { 200: ResetConfirmedResponse, ...errors },
      },
    },
    async (request) => {
      await ctx.portalAuth.confirmPasswordReset(request.body.token, request.body.newPassword);
      return { success: true as const, data: { passwordReset: true as const } };
    },
  );

  app.get(
    '/me',
    {
      preHandler: sessionPendingOk,
      schema: {
        tags,
        summary: 'The signed-in user, the organization and role of this session',
        security,
        response: { 200: envelope(MeData), ...errors },
      },
    },
    async (request) => {
      const current = currentSession(request);
      const { user, organization, role } = await ctx.portalAuth.me(current);
      return {
        success: true as const,
        data: {
          user: portalUser(user, current.twoFactorEnabled),
          organization: {
            id: organization.id,
            name: organization.name,
            plan: organization.plan,
            subscriptionState: organization.subscriptionState,
            region: organization.region,
          },
          role,
        },
      };
    },
  );

  app.post(
    '/2fa/setup',
    {
      preHandler: session,
      schema: {
        tags,
        summary: 'Start two-factor enrolment: a new TOTP secret and its otpauth:// URL',
        security,
        response: { 200: TwoFactorSetupResponse, ...errors },
      },
    },
    async (request) => {
      const current = currentSession(request);
      const user = await ctx.users.get(current.userId);
      return { success: true as const, data: await ctx.twoFactor.setup(current.userId, user.email) };
    },
  );

  app.post(
    '/2fa/enable',
    {
      preHandler: session,
      schema: {
        tags,
        summary: 'Turn two-factor on with a code from the new secret; returns recovery codes, shown once',
        security,
        body: CodeBody,
        response: { 200: RecoveryCodesResponse, ...errors },
      },
    },
    async (request) => ({
      success: true as const,
      data: {
        recoveryCodes: await ctx.portalAuth.enableTwoFactor(currentSession(request), request.body.code),
      },
    }),
  );

  app.post(
    '/2fa/disable',
    {
      preHandler: [session, requireStepUp(ctx)],
      schema: {
        tags,
        summary: 'Turn two-factor off (needs fresh verification, and a code)',
        security,
        body: CodeBody,
        response: { 200: TwoFactorDisabledResponse, ...errors },
      },
    },
    async (request) => {
      await ctx.portalAuth.disableTwoFactor(currentSession(request), request.body.code);
      return { success: true as const, data: { twoFactorEnabled: false as const } };
    },
  );

  app.post(
    '/2fa/verify',
    {
      preHandler: session,
      schema: {
        tags,
        summary: 'Fresh two-factor verification for this session, good for 10 minutes of sensitive actions',
        security,
        body: CodeBody,
        response: { 200: VerifiedResponse, ...errors },
      },
    },
    async (request) => {
      const verifiedAt = await ctx.portalAuth.verifySecondFactor(currentSession(request), request.body.code);
      const verifiedUntil = new Date(verifiedAt.getTime() + STEP_UP_WINDOW_SECONDS * 1000);
      return { success: true as const, data: { verifiedUntil: verifiedUntil.toISOString() } };
    },
  );
}
