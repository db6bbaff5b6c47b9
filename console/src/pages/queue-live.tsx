// A queue's live state (GET /v2/portal/queues/{id}/live, CONTRACT section 13): who waits, in order and for how
// long, and what each member is doing. Read again when a queue or call event arrives on the live stream
// (live.ts: call.queue.joined, answered, abandoned and every call.* change members' states); the waits tick in
// the browser. A 404 (the queue runtime that serves it is not on this server, or the queue is gone) is shown as
// "not available", not as a failure. The wallboard (queue-wallboard.tsx) shows the same read large.
import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { ApiProblem, get, qs } from '../api.ts';
import type { Data } from '../shapes.ts';
import { DataTable, ErrorNote, elapsed, Status, useNow } from '../ui.tsx';

export type QueueLive = Data<'/v2/portal/queues/{id}/live'>;

/**
 * Events move everything but the end of a member's wrap-up, which is only time passing: while a member is in
 * wrap-up the state is read again this often. Otherwise the slow read is for a network that keeps the event
 * stream from reaching the browser.
 */
export const WRAP_UP_REFRESH_MS = 5_000;
const FALLBACK_POLL_MS = 60_000;

/** Local midnight: a wallboard's "today". */
function startOfToday(): string {
  const now = new Date();
  return new Date(now.getFullYear(), now.getMonth(), now.getDate()).toISOString();
}

/** The live state of a queue, kept fresh by the stream; `unavailable` when this server has no queue runtime. */
export function useQueueLive(queueId: string) {
  const since = startOfToday();
  const live = useQuery({
    queryKey: ['queues', queueId, 'live', since],
    queryFn: () => get<QueueLive>(`/v2/portal/queues/${encodeURIComponent(queueId)}/live${qs({ since })}`),
    // A 404 will not change by asking again.
    refetchInterval: (query) =>
      query.state.error instanceof ApiProblem && query.state.error.status === 404
        ? false
        : query.state.data?.members.some((member) => member.state === 'wrap_up')
          ? WRAP_UP_REFRESH_MS
          : FALLBACK_POLL_MS,
  });
  return { live, unavailable: live.error instanceof ApiProblem && live.error.status === 404 };
}

/** The longest a caller now waiting has waited, or undefined when no one waits. */
export function longestWaitSince(live: QueueLive | undefined): string | undefined {
  return live?.waiting.map((row) => row.since).sort()[0];
}

export function QueueLiveState({ queueId, labelOf }: { queueId: string; labelOf: (id: string) => string }) {
  const { live, unavailable } = useQueueLive(queueId);
  const now = useNow();
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
            Changes as callers join, are answered or hang up
            {live.dataUpdatedAt ? `; last read at ${new Date(live.dataUpdatedAt).toLocaleTimeString()}` : ''}.{' '}
            <Link href={`/queues/${encodeURIComponent(queueId)}/wallboard`}>Open the wallboard</Link>
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
              { header: 'Waiting for', cell: (row) => elapsed(row.since, now) },
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
