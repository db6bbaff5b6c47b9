// The agent editor: one form for creating an agent and for changing one.
import { useQuery } from '@tanstack/react-query';
import { page } from '../api.ts';
import type { Data, Item } from '../shapes.ts';
import { Field, MutationForm, text, type useAction } from '../ui.tsx';

export type Agent = Data<'/v2/portal/agents/{id}'>;

type KnowledgeBase = Item<'/v2/portal/knowledge-bases'>;

/** The agent fields a form holds, as the API takes them. */
export function agentFields(form: FormData) {
  const max = text(form, 'maxDurationSeconds');
  return {
    name: text(form, 'name'),
    instructions: text(form, 'instructions') ?? '',
    firstMessage: text(form, 'firstMessage'),
    voice: text(form, 'voice'),
    language: text(form, 'language'),
    knowledgeBaseIds: form.getAll('knowledgeBaseIds').map(String),
    endCallPhrases: (text(form, 'endCallPhrases') ?? '')
      .split('\n')
      .map((phrase) => phrase.trim())
      .filter(Boolean),
    transferTo: text(form, 'transferTo') ?? null,
    maxDurationSeconds: max ? Number(max) : undefined,
    recordCalls: form.get('recordCalls') === 'on',
    bargeIn: form.get('bargeIn') === 'on',
  };
}

export function AgentForm({
  agent,
  mutation,
  submit,
}: {
  agent?: Agent;
  mutation: ReturnType<typeof useAction<unknown>>;
  submit: string;
}) {
  const bases = useQuery({
    queryKey: ['knowledge-bases', 'all'],
    queryFn: () => page<KnowledgeBase>('/v2/portal/knowledge-bases?limit=100'),
  });
  return (
    <MutationForm mutation={mutation} label={agent ? `Edit ${agent.name}` : 'Create agent'} submit={submit}>
      <div className="grid">
        <Field label="Name">
          {(id) => <input id={id} name="name" required maxLength={100} defaultValue={agent?.name} />}
        </Field>
        <Field label="Voice" hint='espeak-ng voice, e.g. "en-us", "en-gb+f3"'>
          {(id, hint) => (
            <input id={id} name="voice" defaultValue={agent?.voice ?? 'en-us'} aria-describedby={hint} />
          )}
        </Field>
        <Field label="Language">
          {(id) => <input id={id} name="language" defaultValue={agent?.language ?? 'en'} />}
        </Field>
      </div>
      <Field label="Instructions" hint="Who the agent is and how it behaves">
        {(id, hint) => (
          <textarea
            id={id}
            name="instructions"
            rows={5}
            defaultValue={agent?.instructions}
            aria-describedby={hint}
          />
        )}
      </Field>
      <Field label="First message" hint="What it says on answering">
        {(id, hint) => (
          <input id={id} name="firstMessage" defaultValue={agent?.firstMessage} aria-describedby={hint} />
        )}
      </Field>
      <Field label="Knowledge bases">
        {(id) => (
          <select
            id={id}
            name="knowledgeBaseIds"
            multiple
            size={3}
            defaultValue={agent?.knowledgeBaseIds ?? []}
          >
            {bases.data?.data.map((base) => (
              <option key={base.id} value={base.id}>
                {base.name}
              </option>
            ))}
          </select>
        )}
      </Field>
      <div className="grid">
        <Field label="End-call phrases" hint="One per line">
          {(id, hint) => (
            <textarea
              id={id}
              name="endCallPhrases"
              rows={3}
              defaultValue={agent?.endCallPhrases.join('\n')}
              aria-describedby={hint}
            />
          )}
        </Field>
        <Field label="Transfer to" hint="A phone number or one of your extensions">
          {(id, hint) => (
            <input id={id} name="transferTo" defaultValue={agent?.transferTo ?? ''} aria-describedby={hint} />
          )}
        </Field>
        <Field label="Longest call (seconds)">
          {(id) => (
            <input
              id={id}
              name="maxDurationSeconds"
              type="number"
              min={30}
              max={7200}
              defaultValue={agent?.maxDurationSeconds ?? 600}
            />
          )}
        </Field>
      </div>
      <label>
        <input type="checkbox" name="recordCalls" defaultChecked={agent?.recordCalls ?? true} /> Record its
        calls
      </label>
      <label>
        <input type="checkbox" name="bargeIn" defaultChecked={agent?.bargeIn ?? true} /> Let callers interrupt
        it (turn off for lines that echo the agent back)
      </label>
    </MutationForm>
  );
}
