// A queue's wallboard: what a team lead puts on a screen by the desks. How many wait and the longest wait (it
// ticks), each member's state, and how today's waits ended (answered, abandoned, timed out since local
// midnight), in large figures, from the same live read as the queue's page (queue-live.tsx), kept fresh by
// the event stream.
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'wouter';
import { get } from '../api.ts';
import type { Data } from '../shapes.ts';
import { ErrorNote, elapsed, PageHeader, Status, useNow } from '../ui.tsx';
import { useExtensionChoices } from './extension-members.tsx';
import { longestWaitSince, useQueueLive } from './queue-live.tsx';

function Figure({
  label,
  value,
  testId,
}: {
  label: string;
  value: string | number | undefined;
  testId: string;
}) {
  return (
    <article>
      <span className="figure duration" data-testid={testId} aria-busy={value === undefined}>
        {value ?? ''}
      </span>
      {label}
    </article>
  );
}

export default function QueueWallboard() {
  const { id } = useParams<{ id: string }>();
  const queue = useQuery({
    queryKey: ['queues', id],
    queryFn: () => get<Data<'/v2/portal/queues/{id}'>>(`/v2/portal/queues/${encodeURIComponent(id)}`),
  });
  const { live, unavailable } = useQueueLive(id);
  const { labelOf } = useExtensionChoices();
  const now = useNow();
  const data = live.data;
  const longest = longestWaitSince(data);
  const members = data?.members ?? [];
  const count = (state: string) => members.filter((member) => member.state === state).length;
  return (
    <div className="wallboard">
      <PageHeader title={`Wallboard: ${queue.data?.name ?? 'queue'}`}>
        <Link href={`/queues/${encodeURIComponent(id)}`}>The queue’s settings</Link>
      </PageHeader>
      <ErrorNote error={queue.error ?? (unavailable ? null : live.error)} />
      {unavailable ? (
        <p className="empty" role="status">
          The live state of this queue is not available on this server yet.
        </p>
      ) : (
        <>
          <section className="cards" aria-label="Now">
            <Figure label="Waiting" value={data?.waiting.length} testId="wallboard-waiting" />
            <Figure
              label="Longest wait"
              value={data ? (longest ? elapsed(longest, now) : '—') : undefined}
              testId="wallboard-longest"
            />
            <Figure
              label="Members available"
              value={data ? count('available') : undefined}
              testId="wallboard-available"
            />
            <Figure
              label="Members on a call"
              value={data ? count('on_call') : undefined}
              testId="wallboard-on-call"
            />
          </section>
          <h2>Today</h2>
          <section className="cards" aria-label="Today">
            <Figure label="Answered" value={data?.outcomes?.answered} testId="wallboard-answered" />
            <Figure label="Abandoned" value={data?.outcomes?.abandoned} testId="wallboard-abandoned" />
            <Figure label="Timed out" value={data?.outcomes?.timedOut} testId="wallboard-timed-out" />
          </section>
          <h2>Members</h2>
          <ul className="wallboard-members">
            {members.map((member) => (
              <li key={member.extensionId}>
                {labelOf(member.extensionId)} <Status value={member.state} />
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
