// Live calls: who is talking to whom right now and for how long (GET /calls?live=true, read again when a call
// event arrives on the live stream; the timers tick in the browser), and for a call an AI agent took, its
// transcript turn by turn as the agent_call.turn events arrive (GET /agent-calls?callId=…).
import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { call, page, qs } from '../api.ts';
import type { Item } from '../shapes.ts';
import { ActionButton, DataTable, ErrorNote, elapsed, PageHeader, Status, useNow } from '../ui.tsx';

type Call = Item<'/v2/portal/calls'>;

/** At most this many live calls are shown: more than a page can usefully show at once. */
const SHOWN = 100;

/**
 * The list changes with call events (live.ts); this slow read is only for a network that keeps the event
 * stream from reaching the browser.
 */
const FALLBACK_POLL_MS = 30_000;

export const liveCallsQuery = {
  queryKey: ['calls', 'live'],
  queryFn: () => page<Call>(`/v2/portal/calls${qs({ live: true, limit: SHOWN })}`),
  refetchInterval: FALLBACK_POLL_MS,
};

/** "Talking 2 min 05 s" from the answer, else "Ringing 12 s" from the start. */
function Duration({ row, now }: { row: Call; now: number }) {
  const answered = row.answeredAt !== null;
  return (
    <span className="duration" data-testid="call-duration">
      {answered ? 'Talking' : 'Ringing'} {elapsed(row.answeredAt ?? row.startedAt, now)}
    </span>
  );
}

function AgentTranscript({ callId }: { callId: string }) {
  const agentCall = useQuery({
    // Under 'agent-calls', so each agent_call.turn event reads it again (live.ts).
    queryKey: ['agent-calls', 'by-call', callId],
    queryFn: async () =>
      (await page<Item<'/v2/portal/agent-calls'>>(`/v2/portal/agent-calls${qs({ callId })}`)).data[0],
  });
  if (agentCall.error) return <ErrorNote error={agentCall.error} />;
  const turns = agentCall.data?.transcript;
  return (
    <section className="transcript-live" aria-label={`Transcript of the call from ${callId}`}>
      {turns === undefined ? (
        <p aria-busy="true">Reading the transcript…</p>
      ) : turns.length === 0 ? (
        <p className="empty">Nothing said yet.</p>
      ) : (
        // A polite live region: a screen reader hears each new turn as it is added, without losing its place.
        <ol aria-live="polite" data-testid="live-transcript">
          {turns.map((turn) => (
            <li key={`${turn.at}|${turn.role}|${turn.text}`}>
              <strong>{turn.role === 'agent' ? 'Agent' : 'Caller'}:</strong> {turn.text || turn.digits}
              {turn.interrupted ? <em> (cut off by the caller)</em> : null}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

export default function LiveCalls() {
  const live = useQuery(liveCallsQuery);
  const now = useNow();
  const rows = live.data?.data;
  const agentCalls = rows?.filter((row) => row.agentId !== null) ?? [];
  return (
    <>
      <PageHeader title="Live calls" />
      <p className="live-note">
        Calls ringing or in progress now; the list changes as calls start and end. Past calls are in{' '}
        <Link href="/calls">Calls</Link>.
      </p>
      <ErrorNote error={live.error} />
      <DataTable
        caption="Calls now"
        rows={rows}
        empty="No one is on the phone right now."
        columns={[
          { header: 'From', cell: (row) => row.from },
          { header: 'To', cell: (row) => row.to },
          {
            header: 'Who answers',
            cell: (row) => (row.agentId ? 'AI agent' : row.extensionId ? 'Extension' : '—'),
          },
          { header: 'Direction', cell: (row) => row.direction },
          { header: 'Status', cell: (row) => <Status value={row.status} /> },
          { header: 'For', cell: (row) => <Duration row={row} now={now} /> },
          {
            header: '',
            cell: (row) => (
              <ActionButton
                label="Hang up"
                className="secondary"
                run={() => call('POST', `/v2/portal/calls/${encodeURIComponent(row.id)}/hangup`)}
                invalidate={[['calls']]}
              />
            ),
          },
        ]}
      />
      {agentCalls.map((row) => (
        <article key={row.id}>
          <header>
            AI agent on the call from <strong>{row.from}</strong> to <strong>{row.to}</strong> ·{' '}
            <Duration row={row} now={now} />
          </header>
          <AgentTranscript callId={row.id} />
        </article>
      ))}
    </>
  );
}
