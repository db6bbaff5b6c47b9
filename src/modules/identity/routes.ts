// Portal sign-in routes (portal interface, /v2/portal/auth): thin handlers over PortalAuthService. Sign-in,
// registration and password reset are anonymous; the rest take the session the portal's guard checked.
import type { FastifyReply } from 'fastify';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { rateLimitHeaders } from '../../platform/rate-limit.ts';
import { currentSession, type SessionGuard, STEP_UP_WINDOW_SECONDS } from './guard.ts';
import type { InvitationService } from './invitations.ts';
import type { MemberService } from './members.ts';
import type { PasswordResetMail } from './password-reset-mail.ts';
import {
  ChangePasswordBody,
  CodeBody,
  EnableTwoFactorBody,
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
import type { PortalAuthService, SessionResult } from './service.ts';
import type { SessionService } from './sessions.ts';
import type { TwoFactorService } from './two-factor.ts';
import { portalUser, type UserService } from './users.ts';

const tags = ['Auth'];
/** Sign-in routes answer 401 for wrong credentials and 429 past their limits, with or without a session. */
const signIn = { anonymous: true, errorStatuses: [401, 409, 429] };
/**
 * What a user who must change their password may still do: change it, see who they are, sign out. A user of a
 * suspended organization may do the same (their own account, not the organization's).
 */
const pendingOk = { allowPendingPasswordChange: true, allowSuspended: true, errorStatuses: [429] };

/** The standard session response (spec "Login response"), with the cookie set. */
function sendSession(reply: FastifyReply, guard: SessionGuard, result: SessionResult, status = 200) {
  guard.setCookie(reply, result.issued);
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

export interface IdentityServices {
  users: UserService;
  sessions: SessionService;
  twoFactor: TwoFactorService;
  portalAuth: PortalAuthService;
  sessionGuard: SessionGuard;
  passwordResetMail: PasswordResetMail;
  members: MemberService;
  invitations: InvitationService;
}

export const portalAuthRoutes: ModuleRoutes<IdentityServices> =
  ({ users, sessions, twoFactor, portalAuth, sessionGuard }) =>
  async (app: App) => {
    app.post(
      '/auth/login',
      {
        config: signIn,
        schema: {
          operationId: 'auth.login',
          tags,
          summary: 'Sign in; answers a session, or a two-factor challenge when 2FA is on',
          body: LoginBody,
          response: { 200: LoginResponse },
        },
      },
      async (request, reply) => {
        const result = await portalAuth.login({ ...request.body, ip: request.ip });
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
        return sendSession(reply, sessionGuard, result);
      },
    );

    app.post(
      '/auth/2fa/login-verify',
      {
        config: signIn,
        schema: {
          operationId: 'auth.loginVerify',
          tags,
          summary: 'Complete a two-factor login challenge with a TOTP or recovery code',
          body: LoginVerifyBody,
          response: { 200: SessionResponse },
        },
      },
      async (request, reply) => sendSession(reply, sessionGuard, await portalAuth.loginVerify(request.body)),
    );

    app.post(
      '/auth/register',
      {
        config: signIn,
        schema: {
          operationId: 'auth.register',
          tags,
          summary: 'Create an account and its organization (pro plan, trial) and sign in as its owner',
          body: RegisterBody,
          response: { 201: SessionResponse },
        },
      },
      async (request, reply) =>
        sendSession(reply, sessionGuard, await portalAuth.register({ ...request.body, ip: request.ip }), 201),
    );

    app.post(
      '/auth/token/refresh',
      {
        config: { allowExpired: true, allowPendingPasswordChange: true, allowSuspended: true },
        schema: {
          operationId: 'auth.refresh',
          tags,
          summary: 'A fresh token for a session that still exists; the expired token is accepted',
          response: { 200: envelope(RefreshData) },
        },
      },
      async (request, reply) => {
        const issued = await sessions.refresh(currentSession(request).sessionId);
        sessionGuard.setCookie(reply, issued);
        return {
          success: true as const,
          data: { accessToken: issued.token, token: issued.token, expiresAt: issued.expiresAt.toISOString() },
        };
      },
    );

    app.post(
      '/auth/logout',
      {
        config: { anonymous: true, errorStatuses: [401, 403] },
        schema: {
          operationId: 'auth.logout',
          tags,
          summary: 'End this session and clear the cookie (an expired, revoked or ended session is fine too)',
          response: { 200: SignedOutResponse },
        },
      },
      async (request, reply) => {
        // Logout is idempotent: whatever state the session is in, the client ends up signed out.
        try {
          const current = await sessionGuard.authenticate(request, {
            allowExpired: true,
            allowPendingPasswordChange: true,
          });
          await sessions.end(current.sessionId);
        } catch (error) {
          const code = error instanceof ApiError ? error.code : undefined;
          if (code !== 'SESSION_EXPIRED' && code !== 'TOKEN_REVOKED') {
            if (code === 'TOKEN_INVALID') sessionGuard.clearCookie(reply);
            throw error;
          }
        }
        sessionGuard.clearCookie(reply);
        return { success: true as const, data: { signedOut: true as const } };
      },
    );

    app.post(
      '/auth/logout-all',
      {
        config: { allowSuspended: true },
        schema: {
          operationId: 'auth.logoutAll',
          tags,
          summary: 'Sign out everywhere: every session of the user, this one included, is revoked',
          response: { 200: SignedOutEverywhereResponse },
        },
      },
      async (request, reply) => {
        const revokedSessions = await portalAuth.signOutEverywhere(currentSession(request).userId);
        sessionGuard.clearCookie(reply);
        return { success: true as const, data: { signedOut: true as const, revokedSessions } };
      },
    );

    app.post(
      '/auth/switch-organization',
      {
        // To another organization of the user: the way out of a suspended one.
        config: { allowSuspended: true },
        schema: {
          operationId: 'auth.switchOrganization',
          tags,
          summary: 'Re-scope the session to another organization of the user; a new token, cookie updated',
          body: SwitchOrganizationBody,
          response: { 200: SessionResponse },
        },
      },
      async (request, reply) =>
        sendSession(
          reply,
          sessionGuard,
          await portalAuth.switchOrganization(currentSession(request), request.body.organizationId),
        ),
    );

    app.post(
      '/auth/password',
      {
        config: pendingOk,
        schema: {
          operationId: 'auth.changePassword',
          tags,
          summary: 'Change the password; other sessions are revoked and this one gets a fresh token',
          body: ChangePasswordBody,
          response: { 200: SessionResponse },
        },
      },
      async (request, reply) =>
        sendSession(
          reply,
          sessionGuard,
          await portalAuth.changePassword(currentSession(request), request.body),
        ),
    );

    app.post(
      '/auth/password-reset/request',
      {
        config: signIn,
        schema: {
          operationId: 'auth.passwordReset.request',
          tags,
          summary: 'Mail a one-time password reset link (answers the same whether or not the account exists)',
          body: ResetRequestBody,
          response: { 200: ResetRequestedResponse },
        },
      },
      async (request) => {
        await portalAuth.requestPasswordReset(request.body.email, request.ip);
        return {
          success: true as const,
          data: { message: 'If an account exists for that e-mail, a reset link is on its way' },
        };
      },
    );

    app.post(
      '/auth/password-reset/confirm',
      {
        config: signIn,
        schema: {
          operationId: 'auth.passwordReset.confirm',
          tags,
          summary: 'Set a new password with a reset token; every session of the user is revoked',
          body: ResetConfirmBody,
          response: { 200: ResetConfirmedResponse },
        },
      },
      async (request) => {
        await portalAuth.confirmPasswordReset(request.body.token, request.body.newPassword);
        return { success: true as const, data: { passwordReset: true as const } };
      },
    );

    app.get(
      '/auth/me',
      {
        config: pendingOk,
        schema: {
          operationId: 'auth.me',
          tags,
          summary:
            'The signed-in user, the organization and role of this session, and how many invitations wait',
          response: { 200: envelope(MeData) },
        },
      },
      async (request) => {
        const current = currentSession(request);
        const { user, organization, role, memberships, pendingInvitations } = await portalAuth.me(current);
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
              products: organization.products,
            },
            role,
            availableOrganizations: memberships.map((m) => ({
              id: m.organizationId,
              name: m.organizationName,
              role: m.role,
            })),
            pendingInvitations,
          },
        };
      },
    );

    app.post(
      '/auth/2fa/setup',
      {
        schema: {
          operationId: 'auth.twoFactor.setup',
          tags,
          summary: 'Start two-factor enrolment: a new TOTP secret and its otpauth:// URL',
          response: { 200: TwoFactorSetupResponse },
        },
      },
      async (request) => {
        const current = currentSession(request);
        const user = await users.get(current.userId);
        return { success: true as const, data: await twoFactor.setup(current.userId, user.email) };
      },
    );

    app.post(
      '/auth/2fa/enable',
      {
        config: { errorStatuses: [429] },
        schema: {
          operationId: 'auth.twoFactor.enable',
          tags,
          summary:
            'Turn two-factor on with the password and a code from the new secret; returns recovery codes, shown once',
          body: EnableTwoFactorBody,
          response: { 200: RecoveryCodesResponse },
        },
      },
      async (request) => ({
        success: true as const,
        data: { recoveryCodes: await portalAuth.enableTwoFactor(currentSession(request), request.body) },
      }),
    );

    app.post(
      '/auth/2fa/disable',
      {
        config: { stepUp: true, errorStatuses: [429] },
        schema: {
          operationId: 'auth.twoFactor.disable',
          tags,
          summary: 'Turn two-factor off (needs fresh verification, and a code)',
          body: CodeBody,
          response: { 200: TwoFactorDisabledResponse },
        },
      },
      async (request) => {
        await portalAuth.disableTwoFactor(currentSession(request), request.body.code);
        return { success: true as const, data: { twoFactorEnabled: false as const } };
      },
    );

    app.post(
      '/auth/2fa/verify',
      {
        config: { errorStatuses: [429] },
        schema: {
          operationId: 'auth.twoFactor.verify',
          tags,
          summary: 'Fresh two-factor verification for this session, good for 10 minutes of sensitive actions',
          body: CodeBody,
          response: { 200: VerifiedResponse },
        },
      },
      async (request) => {
        const verifiedAt = await portalAuth.verifySecondFactor(currentSession(request), request.body.code);
        const verifiedUntil = new Date(verifiedAt.getTime() + STEP_UP_WINDOW_SECONDS * 1000);
        return { success: true as const, data: { verifiedUntil: verifiedUntil.toISOString() } };
      },
    );
  };
