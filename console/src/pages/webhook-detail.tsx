// One webhook endpoint: enable or disable it, rotate its secret, send a test event, and its delivery log with
// each attempt's outcome and redelivery.
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useLocation, useParams } from 'wouter';
import { call, data, get } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import type { Item } from '../shapes.ts';
import { ActionButton, ErrorNote, PagedTable, PageHeader, Status, usePagedList, when } from '../ui.tsx';
import { SecretShown, type Webhook } from './webhooks.tsx';

type Delivery = Item<'/api/webhooks/{id}/deliveries'>;

export default function WebhookDetail() {
  const { id } = useParams<{ id: string }>();
  const me = useMe();
  const [, navigate] = useLocation();
  const path = `/api/webhooks/${encodeURIComponent(id)}`;
  const webhook = useQuery({ queryKey: ['webhooks', id], queryFn: () => get<Webhook>(path) });
  const deliveries = usePagedList<Delivery>(['webhooks', id, 'deliveries'], `${path}/deliveries`, 'offset', {
    poll: (rows) => rows.some((d) => d.status === 'pending'),
  });
  const [secret, setSecret] = useState<string | null>(null);
  if (webhook.isError) return <ErrorNote error={webhook.error} />;
  if (!webhook.data) return <p aria-busy="true">Loading…</p>;
  const w = webhook.data;
  const manage = canManage(me.data);
  const invalidate = [['webhooks']];
  return (
    <>
      <PageHeader title={w.url}>
        {manage ? (
          <>
            <ActionButton
              label="Send test event"
              run={() => call('POST', `${path}/test`)}
              invalidate={invalidate}
            />
            <ActionButton
              label={w.enabled ? 'Disable' : 'Enable'}
              className="secondary"
              run={() => call('PATCH', path, { enabled: !w.enabled })}
              invalidate={invalidate}
            />
            <ActionButton
              label="Rotate secret"
              className="secondary"
              confirm="Rotate the signing secret? The old one keeps working for 24 hours."
              run={() => data<{ secret: string }>('POST', `${path}/rotate-secret`)}
              invalidate={invalidate}
              onDone={(rotated) => setSecret((rotated as { secret: string }).secret)}
            />
            <ActionButton
              label="Delete"
              className="secondary outline"
              confirm="Delete this endpoint?"
              run={() => call('DELETE', path)}
              invalidate={invalidate}
              onDone={() => navigate('/webhooks')}
            />
          </>
        ) : null}
      </PageHeader>
      {secret ? <SecretShown secret={secret} onDone={() => setSecret(null)} /> : null}
      <p>
        {w.enabled ? 'Enabled' : `Disabled${w.disabledReason ? `: ${w.disabledReason}` : ''}`} · events:{' '}
        {w.events.join(', ')}
      </p>
      <h2>Deliveries</h2>
      <PagedTable
        list={deliveries}
        caption="Deliveries"
        empty="No deliveries yet. Send a test event."
        columns={[
          { header: 'When', cell: (d) => when(d.createdAt) },
          { header: 'Event', cell: (d) => <code>{d.event.type}</code> },
          { header: 'Status', cell: (d) => <Status value={d.status} /> },
          { header: 'Attempts', cell: (d) => d.attempts },
          { header: 'Response', cell: (d) => d.lastStatusCode ?? d.lastError ?? '—' },
          { header: 'Next attempt', cell: (d) => when(d.nextAttemptAt) },
          {
            header: '',
            cell: (d) =>
              manage ? (
                <ActionButton
                  label="Redeliver"
                  className="secondary outline"
                  run={() => call('POST', `${path}/deliveries/${encodeURIComponent(d.id)}/redeliver`)}
                  invalidate={invalidate}
                />
              ) : null,
          },
        ]}
      />
    </>
  );
}
