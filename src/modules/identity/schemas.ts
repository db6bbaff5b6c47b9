// Request and response shapes of portal sign-in (spec "Login request", "Login response", CONTRACT section 4).
import { type Static, Type } from 'typebox';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../platform/auth/passwords.ts';
import { ROLES } from '../../platform/http/caller.ts';
import { envelope } from '../../platform/http/schemas.ts';
import { PLANS, PRODUCTS, REGIONS, SUBSCRIPTION_STATES } from '../organizations/index.ts';

const Email = Type.String({ format: 'email', maxLength: 320 });
const NewPassword = Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: PASSWORD_MAX_LENGTH });
// A password being checked is not held to today's rules: an older, shorter one must still be refused as wrong.
const GivenPassword = Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH });
const Code = Type.String({
  minLength: 6,
  maxLength: 32,
  description: '6-digit TOTP code or a recovery code',
});

export const LoginBody = Type.Object(
  { email: Email, password: GivenPassword, remember: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export const LoginVerifyBody = Type.Object(
  { tempToken: Type.String({ minLength: 1, maxLength: 200 }), code: Code },
  { additionalProperties: false },
);
export const RegisterBody = Type.Object(
  {
    email: Email,
    password: NewPassword,
    name: Type.String({ minLength: 1, maxLength: 200 }),
    organizationName: Type.String({ minLength: 1, maxLength: 200 }),
  },
  { additionalProperties: false },
);
export const SwitchOrganizationBody = Type.Object(
  { organizationId: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);
export const ChangePasswordBody = Type.Object(
  { currentPassword: GivenPassword, newPassword: NewPassword },
  { additionalProperties: false },
);
export const ResetRequestBody = Type.Object({ email: Email }, { additionalProperties: false });
export const ResetConfirmBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200 }), newPassword: NewPassword },
  { additionalProperties: false },
);
export const CodeBody = Type.Object({ code: Code }, { additionalProperties: false });
// Turning 2FA on also asks for the password (docs/auth.md, "Decisions"): a stolen session alone must not be
// able to lock the owner out with a second factor only the thief holds.
export const EnableTwoFactorBody = Type.Object(
  {
    code: Code,
    password: Type.String({
      minLength: 1,
      maxLength: PASSWORD_MAX_LENGTH,
      description: 'The account password, checked like a sign-in',
    }),
  },
  { additionalProperties: false },
);

/** A user as the operator API shows it: never the password hash. */
export const PublicUserSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  requirePasswordChange: Type.Boolean(),
  createdAt: Type.String(),
});
export type PublicUser = Static<typeof PublicUserSchema>;

/** A user as the portal shows them to themselves. */
export const PortalUser = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  requirePasswordChange: Type.Boolean(),
  twoFactorEnabled: Type.Boolean(),
  createdAt: Type.String(),
});
export type PortalUserData = Static<typeof PortalUser>;

export const OrganizationChoice = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Type.Enum(ROLES),
});

export const SessionData = Type.Object({
  token: Type.String({ description: 'Session JWT; also set as the portal_token cookie' }),
  user: PortalUser,
  availableOrganizations: Type.Array(OrganizationChoice),
  requiresOrgSelection: Type.Boolean(),
  requirePasswordChange: Type.Boolean(),
  organizationId: Type.String({ description: 'The organization this token is scoped to' }),
  expiresAt: Type.String({ format: 'date-time', description: 'When the token expires' }),
});

export const ChallengeData = Type.Object({
  requiresTwoFactor: Type.Literal(true),
  tempToken: Type.String({ description: 'Send with a code to POST /v2/portal/auth/2fa/login-verify' }),
  expiresAt: Type.String({ format: 'date-time' }),
});

export const RefreshData = Type.Object({
  accessToken: Type.String(),
  token: Type.String({ description: 'Same as accessToken' }),
  expiresAt: Type.String({ format: 'date-time' }),
});

export const MeData = Type.Object({
  user: PortalUser,
  organization: Type.Object({
    id: Type.String(),
    name: Type.String(),
    plan: Type.Enum(PLANS),
    subscriptionState: Type.Enum(SUBSCRIPTION_STATES),
    region: Type.Enum(REGIONS),
    products: Type.Array(Type.Enum(PRODUCTS)),
  }),
  role: Type.Enum(ROLES),
  availableOrganizations: Type.Array(OrganizationChoice, {
    description: "Every organization the user belongs to (the console's organization switcher)",
  }),
  pendingInvitations: Type.Integer({
    minimum: 0,
    description: 'Invitations to other organizations waiting for an answer (GET /v2/portal/invitations)',
  }),
});

export const SessionResponse = envelope(SessionData);
export const LoginResponse = Type.Union([SessionResponse, envelope(ChallengeData)]);
export const SignedOutResponse = envelope(Type.Object({ signedOut: Type.Literal(true) }));
export const SignedOutEverywhereResponse = envelope(
  Type.Object({ signedOut: Type.Literal(true), revokedSessions: Type.Integer() }),
);
export const ResetRequestedResponse = envelope(Type.Object({ message: Type.String() }));
export const ResetConfirmedResponse = envelope(Type.Object({ passwordReset: Type.Literal(true) }));
export const TwoFactorSetupResponse = envelope(
  Type.Object({ secret: Type.String(), otpauthUrl: Type.String() }),
);
export const RecoveryCodesResponse = envelope(Type.Object({ recoveryCodes: Type.Array(Type.String()) }));
export const TwoFactorDisabledResponse = envelope(Type.Object({ twoFactorEnabled: Type.Literal(false) }));
export const VerifiedResponse = envelope(
  Type.Object({ verifiedUntil: Type.String({ format: 'date-time' }) }),
);
