// Your invitations to other organizations (docs/members.md): accept one to become a member with its role and
// open it at once, or decline it. Reached from the banner every page shows while invitations wait, and from
// the link in the invitation mail.
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { call, data } from '../api.ts';
import type { Item } from '../shapes.ts';
import { ActionButton, ErrorNote, PagedTable, PageHeader, usePagedList, when } from '../ui.tsx';

type ReceivedInvitation = Item<'/v2/portal/invitations'>;

/** Re-scopes the session to the organization just joined and starts the app afresh there (as the switcher). */
function OpenOrganization({ organization }: { organization: { id: string; name: string } }) {
  const client = useQueryClient();
  const [error, setError] = useState<unknown>(null);
  return (
    <>
      <button
        type="button"
        onClick={async () => {
          try {
            await call('POST', '/v2/portal/auth/switch-organization', { organizationId: organization.id });
            client.clear();
            window.location.assign('/');
          } catch (problem) {
            setError(problem);
          }
        }}
      >
        Open {organization.name}
      </button>
      <ErrorNote error={error} />
    </>
  );
}

export default function Invitations() {
  const list = usePagedList<ReceivedInvitation>(['invitations'], '/v2/portal/invitations', 'offset');
  const [joined, setJoined] = useState<ReceivedInvitation | null>(null);
  const answer = (invitation: ReceivedInvitation, verb: 'accept' | 'decline') => () =>
    data<ReceivedInvitation>('POST', `/v2/portal/invitations/${encodeURIComponent(invitation.id)}/${verb}`);
  return (
    <>
      <PageHeader title="Invitations" />
      <p>Organizations that invited you. Nothing changes until you accept; an invitation lasts 7 days.</p>
      {joined ? (
        <div role="status">
          <p>
            You are now a member of {joined.organization.name} ({joined.role}).
          </p>
          <OpenOrganization organization={joined.organization} />
        </div>
      ) : null}
      <PagedTable
        list={list}
        caption="Invitations"
        empty="No invitations waiting."
        columns={[
          { header: 'Organization', cell: (i) => i.organization.name },
          { header: 'Role', cell: (i) => i.role },
          {
            header: 'Invited by',
            cell: (i) => (i.invitedBy ? (i.invitedBy.name ?? i.invitedBy.email) : '—'),
          },
          { header: 'Until', cell: (i) => when(i.expiresAt) },
          {
            header: '',
            cell: (i) => (
              <div className="row-actions">
                <ActionButton
                  label="Accept"
                  run={answer(i, 'accept')}
                  invalidate={[['invitations'], ['me']]}
                  onDone={() => setJoined(i)}
                />
                <ActionButton
                  label="Decline"
                  className="secondary outline"
                  confirm={`Decline the invitation to ${i.organization.name}?`}
                  run={answer(i, 'decline')}
                  invalidate={[['invitations'], ['me']]}
                />
              </div>
            ),
          },
        ]}
      />
    </>
  );
}
