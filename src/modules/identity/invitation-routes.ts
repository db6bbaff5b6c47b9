// The signed-in person's own invitations to other organizations (docs/members.md), on the portal: thin handlers
// over InvitationService. Any signed-in person, whatever their role where they are signed in, answers their
// own; an invitation addressed to someone else is not found (404). Allowed in a suspended organization too:
// joining another is one's own account's business, and a way out.
import { type TSchema, Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, ROLES } from '../../platform/http/caller.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { currentSession } from './guard.ts';
import type { IdentityServices } from './routes.ts';

const tags = ['Invitations'];
const answer = { allowSuspended: true, errorStatuses: [409, 410] };
/** What accepting and declining refuse alike. */
const ANSWER_REFUSALS =
  'Not yours, revoked or unknown: 404. Expired: 410 INVITATION_EXPIRED. Already accepted or declined: ' +
  '409 INVITATION_ANSWERED.';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const ReceivedInvitationSchema = Type.Object({
  id: Type.String(),
  organization: Type.Object({ id: Type.String(), name: Type.String() }),
  role: Type.Enum(ROLES, { description: 'The role accepting gives' }),
  invitedBy: Nullable(Type.Object({ name: Nullable(Type.String()), email: Type.String() })),
  status: Type.Enum(['pending', 'accepted', 'declined', 'revoked']),
  invitedAt: Type.String({ format: 'date-time', description: 'When it was last sent' }),
  expiresAt: Type.String({ format: 'date-time' }),
});
const InvitationParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

export const invitationRoutes: ModuleRoutes<IdentityServices> =
  ({ invitations, users }) =>
  async (app: App) => {
    app.get(
      '/invitations',
      {
        config: { allowSuspended: true },
        schema: {
          operationId: 'invitations.list',
          tags,
          summary: 'Your invitations to organizations, not answered and not expired, newest first',
          description:
            "Matched by your account's e-mail. GET /v2/portal/auth/me counts them (pendingInvitations).",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(ReceivedInvitationSchema) },
        },
      },
      async (request) => {
        const session = currentSession(request);
        const user = await users.get(session.userId);
        return pageResponse(
          await invitations.received(user, callerOf(request).organizationId, request.query),
        );
      },
    );

    app.post(
      '/invitations/:id/accept',
      {
        config: answer,
        schema: {
          operationId: 'invitations.accept',
          tags,
          summary:
            'Accept an invitation: you become a member with its role (switch to it with switch-organization)',
          description: ANSWER_REFUSALS,
          params: InvitationParams,
          response: { 200: envelope(ReceivedInvitationSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await invitations.accept(currentSession(request).userId, request.params.id),
      }),
    );

    app.post(
      '/invitations/:id/decline',
      {
        config: answer,
        schema: {
          operationId: 'invitations.decline',
          tags,
          summary: 'Decline an invitation: nothing changes, and the organization no longer lists it',
          description: ANSWER_REFUSALS,
          params: InvitationParams,
          response: { 200: envelope(ReceivedInvitationSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await invitations.decline(currentSession(request).userId, request.params.id),
      }),
    );
  };
