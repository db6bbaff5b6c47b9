// Call queues: the list, with a way to a new one and to each queue's settings and live state.
import { Link } from 'wouter';
import { call } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import type { Data } from '../shapes.ts';
import { ActionButton, PagedTable, PageHeader, usePagedList } from '../ui.tsx';
import { STRATEGIES, useExtensionChoices } from './extension-members.tsx';

export type Queue = Data<'/v2/portal/queues/{id}'>;

export default function Queues() {
  const me = useMe();
  const manager = canManage(me.data);
  const list = usePagedList<Queue>(['queues'], '/v2/portal/queues', 'offset');
  const { labelOf } = useExtensionChoices();
  return (
    <>
      <PageHeader title="Queues">{manager ? <Link href="/queues/new">New queue</Link> : null}</PageHeader>
      <p>Callers wait in line, with hold music, until a member is free; open a queue to see who waits now.</p>
      <PagedTable
        list={list}
        caption="Queues"
        empty="No queues yet."
        columns={[
          { header: 'Name', cell: (q) => <Link href={`/queues/${q.id}`}>{q.name}</Link> },
          { header: 'Members', cell: (q) => q.extensionIds.map(labelOf).join(', ') || '—' },
          {
            header: 'Strategy',
            cell: (q) => STRATEGIES.find(([key]) => key === q.strategy)?.[1] ?? q.strategy,
          },
          { header: 'Longest wait', cell: (q) => `${q.maxWaitSeconds} s` },
          { header: 'Id', cell: (q) => <code>{q.id}</code> },
          {
            header: '',
            cell: (q) =>
              manager ? (
                <ActionButton
                  label="Delete"
                  className="secondary outline"
                  confirm={`Delete the queue ${q.name}?`}
                  run={() => call('DELETE', `/v2/portal/queues/${encodeURIComponent(q.id)}`)}
                  invalidate={[['queues']]}
                />
              ) : null,
          },
        ]}
      />
    </>
  );
}
