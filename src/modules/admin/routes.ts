// The operator API (CONTRACT section 3): the platform's back office for provisioning organizations, users
// and numbers, and setting billing state. It exists only when ADMIN_TOKEN is set, and answers in Shape A.
// Under APP_ENV=test it also exposes the test controls (the clock; later the simulated carrier).
import { Type } from 'typebox';
import type { App } from '../../app.ts';
import type { AppContext } from '../../context.ts';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../platform/auth/passwords.ts';
import { bearerToken, secretsEqual } from '../../platform/auth/secrets.ts';
import { ApiError } from '../../platform/errors.ts';
import { ErrorShapeA, envelope, IdParams } from '../../platform/http/schemas.ts';
import { publicUser, ROLES } from '../identity/users.ts';
import { carrierTestRoutes } from '../messaging/routes.ts';
import { NUMBER_TYPES, publicPhoneNumber } from '../numbers/service.ts';
import { OrganizationFields, OrganizationSchema } from '../organizations/schemas.ts';
import type { Organization } from '../organizations/service.ts';

const errors = { 400: ErrorShapeA, 401: ErrorShapeA, 404: ErrorShapeA, 409: ErrorShapeA };
const security = [{ admin: [] }];

const OrganizationCreate = Type.Object(
  {
    name: OrganizationFields.name,
    plan: Type.Optional(OrganizationFields.plan),
    subscriptionState: Type.Optional(OrganizationFields.subscriptionState),
    cardVerified: Type.Optional(OrganizationFields.cardVerified),
    region: Type.Optional(OrganizationFields.region),
    monthlyAllowanceSegments: Type.Optional(OrganizationFields.monthlyAllowanceSegments),
    dailyLimitSegments: Type.Optional(OrganizationFields.dailyLimitSegments),
    trialMessageLimit: Type.Optional(OrganizationFields.trialMessageLimit),
    createdAt: Type.Optional(OrganizationFields.createdAt),
  },
  { additionalProperties: false },
);
const OrganizationPatch = Type.Partial(OrganizationCreate, { additionalProperties: false, minProperties: 1 });

const UserCreate = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 320 }),
    password: Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: PASSWORD_MAX_LENGTH }),
    name: Type.Optional(Type.String({ maxLength: 200 })),
    requirePasswordChange: Type.Optional(Type.Boolean()),
    memberships: Type.Array(
      Type.Object(
        { organizationId: Type.String({ minLength: 1 }), role: Type.Enum(ROLES) },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
  },
  { additionalProperties: false },
);
const UserPatch = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 200 })),
    password: Type.Optional(Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: PASSWORD_MAX_LENGTH })),
    requirePasswordChange: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
const UserSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  requirePasswordChange: Type.Boolean(),
  createdAt: Type.String(),
});

const NumberCreate = Type.Object(
  { number: Type.String({ minLength: 1, maxLength: 32 }), type: Type.Enum(NUMBER_TYPES) },
  { additionalProperties: false },
);
const NumberSchema = Type.Object({
  id: Type.String(),
  organizationId: Type.String(),
  number: Type.String(),
  type: Type.Enum(NUMBER_TYPES),
  isDefault: Type.Boolean(),
  createdAt: Type.String(),
});

export function publicOrganization(org: Organization) {
  return { ...org, createdAt: org.createdAt.toISOString(), updatedAt: org.updatedAt.toISOString() };
}

