// Call flows: the organization's flows with their versions, a way to a new one, and deleting one (refused with
// the server's message while a number routes to it).
import { Link } from 'wouter';
import { call } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import type { Data } from '../shapes.ts';
import { ActionButton, PagedTable, PageHeader, usePagedList, when } from '../ui.tsx';

export type CallFlow = Data<'/v2/portal/call-flows/{id}'>;

/** Steps in all, nested ones included: how big a flow is at a glance. */
function countSteps(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + countSteps(item), 0);
  if (!value || typeof value !== 'object') return 0;
  const step = value as Record<string, unknown>;
  let count = typeof step.type === 'string' ? 1 : 0;
  for (const [field, inner] of Object.entries(step)) {
    if (field === 'branches' && inner && typeof inner === 'object') {
      count += Object.values(inner).reduce((sum: number, list) => sum + countSteps(list), 0);
    } else if (Array.isArray(inner) || (field === 'prompt' && inner)) count += countSteps(inner);
  }
  return count;
}

export default function CallFlows() {
  const me = useMe();
  const list = usePagedList<CallFlow>(['call-flows'], '/v2/portal/call-flows', 'offset');
  return (
    <>
      <PageHeader title="Call flows">
        {canManage(me.data) ? <Link href="/call-flows/new">New call flow</Link> : null}
      </PageHeader>
      <p>
        What a call hears and where it rings: menus, business hours, ring groups, queues. Route a number to a
        flow on the Numbers page.
      </p>
      <PagedTable
        list={list}
        caption="Call flows"
        empty="No call flows yet."
        columns={[
          { header: 'Name', cell: (f) => <Link href={`/call-flows/${f.id}`}>{f.name}</Link> },
          { header: 'Steps', cell: (f) => countSteps(f.steps) },
          { header: 'Version', cell: (f) => f.version },
          { header: 'Updated', cell: (f) => when(f.updatedAt) },
          { header: 'Id', cell: (f) => <code>{f.id}</code> },
          {
            header: '',
            cell: (f) =>
              canManage(me.data) ? (
                <ActionButton
                  label="Delete"
                  className="secondary outline"
                  confirm={`Delete the call flow ${f.name} and all its versions?`}
                  run={() => call('DELETE', `/v2/portal/call-flows/${encodeURIComponent(f.id)}`)}
                  invalidate={[['call-flows']]}
                />
              ) : null,
          },
        ]}
      />
    </>
  );
}
