// A queue's live state (GET /v2/portal/queues/{id}/live, CONTRACT section 13): who waits, in order and for how
// long, and what each member is doing, read again every few seconds. A 404 (the queue runtime that serves it is
// not on this server, or the queue is gone) is shown as "not available", not as a failure.
import { useQuery } from '@tanstack/react-query';
import { ApiProblem, get } from '../api.ts';
import type { Data } from '../shapes.ts';
import { DataTable, ErrorNote, Status } from '../ui.tsx';

export type QueueLive = Data<'/v2/portal/queues/{id}/live'>;

/** How often the live state is read again. */
export const LIVE_REFRESH_MS = 3_000;

/** "2 min 05 s" from `since` to `now`. */
export function waited(since: string, now: number): string {
  const seconds = Math.max(0, Math.floor((now - new Date(since).getTime()) / 1000));
  const minutes = Math.floor(seconds / 60);
  const rest = String(seconds % 60).padStart(minutes > 0 ? 2 : 1, '0');
  return minutes > 0 ? `${minutes} min ${rest} s` : `${rest} s`;
}

export function QueueLiveState({ queueId, labelOf }: { queueId: string; labelOf: (id: string) => string }) {
  const live = useQuery({
    queryKey: ['queues', queueId, 'live'],
    queryFn: () => get<QueueLive>(`/v2/portal/queues/${encodeURIComponent(queueId)}/live`),
    // Keep reading while it answers; a 404 will not change by asking again.
    refetchInterval: (query) =>
      query.state.error instanceof ApiProblem && query.state.error.status === 404 ? false : LIVE_REFRESH_MS,
    staleTime: 0,
  });
  const unavailable = live.error instanceof ApiProblem && live.error.status === 404;
  const now = live.dataUpdatedAt || Date.now();
  return (
    <section aria-labelledby="live-title" className="queue-live" data-testid="queue-live">
      <h2 id="live-title">Live</h2>
      {unavailable ? (
        <p className="empty" role="status">
          The live state of this queue is not available on this server yet.
        </p>
      ) : (
        <>
          {live.error ? <ErrorNote error={live.error} /> : null}
          <p className="live-note">
            Refreshed every {LIVE_REFRESH_MS / 1000} seconds
            {live.dataUpdatedAt ? `, last at ${new Date(live.dataUpdatedAt).toLocaleTimeString()}` : ''}.
          </p>
          <h3>Waiting ({live.data?.waiting.length ?? '…'})</h3>
          <DataTable
            caption="Callers waiting"
            rows={live.data ? [...live.data.waiting].sort((a, b) => a.position - b.position) : undefined}
            rowKey={(row) => row.callId}
            empty="No one is waiting."
            columns={[
              { header: 'Position', cell: (row) => row.position },
              { header: 'Caller', cell: (row) => row.from },
              { header: 'Waiting for', cell: (row) => waited(row.since, now) },
              { header: 'Call', cell: (row) => <code>{row.callId}</code> },
            ]}
          />
          <h3>Members</h3>
          <DataTable
            caption="Members and what they are doing"
            rows={live.data?.members}
            rowKey={(row) => row.extensionId}
            empty="The queue has no members."
            columns={[
              { header: 'Member', cell: (row) => labelOf(row.extensionId) },
              { header: 'State', cell: (row) => <Status value={row.state} /> },
            ]}
          />
        </>
      )}
    </section>
  );
}
