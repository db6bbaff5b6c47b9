// Users on the operator API (CONTRACT section 3): provisioning people and their memberships.
import { Type } from 'typebox';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../platform/auth/passwords.ts';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { organizationsModule } from '../organizations/index.ts';
import { PublicUserSchema } from './schemas.ts';
import { publicUser, ROLES, type UserService } from './users.ts';

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
const tags = ['Users'];

export const userOperatorRoutes: ModuleRoutes<{ users: UserService }> =
  ({ users }, platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);
    app.post(
      '/users',
      {
        config: { errorStatuses: [409] },
        schema: {
          operationId: 'users.create',
          tags,
          summary: 'Create a user with memberships',
          body: UserCreate,
          response: { 201: envelope(Type.Object({ id: Type.String(), email: Type.String() })) },
        },
      },
      async (request, reply) => {
        const { memberships, ...fields } = request.body;
        const user = await platform.db.transaction(async (tx) => {
          for (const m of memberships) {
            if (!(await organizations.exists(m.organizationId, tx))) throw ApiError.notFound('Organization');
          }
          const created = await users.create(fields, tx);
          for (const m of memberships) await users.addMembership(created.id, m.organizationId, m.role, tx);
          return created;
        });
        return reply.status(201).send({ success: true, data: { id: user.id, email: user.email } });
      },
    );

    app.patch(
      '/users/:id',
      {
        schema: {
          operationId: 'users.update',
          tags,
          summary: 'Change a user: name, password, or require a password change at next sign-in',
          params: IdParams,
          body: UserPatch,
          response: { 200: envelope(PublicUserSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: publicUser(await users.update(request.params.id, request.body)),
      }),
    );
  };
