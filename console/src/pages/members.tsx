// Members: who belongs to the organization with what role, and who is invited and has not answered yet;
// owners and admins invite by e-mail (again, to renew or change an invitation), revoke invitations, change
// roles and remove (only an owner touches owners; the last owner stays, which the server enforces).
import { useState } from 'react';
import { call, data } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import type { Item } from '../shapes.ts';
import {
  ActionButton,
  ErrorNote,
  Field,
  MutationForm,
  PagedTable,
  PageHeader,
  Status,
  text,
  useAction,
  usePagedList,
  when,
} from '../ui.tsx';

/** A member (`userId`), or an invitation not answered yet (`invitation`). */
type Member = Item<'/v2/portal/members'>;

function RoleSelect({ member, userId, owner }: { member: Member; userId: string; owner: boolean }) {
  const change = useAction(
    (form) => data('PATCH', `/v2/portal/members/${encodeURIComponent(userId)}`, { role: text(form, 'role') }),
    [['members'], ['me']],
  );
  return (
    <>
      <select
        aria-label={`Role of ${member.email}`}
        defaultValue={member.role}
        disabled={change.isPending}
        onChange={(event) => {
          const form = new FormData();
          form.set('role', event.target.value);
          change.mutate(form);
        }}
      >
        <option value="member">member</option>
        <option value="admin">admin</option>
        <option value="owner" disabled={!owner && member.role !== 'owner'}>
          owner
        </option>
      </select>
      <ErrorNote error={change.error} />
    </>
  );
}

export default function Members() {
  const me = useMe();
  const manager = canManage(me.data);
  const owner = me.data?.role === 'owner';
  const list = usePagedList<Member>(['members'], '/v2/portal/members', 'offset', { limit: 100 });
  const [invited, setInvited] = useState<Member | null>(null);
  const invite = useAction(
    (form) =>
      data<Member>('POST', '/v2/portal/members', { email: text(form, 'email'), role: text(form, 'role') }),
    [['members']],
    setInvited,
  );
  return (
    <>
      <PageHeader title="Members" />
      {manager ? (
        <details>
          <summary>Invite someone</summary>
          <MutationForm
            mutation={invite}
            label="Invite a member"
            submit="Send invitation"
            className="inline-form"
          >
            <Field label="E-mail">{(id) => <input id={id} name="email" type="email" required />}</Field>
            <Field label="Role">
              {(id) => (
                <select id={id} name="role" defaultValue="member">
                  <option value="member">member: reads everything, sends messages</option>
                  <option value="admin">admin: also manages keys, webhooks, numbers, members</option>
                  {owner ? <option value="owner">owner: everything, including owners</option> : null}
                </select>
              )}
            </Field>
          </MutationForm>
          {invited ? (
            <p role="status">
              {`${invited.email} was sent an invitation to join as ${invited.role}; they become a member when they accept it.`}
            </p>
          ) : null}
        </details>
      ) : null}
      <PagedTable
        list={list}
        caption="Members"
        rowKey={(m) => m.userId ?? m.invitation?.id ?? m.email}
        empty="No members."
        columns={[
          { header: 'E-mail', cell: (m) => m.email },
          { header: 'Name', cell: (m) => m.name ?? '—' },
          {
            header: 'Role',
            cell: (m) =>
              manager && m.userId ? (
                <RoleSelect key={`${m.userId}-${m.role}`} member={m} userId={m.userId} owner={owner} />
              ) : (
                m.role
              ),
          },
          { header: 'Status', cell: (m) => <Status value={m.status} /> },
          {
            header: 'Since',
            cell: (m) => (m.invitation ? `invited ${when(m.invitation.invitedAt)}` : when(m.joinedAt)),
          },
          {
            header: '',
            cell: (m) => {
              if (!manager) return null;
              if (m.invitation) {
                const { id } = m.invitation;
                return (
                  <ActionButton
                    label="Revoke"
                    className="secondary outline"
                    confirm={`Revoke the invitation of ${m.email}? Its link stops working.`}
                    run={() => call('DELETE', `/v2/portal/members/invitations/${encodeURIComponent(id)}`)}
                    invalidate={[['members']]}
                  />
                );
              }
              if (!m.userId || m.userId === me.data?.user.id) return null;
              const { userId } = m;
              return (
                <ActionButton
                  label="Remove"
                  className="secondary outline"
                  confirm={`Remove ${m.email} from the organization? Their sessions here end at once.`}
                  run={() => call('DELETE', `/v2/portal/members/${encodeURIComponent(userId)}`)}
                  invalidate={[['members']]}
                />
              );
            },
          },
        ]}
      />
    </>
  );
}
