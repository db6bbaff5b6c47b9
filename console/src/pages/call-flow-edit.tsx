// One call flow in the editor (or a new one, from nothing or a template): its name and steps, checked as they are
// typed; saving makes a new version, and a refusal is shown at the field it names. Members read; owners and
// admins change (the portal refuses the others' writes anyway).
import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useMemo, useRef, useState } from 'react';
import { useLocation, useParams } from 'wouter';
import { data } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import { ErrorNote, PageHeader, when } from '../ui.tsx';
import type { CallFlow } from './call-flows.tsx';
import { EditorPage } from './editor-page.tsx';
import { useEditorState } from './flow-editor/editor-state.ts';
import { EditorContext, TextInput } from './flow-editor/fields.tsx';
import { fromApi, redirectsToSelf, SELF_FLOW, type Step, toApi, withoutSelf } from './flow-editor/model.ts';
import { StepList } from './flow-editor/step-list.tsx';
import { TEMPLATES } from './flow-editor/templates.ts';
import { validateSteps } from './flow-editor/validate.ts';

function Templates({ onPick }: { onPick: (name: string, steps: Step[]) => void }) {
  return (
    <section aria-labelledby="templates-title" className="templates">
      <h2 id="templates-title">Start from a template</h2>
      <div className="cards">
        {TEMPLATES.map((template) => (
          <article key={template.id}>
            <h3>{template.name}</h3>
            <p>{template.description}</p>
            <button
              type="button"
              className="secondary"
              onClick={() => onPick(template.name, template.steps())}
            >
              Use this template<span className="visually-hidden"> ({template.name})</span>
            </button>
          </article>
        ))}
      </div>
    </section>
  );
}

function FlowEditor({ flow }: { flow?: CallFlow }) {
  const me = useMe();
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const readOnly = !canManage(me.data);
  const [name, setName] = useState(flow?.name ?? '');
  const [steps, setSteps] = useState<Step[]>(() => fromApi(flow?.steps ?? []));
  const [saved, setSaved] = useState<CallFlow | undefined>(flow);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  // A new flow that redirects to itself is created first, then given its own id (model.ts SELF_FLOW); a save
  // refused after the creation must not create it twice.
  const created = useRef<string | undefined>(undefined);
  const problems = useMemo(() => {
    const found = validateSteps(steps);
    if (name.trim() === '') found.set('name', 'is required');
    if (steps.length === 0) found.set('steps', 'needs at least one step');
    return found;
  }, [name, steps]);
  const editor = useEditorState(problems, { readOnly, selfId: saved?.id ?? SELF_FLOW });

  const change = (next: Step[]) => {
    editor.changed();
    setError(undefined);
    setSteps(next);
  };

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    if (!editor.ready()) return;
    setBusy(true);
    try {
      let id = saved?.id ?? created.current;
      let result: CallFlow;
      if (id) {
        result = await data<CallFlow>('PATCH', `/v2/portal/call-flows/${encodeURIComponent(id)}`, {
          name: name.trim(),
          steps: toApi(steps, id),
        });
      } else {
        const first = redirectsToSelf(steps) ? withoutSelf(steps) : steps;
        result = await data<CallFlow>('POST', '/v2/portal/call-flows', {
          name: name.trim(),
          steps: toApi(first),
        });
        id = result.id;
        created.current = id;
        if (first !== steps) {
          result = await data<CallFlow>('PATCH', `/v2/portal/call-flows/${encodeURIComponent(id)}`, {
            steps: toApi(steps, id),
          });
        }
      }
      setSaved(result);
      client.setQueryData(['call-flows', result.id], result);
      await client.invalidateQueries({ queryKey: ['call-flows'] });
      if (!flow) navigate(`/call-flows/${result.id}`, { replace: true });
    } catch (failure) {
      setError(failure);
      editor.refused(failure);
    } finally {
      setBusy(false);
    }
  };

  const pick = (templateName: string, templateSteps: Step[]) => {
    if (steps.length > 0 && !window.confirm('Replace the steps with the template?')) return;
    if (name.trim() === '') setName(templateName);
    change(templateSteps);
  };

  return (
    <EditorContext.Provider value={editor.state}>
      {saved ? (
        <p className="flow-version" data-testid="flow-version">
          Version {saved.version} · saved {when(saved.updatedAt)} · <code>{saved.id}</code>
        </p>
      ) : null}
      {readOnly ? <p>You can read this flow; owners and admins change it.</p> : null}
      {!readOnly && !saved ? <Templates onPick={pick} /> : null}
      <form onSubmit={save} noValidate aria-label="Call flow">
        <fieldset disabled={readOnly} className="flow-editor">
          <TextInput
            path="name"
            label="Name"
            required
            value={name}
            onChange={(value) => {
              setError(undefined);
              setName(value ?? '');
            }}
          />
          <h2>Steps</h2>
          {editor.state.shown('steps') && problems.get('steps') ? (
            <p className="field-problem">The flow {problems.get('steps')}.</p>
          ) : null}
          <StepList steps={steps} path="steps" label="the flow" onChange={change} />
        </fieldset>
        <ErrorNote error={error} />
        {readOnly ? null : (
          <button type="submit" aria-busy={busy} disabled={busy}>
            {saved ? 'Save a new version' : 'Create flow'}
          </button>
        )}
      </form>
    </EditorContext.Provider>
  );
}

export function NewCallFlow() {
  return (
    <>
      <PageHeader title="New call flow" />
      <FlowEditor />
    </>
  );
}

export default function CallFlowEdit() {
  const { id } = useParams<{ id: string }>();
  return (
    <EditorPage<CallFlow>
      path={`/v2/portal/call-flows/${encodeURIComponent(id)}`}
      listHref="/call-flows"
      untitled="Call flow"
      confirm={(flow) => `Delete the call flow ${flow.name} and all its versions?`}
    >
      {(flow) => <FlowEditor key={flow.id} flow={flow} />}
    </EditorPage>
  );
}
