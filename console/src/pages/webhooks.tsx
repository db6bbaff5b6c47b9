// Webhook endpoints: add one (URL, events from the catalog) and see its signing secret once; the list; the
// event catalog with each event's description.
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { data } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import type { Data } from '../shapes.ts';
import {
  CopyButton,
  DataTable,
  Field,
  FormDisclosure,
  PagedTable,
  PageHeader,
  text,
  useAction,
  usePagedList,
  when,
} from '../ui.tsx';

export type Webhook = Data<'/api/webhooks/{id}'>;
export type EventType = Data<'/api/webhooks/events'>[number];

export function useEventCatalog() {
  return useQuery({
    queryKey: ['webhooks', 'events'],
    queryFn: () => data<EventType[]>('GET', '/api/webhooks/events'),
    staleTime: Number.POSITIVE_INFINITY,
  });
}

export function SecretShown({ secret, onDone }: { secret: string; onDone: () => void }) {
  return (
    <article role="status" aria-label="Signing secret">
      <p>
        Signing secret:{' '}
        <code className="secret" data-testid="webhook-secret">
          {secret}
        </code>{' '}
        <CopyButton text={secret} />
      </p>
      <p>Store it now: it is not shown again. Verify each delivery's webhook-signature header with it.</p>
      <button type="button" className="secondary" onClick={onDone}>
        I have stored it
      </button>
    </article>
  );
}

export default function Webhooks() {
  const me = useMe();
  const catalog = useEventCatalog();
  const list = usePagedList<Webhook>(['webhooks'], '/api/webhooks', 'offset');
  const [secret, setSecret] = useState<string | null>(null);
  const create = useAction(
    (form) =>
      data<Webhook & { secret: string }>('POST', '/api/webhooks', {
        url: text(form, 'url'),
        events: form.getAll('events').map(String),
        description: text(form, 'description'),
      }),
    [['webhooks']],
    (created) => setSecret(created.secret),
  );
  return (
    <>
      <PageHeader title="Webhooks" />
      {canManage(me.data) ? (
        <FormDisclosure
          summary="Add an endpoint"
          mutation={create}
          label="Add webhook endpoint"
          submit="Add endpoint"
        >
          <div className="grid">
            <Field label="URL" hint="HTTPS in production; we POST signed JSON to it">
              {(id, hint) => <input id={id} name="url" type="url" required aria-describedby={hint} />}
            </Field>
            <Field label="Description">{(id) => <input id={id} name="description" />}</Field>
          </div>
          <fieldset>
            <legend>Events</legend>
            {catalog.data?.map((event) => (
              <label key={event.type}>
                <input type="checkbox" name="events" value={event.type} /> <code>{event.type}</code>
              </label>
            ))}
          </fieldset>
        </FormDisclosure>
      ) : null}
      {secret ? <SecretShown secret={secret} onDone={() => setSecret(null)} /> : null}
      <PagedTable
        list={list}
        caption="Webhook endpoints"
        empty="No endpoints yet."
        columns={[
          { header: 'URL', cell: (w) => <Link href={`/webhooks/${w.id}`}>{w.url}</Link> },
          { header: 'Events', cell: (w) => w.events.join(', ') },
          {
            header: 'State',
            cell: (w) =>
              w.enabled ? 'Enabled' : `Disabled${w.disabledReason ? `: ${w.disabledReason}` : ''}`,
          },
          { header: 'Created', cell: (w) => when(w.createdAt) },
        ]}
      />
      <h2>Event catalog</h2>
      <DataTable
        caption="Event catalog"
        rows={catalog.data}
        rowKey={(e) => e.type}
        empty="No events."
        columns={[
          { header: 'Event', cell: (e) => <code>{e.type}</code> },
          { header: 'When', cell: (e) => e.description },
        ]}
      />
    </>
  );
}
