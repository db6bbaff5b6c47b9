// Today at a glance: messages sent and received since local midnight and their delivery rate (one request:
// GET /messages/stats), and today's calls.
import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { get, page, qs } from '../api.ts';
import { useMe } from '../session.ts';
import type { Data } from '../shapes.ts';
import { ErrorNote, PageHeader } from '../ui.tsx';

function startOfToday(): string {
  const now = new Date();
  return new Date(now.getFullYear(), now.getMonth(), now.getDate()).toISOString();
}

type MessageStats = Data<'/v2/portal/messages/stats'>;

/**
 * The dashboard's figures change as events arrive (live.ts marks these queries stale); the slow poll is only
 * for a network that keeps the event stream from reaching the browser.
 */
const FALLBACK_POLL_MS = 60_000;

/**
 * The dashboard's two requests: today's message counts (GET /messages/stats) and today's calls (the list's
 * total with since=midnight). main.tsx starts both beside `me` when the app opens on the dashboard, so the
 * figures do not wait for the app to learn who is signed in.
 */
export function dashboardQueries(since = startOfToday()) {
  return {
    messages: {
      queryKey: ['dashboard', 'messages', since],
      queryFn: () => get<MessageStats>(`/v2/portal/messages/stats${qs({ since })}`),
      refetchInterval: FALLBACK_POLL_MS,
    },
    calls: {
      queryKey: ['dashboard', 'calls', since],
      queryFn: async () =>
        (await page(`/v2/portal/calls${qs({ since, limit: 1, page: 1 })}`)).pagination.total ?? 0,
      refetchInterval: FALLBACK_POLL_MS,
    },
  };
}

function Figure({ label, value, to }: { label: string; value: string | undefined; to?: string }) {
  return (
    <article>
      <span className="figure" aria-busy={value === undefined}>
        {value ?? ''}
      </span>
      {to ? <Link href={to}>{label}</Link> : label}
    </article>
  );
}

export function Dashboard() {
  const me = useMe();
  const products = me.data?.organization.products ?? [];
  const since = startOfToday();
  const messaging = products.includes('messaging');
  const voice = products.includes('voice');
  const queries = dashboardQueries(since);
  const stats = useQuery({ ...queries.messages, enabled: messaging });
  const calls = useQuery({ ...queries.calls, enabled: voice });
  const rate = stats.data
    ? stats.data.deliveryRate === null
      ? '—'
      : `${Math.round(stats.data.deliveryRate * 100)} %`
    : undefined;

  return (
    <>
      <PageHeader title="Dashboard" />
      <p>Today, since midnight your time.</p>
      <ErrorNote error={stats.error ?? calls.error} />
      <section className="cards" aria-label="Today">
        {messaging ? (
          <>
            <Figure
              label="Messages sent"
              value={stats.data?.outbound.total.toLocaleString()}
              to="/messages"
            />
            <Figure
              label="Messages received"
              value={stats.data?.inbound.total.toLocaleString()}
              to="/messages"
            />
            <Figure label="Delivery rate" value={rate} />
          </>
        ) : null}
        {voice ? <Figure label="Calls" value={calls.data?.toLocaleString()} to="/calls" /> : null}
      </section>
    </>
  );
}
