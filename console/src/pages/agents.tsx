// AI agents: the list and a new agent.
import { Link, useLocation } from 'wouter';
import { data } from '../api.ts';
import { PagedTable, PageHeader, useAction, usePagedList, when } from '../ui.tsx';
import { type Agent, AgentForm, agentFields } from './agent-form.tsx';

export default function Agents() {
  const [, navigate] = useLocation();
  const list = usePagedList<Agent & { createdAt: string }>(['agents'], '/v2/portal/agents', 'offset');
  const create = useAction(
    (form) => data<Agent>('POST', '/v2/portal/agents', agentFields(form)),
    [['agents']],
    (agent) => navigate(`/agents/${(agent as Agent).id}`),
  );
  return (
    <>
      <PageHeader title="AI agents" />
      <details>
        <summary>New agent</summary>
        <AgentForm mutation={create} submit="Create agent" />
      </details>
      <PagedTable
        list={list}
        caption="Agents"
        empty="No agents yet."
        columns={[
          { header: 'Name', cell: (a) => <Link href={`/agents/${a.id}`}>{a.name}</Link> },
          { header: 'Voice', cell: (a) => a.voice },
          { header: 'Knowledge bases', cell: (a) => a.knowledgeBaseIds.length },
          { header: 'Transfers to', cell: (a) => a.transferTo ?? '—' },
          { header: 'Created', cell: (a) => when(a.createdAt) },
        ]}
      />
    </>
  );
}
