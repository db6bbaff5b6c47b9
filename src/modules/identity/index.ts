// The identity module: people, their sessions, two-factor and password resets, members and invitations, and
// the session guard of the portal and management interfaces.
import { SessionTokenCodec } from '../../platform/auth/session-token.ts';
import { defineModule } from '../../platform/module.ts';
import { organizationsModule } from '../organizations/index.ts';
import { SessionGuard } from './guard.ts';
import { invitationRoutes } from './invitation-routes.ts';
import { INVITATION_MAIL_QUEUE, InvitationService } from './invitations.ts';
import { memberRoutes } from './member-routes.ts';
import { MemberService } from './members.ts';
import { userOperatorRoutes } from './operator-routes.ts';
import { PasswordResetService } from './password-reset.ts';
import { PASSWORD_RESET_MAIL_QUEUE, PasswordResetMail } from './password-reset-mail.ts';
import { type IdentityServices, portalAuthRoutes } from './routes.ts';
import { PortalAuthService } from './service.ts';
import { SessionService } from './sessions.ts';
import { TwoFactorService } from './two-factor.ts';
import { UserService } from './users.ts';

/** Expired sessions, challenges and reset tokens are kept a day, so their errors still say "expired". */
const EXPIRED_IDENTITY_RETENTION_MS = 24 * 60 * 60 * 1000;
/** Invitations are kept 30 days past their expiry: the organization sees an expired one to renew it. */
const EXPIRED_INVITATION_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export { currentSession, sessionTokenOf } from './guard.ts';
export type { UserService } from './users.ts';

export const identityModule = defineModule({
  name: 'identity',
  create: ({ platform, use }): IdentityServices => {
    const { db, clock, config, rateLimiter, mailer, jobs } = platform;
    const users = new UserService({ db, clock });
    const sessions = new SessionService({ db, clock, codec: new SessionTokenCodec(config.jwtSecret) });
    const twoFactor = new TwoFactorService({ db, clock, box: platform.secretBox('totp-secret') });
    const passwordResetMail = new PasswordResetMail({
      db,
      clock,
      users,
      jobs,
      mailer,
      publicUrl: config.publicUrl,
    });
    const invitations = new InvitationService({
      db,
      clock,
      users,
      jobs,
      mailer,
      pagination: platform.pagination,
      publicUrl: config.publicUrl,
    });
    const portalAuth = new PortalAuthService({
      db,
      clock,
      users,
      organizations: use(organizationsModule).organizations,
      sessions,
      twoFactor,
      passwordResets: new PasswordResetService({ db, clock, users, sessions, invitations }),
      passwordResetMail,
      invitations,
      rateLimiter,
    });
    const sessionGuard = new SessionGuard({
      sessions,
      clock,
      rateLimiter,
      production: config.appEnv === 'production',
      publicOrigin: new URL(config.publicUrl).origin,
    });
    const members = new MemberService({
      db,
      clock,
      users,
      invitations,
      pagination: platform.pagination,
      mail: passwordResetMail,
    });
    return { users, sessions, twoFactor, portalAuth, sessionGuard, passwordResetMail, members, invitations };
  },
  routes: { portal: [portalAuthRoutes, memberRoutes, invitationRoutes], operator: [userOperatorRoutes] },
  // Password-reset and invitation mail is retried from the queue when the mail server fails.
  jobs: ({ passwordResetMail, invitations }) => ({
    [PASSWORD_RESET_MAIL_QUEUE]: passwordResetMail.queue,
    [INVITATION_MAIL_QUEUE]: invitations.queue,
  }),
  retention: ({ sessions, passwordResetMail, invitations }) => [
    {
      name: 'identity.sessions',
      run: async (now) => {
        const removed = await sessions.removeExpired(new Date(now.getTime() - EXPIRED_IDENTITY_RETENTION_MS));
        return removed.sessions + removed.challenges;
      },
    },
    {
      name: 'identity.password-resets',
      run: (now) => passwordResetMail.removeExpired(new Date(now.getTime() - EXPIRED_IDENTITY_RETENTION_MS)),
    },
    {
      name: 'identity.invitations',
      run: (now) => invitations.removeExpired(new Date(now.getTime() - EXPIRED_INVITATION_RETENTION_MS)),
    },
  ],
  // TOTP secrets, bound to their user's id.
  sealed: [
    {
      table: 'user_two_factor',
      key: 'user_id',
      columns: ['secret_sealed'],
      purpose: 'totp-secret',
      associatedData: 'user_id',
    },
  ],
});