export async function adminRoutes(app: App, ctx: AppContext) {
  const adminToken = ctx.config.adminToken!;

  app.addHook('onRequest', async (request) => {
    const token = bearerToken(request.headers.authorization);
    if (!token) throw ApiError.unauthorized('Operator token required', 'AUTH_REQUIRED');
    if (!secretsEqual(token, adminToken))
      throw ApiError.unauthorized('Invalid operator token', 'TOKEN_INVALID');
  });

  app.post(
    '/organizations',
    {
      schema: {
        tags: ['Operator'],
        summary: 'Create an organization',
        security,
        body: OrganizationCreate,
        response: { 201: envelope(OrganizationSchema), ...errors },
      },
    },
    async (request, reply) => {
      const org = await ctx.organizations.create(request.body);
      return reply.status(201).send({ success: true, data: publicOrganization(org) });
    },
  );

  app.get(
    '/organizations/:id',
    {
      schema: {
        tags: ['Operator'],
        summary: 'Read an organization',
        security,
        params: IdParams,
        response: { 200: envelope(OrganizationSchema), ...errors },
      },
    },
    async (request) => ({
      success: true as const,
      data: publicOrganization(await ctx.organizations.get(request.params.id)),
    }),
  );

  app.patch(
    '/organizations/:id',
    {
      schema: {
        tags: ['Operator'],
        summary: 'Change an organization: plan, subscription state, billing fields, region',
        security,
        params: IdParams,
        body: OrganizationPatch,
        response: { 200: envelope(OrganizationSchema), ...errors },
      },
    },
    async (request) => ({
      success: true as const,
      data: publicOrganization(await ctx.organizations.update(request.params.id, request.body)),
    }),
  );

  app.post(
    '/users',
    {
      schema: {
        tags: ['Operator'],
        summary: 'Create a user with memberships',
        security,
        body: UserCreate,
        response: { 201: envelope(Type.Object({ id: Type.String(), email: Type.String() })), ...errors },
      },
    },
    async (request, reply) => {
      const { memberships, ...fields } = request.body;
      const user = await ctx.db.transaction(async (tx) => {
        for (const m of memberships) {
          if (!(await ctx.organizations.exists(m.organizationId, tx)))
            throw ApiError.notFound('Organization');
        }
        const created = await ctx.users.create(fields, tx);
        for (const m of memberships) await ctx.users.addMembership(created.id, m.organizationId, m.role, tx);
        return created;
      });
      return reply.status(201).send({ success: true, data: { id: user.id, email: user.email } });
    },
  );

  app.patch(
    '/users/:id',
    {
      schema: {
        tags: ['Operator'],
        summary: 'Change a user: name, password, or require a password change at next sign-in',
        security,
        params: IdParams,
        body: UserPatch,
        response: { 200: envelope(UserSchema), ...errors },
      },
    },
    async (request) => ({
      success: true as const,
      data: publicUser(await ctx.users.update(request.params.id, request.body)),
    }),
  );

  app.post(
    '/organizations/:id/numbers',
    {
      schema: {
        tags: ['Operator'],
        summary: 'Give an organization a phone number; its first is the default sender',
        security,
        params: IdParams,
        body: NumberCreate,
        response: { 201: envelope(NumberSchema), ...errors },
      },
    },
    async (request, reply) => {
      const number = await ctx.db.transaction(async (tx) => {
        if (!(await ctx.organizations.exists(request.params.id, tx))) throw ApiError.notFound('Organization');
        return ctx.numbers.add(request.params.id, request.body, tx);
      });
      return reply.status(201).send({ success: true, data: publicPhoneNumber(number) });
    },
  );

  if (ctx.config.appEnv === 'test') await testControlRoutes(app, ctx);
}

/** Controls that only a test deployment has; elsewhere these paths do not exist (404). */
async function testControlRoutes(app: App, ctx: AppContext) {
  app.post(
    '/test/clock',
    {
      schema: {
        tags: ['Operator (test only)'],
        summary: 'Move the server clock (APP_ENV=test only)',
        security,
        body: Type.Union([
          Type.Object({ advanceSeconds: Type.Number() }, { additionalProperties: false }),
          Type.Object({ now: Type.String({ format: 'date-time' }) }, { additionalProperties: false }),
        ]),
        response: { 200: envelope(Type.Object({ now: Type.String() })), ...errors },
      },
    },
    async (request) => {
      const body = request.body as { advanceSeconds?: number; now?: string };
      const now =
        body.now !== undefined ? ctx.clock.set(new Date(body.now)) : ctx.clock.advance(body.advanceSeconds!);
      return { success: true as const, data: { now: now.toISOString() } };
    },
  );

  await carrierTestRoutes(app, ctx, ErrorShapeA);
}
