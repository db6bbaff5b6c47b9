// One agent: the editor, a chat panel to try it (the same brain as on a call), and placing a call with it.
import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useLocation, useParams } from 'wouter';
import { call, data, get } from '../api.ts';
import type { Body, Data } from '../shapes.ts';
import { ActionButton, ErrorNote, Field, MutationForm, PageHeader, text, useAction } from '../ui.tsx';
import { type Agent, AgentForm, agentFields } from './agent-form.tsx';

type Turn = Body<'/v2/portal/agents/{id}/chat', 'post'>['messages'][number];
type ChatAnswer = Data<'/v2/portal/agents/{id}/chat', 'post'>;

function ChatPanel({ agent }: { agent: Agent }) {
  const [turns, setTurns] = useState<Turn[]>([{ role: 'assistant', content: agent.firstMessage }]);
  const [note, setNote] = useState<string | null>(null);
  const chat = useAction(
    (form) => {
      const said: Turn = { role: 'user', content: text(form, 'say') ?? '' };
      const next = [...turns, said];
      setTurns(next);
      return data<ChatAnswer>('POST', `/v2/portal/agents/${encodeURIComponent(agent.id)}/chat`, {
        messages: next,
      });
    },
    [],
    (answer) => {
      setTurns((current) => [...current, { role: 'assistant', content: answer.reply }]);
      const sources = answer.sources.map((s) => s.title).join(', ');
      setNote(
        [
          answer.action ? `Action: ${answer.action.replaceAll('_', ' ')}` : '',
          sources ? `Sources: ${sources}` : '',
        ]
          .filter(Boolean)
          .join(' · ') || null,
      );
    },
  );
  const onSubmit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    chat.mutate(new FormData(form));
    form.reset();
  };
  return (
    <section aria-label="Try the agent">
      <h2>Try it</h2>
      <div className="chat-log" role="log" aria-live="polite">
        {turns.map((turn, index) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: turns are only appended, so a position names one turn
          <p key={`${index}-${turn.role}`} className={turn.role}>
            <strong>{turn.role === 'user' ? 'You' : agent.name}:</strong> {turn.content}
          </p>
        ))}
      </div>
      {note ? <small>{note}</small> : null}
      <form onSubmit={onSubmit} className="inline-form" aria-label="Say something to the agent">
        <Field label="Say">{(id) => <input id={id} name="say" required autoComplete="off" />}</Field>
        <button type="submit" aria-busy={chat.isPending}>
          Send
        </button>
      </form>
      <ErrorNote error={chat.error} />
    </section>
  );
}

export default function AgentDetail() {
  const { id } = useParams<{ id: string }>();
  const [, navigate] = useLocation();
  const path = `/v2/portal/agents/${encodeURIComponent(id)}`;
  const agent = useQuery({ queryKey: ['agents', id], queryFn: () => get<Agent>(path) });
  const save = useAction((form) => data('PATCH', path, agentFields(form)), [['agents']]);
  const dial = useAction(
    (form) => data('POST', `${path}/calls`, { to: text(form, 'to'), from: text(form, 'from') }),
    [['agent-calls'], ['calls']],
  );
  if (agent.isError) return <ErrorNote error={agent.error} />;
  if (!agent.data) return <p aria-busy="true">Loading…</p>;
  return (
    <>
      <PageHeader title={agent.data.name}>
        <ActionButton
          label="Delete"
          className="secondary outline"
          confirm={`Delete the agent ${agent.data.name}?`}
          run={() => call('DELETE', path)}
          invalidate={[['agents']]}
          onDone={() => navigate('/agents')}
        />
      </PageHeader>
      <ChatPanel key={agent.data.id} agent={agent.data} />
      <details>
        <summary>Settings</summary>
        <AgentForm key={agent.dataUpdatedAt} agent={agent.data} mutation={save} submit="Save" />
        {save.isSuccess ? <p role="status">Saved.</p> : null}
      </details>
      <details>
        <summary>Call someone with this agent</summary>
        <MutationForm mutation={dial} label="Place an agent call" submit="Call">
          <div className="grid">
            <Field label="To">{(fieldId) => <input id={fieldId} name="to" type="tel" required />}</Field>
            <Field label="From (optional)">
              {(fieldId) => <input id={fieldId} name="from" type="tel" />}
            </Field>
          </div>
        </MutationForm>
        {dial.isSuccess ? <p role="status">Calling. The transcript appears under Agent calls.</p> : null}
      </details>
    </>
  );
}
