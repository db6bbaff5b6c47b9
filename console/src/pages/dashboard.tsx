// Today at a glance: messages sent and received since local midnight and their delivery rate (one request:
// GET /messages/stats), and today's calls; then messages and calls per hour over the last day or week
// (GET /messages/stats/hourly, /calls/stats/hourly) as charts. Every figure moves as events arrive (live.ts).
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { get, page, qs } from '../api.ts';
import { useMe } from '../session.ts';
import type { Data } from '../shapes.ts';
import { ErrorNote, PageHeader } from '../ui.tsx';
import { HourlyChart } from './hourly-chart.tsx';

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

const PERIODS = { day: { hours: 24, label: 'Last 24 hours' }, week: { hours: 7 * 24, label: 'Last 7 days' } };
type Period = keyof typeof PERIODS;

/** The start of the hour `hours - 1` hours before this one: the current hour is the last bucket. */
function hoursAgo(hours: number): string {
  const hour = new Date();
  hour.setMinutes(0, 0, 0);
  return new Date(hour.getTime() - (hours - 1) * 3_600_000).toISOString();
}

/** The charts' requests, by period; their keys start as the figures' do, so the same events refresh them. */
export function activityQueries(period: Period) {
  const since = hoursAgo(PERIODS[period].hours);
  return {
    messages: {
      queryKey: ['dashboard', 'messages', 'hourly', since],
      queryFn: () =>
        get<Data<'/v2/portal/messages/stats/hourly'>>(`/v2/portal/messages/stats/hourly${qs({ since })}`),
      refetchInterval: FALLBACK_POLL_MS,
    },
    rate: {
      queryKey: ['dashboard', 'messages', 'stats', since],
      queryFn: () => get<MessageStats>(`/v2/portal/messages/stats${qs({ since })}`),
      refetchInterval: FALLBACK_POLL_MS,
    },
    calls: {
      queryKey: ['dashboard', 'calls', 'hourly', since],
      queryFn: () =>
        get<Data<'/v2/portal/calls/stats/hourly'>>(`/v2/portal/calls/stats/hourly${qs({ since })}`),
      refetchInterval: FALLBACK_POLL_MS,
    },
  };
}

function Activity({ messaging, voice }: { messaging: boolean; voice: boolean }) {
  const [period, setPeriod] = useState<Period>('day');
  const queries = activityQueries(period);
  const messages = useQuery({ ...queries.messages, enabled: messaging });
  const rate = useQuery({ ...queries.rate, enabled: messaging });
  const calls = useQuery({ ...queries.calls, enabled: voice });
  const deliveryRate = rate.data?.deliveryRate;
  return (
    <section aria-labelledby="activity-title" className="activity">
      <h2 id="activity-title">Activity by hour</h2>
      <fieldset className="period">
        <legend className="visually-hidden">Period</legend>
        {(Object.keys(PERIODS) as Period[]).map((each) => (
          <label key={each}>
            <input
              type="radio"
              name="period"
              value={each}
              checked={period === each}
              onChange={() => setPeriod(each)}
            />
            {PERIODS[each].label}
          </label>
        ))}
      </fieldset>
      <ErrorNote error={messages.error ?? rate.error ?? calls.error} />
      {messaging ? (
        <>
          <HourlyChart
            title="Messages per hour"
            buckets={messages.data?.buckets}
            series={[
              { key: 'outbound', label: 'sent', className: 'series-outbound' },
              { key: 'inbound', label: 'received', className: 'series-inbound' },
            ]}
          />
          <p>
            Delivery rate over the period:{' '}
            <strong data-testid="period-delivery-rate">
              {deliveryRate === undefined
                ? '…'
                : deliveryRate === null
                  ? '—'
                  : `${Math.round(deliveryRate * 100)} %`}
            </strong>{' '}
            (delivered of those whose fate is known)
          </p>
        </>
      ) : null}
      {voice ? (
        <HourlyChart
          title="Calls per hour"
          buckets={calls.data?.buckets.map((bucket) => ({
            ...bucket,
            unanswered: bucket.total - bucket.answered,
          }))}
          series={[
            { key: 'answered', label: 'answered', className: 'series-answered' },
            // The unanswered part of each hour's calls, so the stack adds up to the calls of the hour.
            { key: 'unanswered', label: 'not answered', className: 'series-unanswered' },
          ]}
        />
      ) : null}
    </section>
  );
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
      {messaging || voice ? <Activity messaging={messaging} voice={voice} /> : null}
    </>
  );
}
