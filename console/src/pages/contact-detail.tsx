// One contact: its details, consent (opt out, opt back in with a reason) and the consent history.
import { useQuery } from '@tanstack/react-query';
import { useLocation, useParams } from 'wouter';
import { call, get } from '../api.ts';
import type { Data } from '../shapes.ts';
import {
  ActionButton,
  DataTable,
  ErrorNote,
  Field,
  MutationForm,
  PageHeader,
  text,
  useAction,
  when,
} from '../ui.tsx';
import type { Contact } from './contacts.tsx';

type ConsentEvent = Data<'/v2/portal/contacts/{id}/consent-history'>[number];

export default function ContactDetail() {
  const { id } = useParams<{ id: string }>();
  const [, navigate] = useLocation();
  const path = `/v2/portal/contacts/${encodeURIComponent(id)}`;
  const contact = useQuery({ queryKey: ['contacts', id], queryFn: () => get<Contact>(path) });
  const history = useQuery({
    queryKey: ['contacts', id, 'consent'],
    queryFn: () => get<ConsentEvent[]>(`${path}/consent-history`),
  });
  const optIn = useAction(
    (form) => call('POST', `${path}/opt-in`, { reason: text(form, 'reason') }),
    [['contacts']],
  );

  if (contact.isError) return <ErrorNote error={contact.error} />;
  if (!contact.data) return <p aria-busy="true">Loading…</p>;
  const c = contact.data;
  return (
    <>
      <PageHeader title={c.fullName ?? c.phone}>
        <ActionButton
          label="Delete"
          className="secondary"
          confirm={`Delete ${c.phone}?`}
          run={() => call('DELETE', path)}
          invalidate={[['contacts']]}
          onDone={() => navigate('/contacts')}
        />
      </PageHeader>
      <dl>
        <dt>Phone</dt>
        <dd>{c.phone}</dd>
        <dt>E-mail</dt>
        <dd>{c.email ?? '—'}</dd>
        <dt>Company</dt>
        <dd>{c.company ?? '—'}</dd>
        <dt>Time zone</dt>
        <dd>{c.timezone ?? 'from the phone number'}</dd>
        <dt>Consent</dt>
        <dd>
          {c.optedOut ? `Opted out (${c.optOutMethod ?? 'unknown'}) ${when(c.optedOutAt)}` : 'Subscribed'}
        </dd>
      </dl>
      {c.optedOut ? (
        <MutationForm mutation={optIn} label="Opt back in" submit="Opt in">
          <Field
            label="Reason"
            hint="Required when they opted out by texting STOP: how they asked to come back"
          >
            {(fieldId, hint) => <input id={fieldId} name="reason" maxLength={500} aria-describedby={hint} />}
          </Field>
        </MutationForm>
      ) : (
        <ActionButton
          label="Opt out"
          className="secondary"
          run={() => call('POST', `${path}/opt-out`, {})}
          invalidate={[['contacts']]}
        />
      )}
      <h2>Consent history</h2>
      <ErrorNote error={history.error} />
      <DataTable
        caption="Consent history"
        rows={history.data}
        empty="No consent changes."
        columns={[
          { header: 'When', cell: (e) => when(e.createdAt) },
          { header: 'Change', cell: (e) => e.action.replaceAll('_', ' ') },
          { header: 'How', cell: (e) => e.method ?? '—' },
          { header: 'Reason', cell: (e) => e.reason ?? '—' },
          { header: 'By', cell: (e) => e.actor ?? '—' },
        ]}
      />
    </>
  );
}
