// Data exports: ask for a file of messages, contacts, calls or a campaign's recipients (CSV or JSON Lines),
// watch it build, download it within 7 days.
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { data, page } from '../api.ts';
import type { Item } from '../shapes.ts';
import {
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
import type { Campaign } from './campaigns.tsx';

type Export = Item<'/v2/portal/exports'>;

function size(bytes: number | null): string {
  if (bytes === null) return '—';
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export default function Exports() {
  const [resource, setResource] = useState('messages');
  const campaigns = useQuery({
    queryKey: ['campaigns', 'all'],
    queryFn: () => page<Campaign>('/v2/portal/campaigns?limit=100'),
    enabled: resource === 'campaign_recipients',
  });
  const list = usePagedList<Export>(['exports'], '/v2/portal/exports', 'offset', {
    poll: (rows) => rows.some((e) => e.status === 'queued' || e.status === 'running'),
  });
  const create = useAction(
    (form) => {
      const since = text(form, 'since');
      const filters: Record<string, string> = {};
      if (since && (resource === 'messages' || resource === 'calls'))
        filters.since = new Date(since).toISOString();
      const campaignId = text(form, 'campaignId');
      if (resource === 'campaign_recipients' && campaignId) filters.campaignId = campaignId;
      return data('POST', '/v2/portal/exports', { resource, format: text(form, 'format'), filters });
    },
    [['exports']],
  );
  return (
    <>
      <PageHeader title="Exports" />
      <p>Files are kept for 7 days. At most 10 exports an hour.</p>
      <MutationForm mutation={create} label="New export" submit="Export" className="inline-form">
        <Field label="What">
          {(id) => (
            <select
              id={id}
              name="resource"
              value={resource}
              onChange={(event) => setResource(event.target.value)}
            >
              <option value="messages">Messages</option>
              <option value="contacts">Contacts</option>
              <option value="calls">Calls</option>
              <option value="campaign_recipients">A campaign's recipients</option>
            </select>
          )}
        </Field>
        <Field label="Format">
          {(id) => (
            <select id={id} name="format" defaultValue="csv">
              <option value="csv">CSV</option>
              <option value="jsonl">JSON Lines</option>
            </select>
          )}
        </Field>
        {resource === 'messages' || resource === 'calls' ? (
          <Field label="Since (optional)">{(id) => <input id={id} name="since" type="date" />}</Field>
        ) : null}
        {resource === 'campaign_recipients' ? (
          <Field label="Campaign">
            {(id) => (
              <select id={id} name="campaignId" required>
                {campaigns.data?.data.map((c) => (
                  <option key={c.id} value={c.id}>
                    {c.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
        ) : null}
      </MutationForm>
      <PagedTable
        list={list}
        caption="Exports"
        empty="No exports in the last 7 days."
        columns={[
          { header: 'Asked', cell: (e) => when(e.createdAt) },
          { header: 'What', cell: (e) => `${e.resource.replaceAll('_', ' ')} · ${e.format.toUpperCase()}` },
          {
            header: 'Status',
            cell: (e) => (e.error ? `${e.status}: ${e.error}` : <Status value={e.status} />),
          },
          { header: 'Rows', cell: (e) => e.rowCount?.toLocaleString() ?? '—' },
          { header: 'Size', cell: (e) => size(e.sizeBytes) },
          {
            header: '',
            cell: (e) =>
              e.status === 'completed' ? (
                <a href={`/v2/portal/exports/${encodeURIComponent(e.id)}/download`} download>
                  Download
                </a>
              ) : null,
          },
          { header: 'Kept until', cell: (e) => when(e.expiresAt) },
        ]}
      />
    </>
  );
}
