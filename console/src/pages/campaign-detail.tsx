// One campaign: its settings, the actions its state allows (launch, pause, resume, cancel, delete, follow up
// the failures with a draft to those recipients), live
// delivery statistics drawn as a bar chart (polled while it sends), its recipients, and, when it tracks links,
// its clicks: total, unique, click-through rate and who clicked.
import { useQuery } from '@tanstack/react-query';
import { Link, useLocation, useParams } from 'wouter';
import { call, get } from '../api.ts';
import type { Data, Item } from '../shapes.ts';
import { ActionButton, ErrorNote, PagedTable, PageHeader, Status, usePagedList, when } from '../ui.tsx';
import type { Campaign } from './campaigns.tsx';

type Analytics = Data<'/v2/portal/campaigns/{id}/analytics'>;

type Click = Item<'/v2/portal/campaigns/{id}/clicks'>;

const percent = (value: number | null) => (value === null ? '—' : `${Math.round(value * 1000) / 10} %`);

type Recipient = Item<'/v2/portal/campaigns/{id}/recipients'>;

const BARS: [keyof Analytics, string, string][] = [
  ['queued', 'Queued', '#8a94a6'],
  ['awaiting', 'Awaiting receipt', '#d4a017'],
  ['delivered', 'Delivered', '#2e8540'],
  ['failed', 'Failed', '#c0392b'],
  ['undelivered', 'Undelivered', '#e67e22'],
  ['skipped', 'Skipped', '#6c5ce7'],
  ['cancelled', 'Cancelled', '#636e72'],
];

