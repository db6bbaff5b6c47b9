// The organization's members on the portal (CONTRACT section 11): thin handlers over MemberService. Listing
// is for every member; inviting, changing a role and removing need owner or admin (the guard's `manager`).
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, ROLES, type Role } from '../../platform/http/caller.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import type { Actor } from './members.ts';
import type { IdentityServices } from './routes.ts';

const tags = ['Members'];
const manage = { role: 'manager', errorStatuses: [409] } as const;

const MemberSchema = Type.Object({
  userId: Type.String(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Type.Enum(ROLES),
  status: Type.Enum(['active', 'invited'], {
    description: 'invited: has not chosen a password through the invitation yet',
  }),
  joinedAt: Type.String({ format: 'date-time' }),
});
const MemberParams = Type.Object({ userId: Type.String({ minLength: 1, maxLength: 100 }) });

function actorOf(request: Parameters<typeof callerOf>[0]): Actor {
  const caller = callerOf(request);
  return { organizationId: caller.organizationId, userId: caller.userId!, role: caller.role as Role };
}

export const memberRoutes: ModuleRoutes<IdentityServices> =
  ({ members }) =>
  async (app: App) => {
    app.get(
      '/members',
      {
        schema: {
          operationId: 'members.list',
          tags,
          summary: "The organization's members and their roles (any member may read)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(MemberSchema) },
        },
      },
      async (request) => pageResponse(await members.list(callerOf(request).organizationId, request.query)),
    );

    app.post(
      '/members',
      {
        config: manage,
        schema: {
          operationId: 'members.invite',
          tags,
          summary: 'Invite someone by e-mail (owner or admin); only an owner may invite an owner',
          description:
            'A person with an account becomes a member at once and is told by mail. A person without one gets ' +
            'an account and a mail with a link to choose a password (good for 7 days); they are listed as ' +
            '`invited` until they do. Already a member: 409 MEMBER_EXISTS.',
          body: Type.Object(
            {
              email: Type.String({ format: 'email', maxLength: 320 }),
              role: Type.Enum(ROLES),
              name: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()])),
            },
            { additionalProperties: false },
          ),
          response: { 201: envelope(MemberSchema) },
        },
      },
      async (request, reply) =>
        reply
          .status(201)
          .send({ success: true as const, data: await members.invite(actorOf(request), request.body) }),
    );

    app.patch(
      '/members/:userId',
      {
        config: manage,
        schema: {
          operationId: 'members.update',
          tags,
          summary: "Change a member's role; the last owner stays an owner (409 LAST_OWNER)",
          params: MemberParams,
          body: Type.Object({ role: Type.Enum(ROLES) }, { additionalProperties: false }),
          response: { 200: envelope(MemberSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await members.changeRole(actorOf(request), request.params.userId, request.body.role),
      }),
    );

    app.delete(
      '/members/:userId',
      {
        config: manage,
        schema: {
          operationId: 'members.remove',
          tags,
          summary: 'Remove a member; their sessions in this organization end. The last owner stays (409)',
          params: MemberParams,
          response: { 200: envelope(Type.Object({ removed: Type.Literal(true) })) },
        },
      },
      async (request) => {
        await members.remove(actorOf(request), request.params.userId);
        return { success: true as const, data: { removed: true as const } };
      },
    );
  };
