// Agent calls: each with its outcome, summary and the transcript of who said what; each agent turn that
// answered the caller shows how long its stages took (end of turn, recognition, brain, first audio) and
// whether the caller cut it off.
import { useState } from 'react';
import type { Item } from '../shapes.ts';
import { PagedTable, PageHeader, rowsOf, Status, usePagedList, when } from '../ui.tsx';

type AgentCall = Item<'/v2/portal/agent-calls'>;

type Turn = AgentCall['transcript'][number];

/** A turn's stages, in the order they happen. */
function Stages({ latency }: { latency: NonNullable<Turn['latency']> }) {
  const stages: [string, number][] = [
    ['end of turn', latency.endOfTurnMs],
    ['recognition', latency.recognitionMs],
    ['brain', latency.brainMs],
    ['first audio', latency.firstAudioMs],
  ];
  return (
    <small>
      {' '}
      — answered in {latency.totalMs} ms ({stages.map(([name, ms]) => `${name} ${ms} ms`).join(', ')})
    </small>
  );
}

export default function AgentCalls() {
  const list = usePagedList<AgentCall>(['agent-calls'], '/v2/portal/agent-calls', 'offset', {
    poll: (rows) => rows.some((c) => c.status !== 'completed' && c.status !== 'failed' && !c.outcome),
  });
  const [open, setOpen] = useState<string | null>(null);
  const rows = rowsOf(list);
  const selected = rows?.find((c) => c.id === open);
  return (
    <>
      <PageHeader title="Agent calls" />
      <PagedTable
        list={list}
        caption="Agent calls"
        empty="No agent calls yet."
        columns={[
          { header: 'When', cell: (c) => when(c.startedAt) },
          { header: 'Direction', cell: (c) => c.direction },
          { header: 'From', cell: (c) => c.from },
          { header: 'To', cell: (c) => c.to },
          { header: 'Status', cell: (c) => <Status value={c.outcome ?? c.status} /> },
          { header: 'Summary', cell: (c) => c.summary ?? '—' },
          {
            header: '',
            cell: (c) => (
              <button
                type="button"
                className="secondary outline"
                onClick={() => setOpen(open === c.id ? null : c.id)}
              >
                {open === c.id ? 'Hide transcript' : 'Transcript'}
              </button>
            ),
          },
        ]}
      />
      {selected ? (
        <section aria-label="Transcript">
          <h2>Transcript</h2>
          {selected.transcript.map((turn) => (
            <p key={`${turn.at}-${turn.role}-${turn.text.slice(0, 12)}`}>
              <strong>{turn.role === 'agent' ? 'Agent' : 'Caller'}:</strong> {turn.text}
              {turn.interrupted ? <em> (interrupted by the caller)</em> : null}
              {turn.latency ? <Stages latency={turn.latency} /> : null}
            </p>
          ))}
        </section>
      ) : null}
    </>
  );
}