/** A horizontal bar per status; the figures are also in the table below it for screen readers. */
function StatsChart({ stats }: { stats: Analytics }) {
  const max = Math.max(1, ...BARS.map(([key]) => Number(stats[key])));
  const rowHeight = 26;
  return (
    <figure>
      <svg
        className="chart"
        viewBox={`0 0 400 ${BARS.length * rowHeight}`}
        role="img"
        aria-label="Delivery statistics by status"
      >
        {BARS.map(([key, label, color], index) => {
          const value = Number(stats[key]);
          const width = (value / max) * 230;
          return (
            <g key={key} transform={`translate(0 ${index * rowHeight})`}>
              <text x="0" y="17">
                {label}
              </text>
              <rect x="120" y="4" width={Math.max(width, value > 0 ? 2 : 0)} height="16" fill={color} />
              <text x={126 + width} y="17">
                {value}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption>
        Delivery rate{' '}
        <strong data-testid="delivery-rate">
          {stats.deliveryRate === null ? '—' : `${Math.round(stats.deliveryRate * 100)} %`}
        </strong>
        {stats.provisional ? ' (provisional: receipts still arriving)' : ''} · {stats.segments} segments ·{' '}
        {stats.optOuts} opt-outs
      </figcaption>
    </figure>
  );
}

export default function CampaignDetail() {
  const { id } = useParams<{ id: string }>();
  const [, navigate] = useLocation();
  const path = `/v2/portal/campaigns/${encodeURIComponent(id)}`;
  const active = (status?: string) => status === 'sending' || status === 'scheduled';
  const campaign = useQuery({
    queryKey: ['campaigns', id],
    queryFn: () => get<Campaign>(path),
    refetchInterval: (query) => (active(query.state.data?.status) ? 2_000 : false),
  });
  const status = campaign.data?.status;
  const analytics = useQuery({
    queryKey: ['campaigns', id, 'analytics'],
    queryFn: () => get<Analytics>(`${path}/analytics`),
    enabled: status !== undefined && status !== 'draft',
    // Until every message has left the queue and has its receipt: a campaign can complete while its last
    // messages are still queued for the carrier, and receipts arrive after that.
    refetchInterval: (query) => {
      const stats = query.state.data;
      const draining = status === 'completed' && (stats?.queued ?? 1) > 0;
      return active(status) || !stats || stats.provisional || draining ? 2_000 : false;
    },
  });
  // Recipients change while the campaign sends, and again as receipts arrive after it has completed.
  const changing =
    active(status) || analytics.data?.provisional === true || (analytics.data?.queued ?? 0) > 0;
  const recipients = usePagedList<Recipient>(
    ['campaigns', id, 'recipients'],
    `${path}/recipients`,
    'offset',
    {
      poll: (rows) => changing || rows.some((r) => ['pending', 'queued', 'sent'].includes(r.status)),
    },
  );

  if (campaign.isError) return <ErrorNote error={campaign.error} />;
  if (!campaign.data) return <p aria-busy="true">Loading…</p>;
  const c = campaign.data;
  const invalidate = [['campaigns']];
  const act = (action: string) => () => call('POST', `${path}/${action}`);
  return (
    <>
      <PageHeader title={c.name}>
        {c.status === 'draft' || c.status === 'scheduled' ? (
          <ActionButton label="Launch" run={act('launch')} invalidate={invalidate} />
        ) : null}
        {c.status === 'sending' || c.status === 'scheduled' ? (
          <ActionButton label="Pause" className="secondary" run={act('pause')} invalidate={invalidate} />
        ) : null}
        {c.status === 'paused' ? (
          <ActionButton label="Resume" run={act('resume')} invalidate={invalidate} />
        ) : null}
        {['scheduled', 'sending', 'paused'].includes(c.status) ? (
          <ActionButton
            label="Cancel"
            className="secondary outline"
            confirm="Cancel the campaign? Messages not yet sent will not be."
            run={act('cancel')}
            invalidate={invalidate}
          />
        ) : null}
        {c.status !== 'draft' && (analytics.data?.failed ?? 0) + (analytics.data?.undelivered ?? 0) > 0 ? (
          <ActionButton
            label="Follow up failures"
            className="secondary"
            run={async () => (await call<{ data: Campaign }>('POST', `${path}/retry`)).data}
            invalidate={invalidate}
            onDone={(followUp) => navigate(`/campaigns/${(followUp as Campaign).id}`)}
          />
        ) : null}
        {c.status === 'draft' ? (
          <ActionButton
            label="Delete"
            className="secondary outline"
            confirm="Delete this draft?"
            run={() => call('DELETE', path)}
            invalidate={invalidate}
            onDone={() => navigate('/campaigns')}
          />
        ) : null}
      </PageHeader>
      <p>
        <Status value={c.status} />
        {c.pausedReason ? ` — paused: ${c.pausedReason}` : ''}
        {c.scheduledAt ? ` · scheduled for ${when(c.scheduledAt)}` : ''}
      </p>
      {c.parentCampaignId ? (
        <p>
          A follow-up of <Link href={`/campaigns/${c.parentCampaignId}`}>an earlier campaign</Link>: to its
          recipients whose messages did not arrive.
        </p>
      ) : null}
      <blockquote>{c.message}</blockquote>
      <p>
        Quiet hours: {c.quietHours ? `${c.quietHours.start}–${c.quietHours.end} recipient's time` : 'off'} ·
        Time zone {c.timezone} · Senders: {c.senders.join(', ') || 'default'}
      </p>
      <h2>Delivery</h2>
      <ErrorNote error={analytics.error} />
      {analytics.data ? (
        <StatsChart stats={analytics.data} />
      ) : (
        <p>Statistics appear once the campaign launches.</p>
      )}
      {c.trackLinks ? <LinkClicks id={id} path={path} analytics={analytics.data} /> : null}
      <h2>Recipients</h2>
      <PagedTable
        list={recipients}
        caption="Recipients"
        rowKey={(r) => r.phone}
        empty={c.status === 'draft' ? 'Recipients are chosen when the campaign launches.' : 'No recipients.'}
        columns={[
          { header: 'Phone', cell: (r) => r.phone },
          { header: 'Status', cell: (r) => <Status value={r.status} /> },
          { header: 'Sender', cell: (r) => r.sender ?? '—' },
          { header: 'Error', cell: (r) => r.errorMessage ?? '—' },
        ]}
      />
    </>
  );
}

/** Clicks on the campaign's tracked links: the figures, then who clicked, newest first. */
function LinkClicks({ id, path, analytics }: { id: string; path: string; analytics?: Analytics }) {
  // Keyed by the count the polled analytics show, so the list is read again when a click comes in.
  const clicks = usePagedList<Click>(
    ['campaigns', id, 'clicks', analytics?.clicks ?? 0],
    `${path}/clicks`,
    'offset',
  );
  return (
    <>
      <h2>Link clicks</h2>
      {analytics ? (
        <p>
          <strong data-testid="link-clicks">{analytics.clicks}</strong> clicks ·{' '}
          <strong data-testid="unique-clicks">{analytics.uniqueClicks}</strong> recipients clicked ·
          click-through rate <strong data-testid="click-rate">{percent(analytics.clickRate)}</strong> (of
          recipients sent to)
        </p>
      ) : null}
      <PagedTable
        list={clicks}
        caption="Link clicks"
        rowKey={(click) => `${click.at} ${click.recipientPhone} ${click.url}`}
        empty="No clicks yet."
        columns={[
          { header: 'When', cell: (click) => when(click.at) },
          { header: 'Phone', cell: (click) => click.recipientPhone },
          { header: 'Link', cell: (click) => click.url },
          { header: 'Browser', cell: (click) => click.userAgent ?? '—' },
        ]}
      />
    </>
  );
}
