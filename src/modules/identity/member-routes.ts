// The organization's members on the portal (CONTRACT section 11, docs/members.md): thin handlers over
// MemberService. Listing (members and invitations) is for every member; inviting, revoking an invitation,
// changing a role and removing need owner or admin (the guard's `manager`).
import { type TSchema, Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, ROLES, type Role } from '../../platform/http/caller.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import type { Actor } from './members.ts';
import type { IdentityServices } from './routes.ts';

const tags = ['Members'];
const manage = { role: 'manager', errorStatuses: [409] } as const;

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const MemberSchema = Type.Object({
  userId: Nullable(Type.String({ description: 'null while invited: not a member yet' })),
  email: Type.String(),
  name: Nullable(
    Type.String({ description: "A member's name; for an invitation, the name the inviter gave" }),
  ),
  role: Type.Enum(ROLES),
  status: Type.Enum(['active', 'invited', 'expired'], {
    description:
      'active: a member; invited: an invitation not answered yet; expired: one not answered in time ' +
      '(invite again to renew it, or revoke it)',
  }),
  joinedAt: Nullable(Type.String({ format: 'date-time' })),
  invitation: Nullable(
    Type.Object({
      id: Type.String({ description: 'Revoke with DELETE /v2/portal/members/invitations/{invitationId}' }),
      invitedAt: Type.String({ format: 'date-time', description: 'When it was last sent' }),
      expiresAt: Type.String({ format: 'date-time' }),
    }),
  ),
});
const InvitationSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Nullable(Type.String()),
  role: Type.Enum(ROLES),
  status: Type.Enum(['pending', 'expired']),
  invitedBy: Nullable(Type.String({ description: 'The user id of who sent it last' })),
  invitedAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.String({ format: 'date-time' }),
});
const MemberParams = Type.Object({ userId: Type.String({ minLength: 1, maxLength: 100 }) });
const InvitationParams = Type.Object({ invitationId: Type.String({ minLength: 1, maxLength: 100 }) });

function actorOf(request: Parameters<typeof callerOf>[0]): Actor {
  const caller = callerOf(request);
  return { organizationId: caller.organizationId, userId: caller.userId!, role: caller.role as Role };
}

export const memberRoutes: ModuleRoutes<IdentityServices> =
  ({ members, invitations }) =>
  async (app: App) => {
    app.get(
      '/members',
      {
        schema: {
          operationId: 'members.list',
          tags,
          summary:
            "The organization's members and their roles, with the invitations not answered yet (any member may read)",
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
            'Records an invitation, good for 7 days, listed as `invited` until it is answered; nobody becomes a ' +
            'member without accepting. A person who can sign in is told by mail and accepts or declines in the ' +
            'portal (POST /v2/portal/invitations/{id}/accept); a person without an account gets one and a mail ' +
            'with a link to choose a password, which accepts it. Inviting the same e-mail again refreshes the ' +
            'invitation (new role, 7 more days, mailed again). Already a member: 409 MEMBER_EXISTS.',
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

    app.get(
      '/members/invitations',
      {
        schema: {
          operationId: 'members.invitations.list',
          tags,
          summary:
            "The organization's invitations not answered yet, expired ones included (any member may read)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(InvitationSchema) },
        },
      },
      async (request) =>
        pageResponse(await invitations.organizationList(callerOf(request).organizationId, request.query)),
    );

    app.delete(
      '/members/invitations/:invitationId',
      {
        config: manage,
        schema: {
          operationId: 'members.invitations.revoke',
          tags,
          summary:
            'Revoke an invitation not answered yet (owner or admin; only an owner revokes an owner one)',
          description: 'It leaves the list, can no longer be accepted, and its mailed link stops working.',
          params: InvitationParams,
          response: { 200: envelope(Type.Object({ id: Type.String(), revoked: Type.Literal(true) })) },
        },
      },
      async (request) => {
        await members.revokeInvitation(actorOf(request), request.params.invitationId);
        return { success: true as const, data: { id: request.params.invitationId, revoked: true as const } };
      },
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
