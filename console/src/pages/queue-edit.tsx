// One queue: its settings (members, strategy, hold audio, position announcements, the longest wait and the steps
// that follow it, wrap-up time) and, once it exists, its live state. Members read; owners and admins change.
import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useMemo, useState } from 'react';
import { useLocation, useParams } from 'wouter';
import { data } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import { ErrorNote, PageHeader } from '../ui.tsx';
import { EditorPage } from './editor-page.tsx';
import { MembersEditor, STRATEGIES, useExtensionChoices } from './extension-members.tsx';
import { useEditorState } from './flow-editor/editor-state.ts';
import { Checkbox, EditorContext, NumberInput, SelectInput, TextInput } from './flow-editor/fields.tsx';
import { fromApi, type Step, toApi } from './flow-editor/model.ts';
import { StepList } from './flow-editor/step-list.tsx';
import { validateSteps } from './flow-editor/validate.ts';
import { QueueLiveState } from './queue-live.tsx';
import type { Queue } from './queues.tsx';

function QueueForm({ queue }: { queue?: Queue }) {
  const me = useMe();
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const readOnly = !canManage(me.data);
  const [name, setName] = useState(queue?.name ?? '');
  const [members, setMembers] = useState<string[]>(queue?.extensionIds ?? []);
  const [strategy, setStrategy] = useState<string>(queue?.strategy ?? 'longest_idle');
  const [holdAudioId, setHoldAudioId] = useState<string | undefined>(queue?.holdAudioId ?? undefined);
  const [announcePosition, setAnnouncePosition] = useState(queue?.announcePosition ?? false);
  const [maxWaitSeconds, setMaxWaitSeconds] = useState<unknown>(queue?.maxWaitSeconds ?? 600);
  const [wrapUpSeconds, setWrapUpSeconds] = useState<unknown>(queue?.wrapUpSeconds ?? 0);
  const [onTimeout, setOnTimeout] = useState<Step[]>(() => fromApi(queue?.onTimeout ?? []));
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState(false);
  const problems = useMemo(() => {
    const found = validateSteps(onTimeout, 'onTimeout');
    const whole = (value: unknown, min: number, max: number) =>
      typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max;
    if (name.trim() === '') found.set('name', 'is required');
    if (members.length === 0) found.set('extensionIds', 'Add at least one member');
    if (whole(maxWaitSeconds, 10, 7200)) found.set('maxWaitSeconds', 'must be from 10 to 7200');
    if (whole(wrapUpSeconds, 0, 600)) found.set('wrapUpSeconds', 'must be from 0 to 600');
    return found;
  }, [name, members, maxWaitSeconds, wrapUpSeconds, onTimeout]);
  const editor = useEditorState(problems, { readOnly });
  const edited = () => {
    setError(undefined);
    setSaved(false);
  };

  const save = async (event: FormEvent) => {
    event.preventDefault();
    edited();
    if (!editor.ready()) return;
    setBusy(true);
    const body = {
      name: name.trim(),
      extensionIds: members,
      strategy,
      holdAudioId: holdAudioId?.trim() || null,
      announcePosition,
      maxWaitSeconds,
      wrapUpSeconds,
      onTimeout: toApi(onTimeout),
    };
    try {
      const result = queue
        ? await data<Queue>('PATCH', `/v2/portal/queues/${encodeURIComponent(queue.id)}`, body)
        : await data<Queue>('POST', '/v2/portal/queues', body);
      client.setQueryData(['queues', result.id], result);
      await client.invalidateQueries({ queryKey: ['queues'] });
      setSaved(true);
      if (!queue) navigate(`/queues/${result.id}`, { replace: true });
    } catch (failure) {
      setError(failure);
      editor.refused(failure);
    } finally {
      setBusy(false);
    }
  };

  const membersProblem = editor.state.shown('extensionIds') ? problems.get('extensionIds') : undefined;
  return (
    <EditorContext.Provider value={editor.state}>
      <form onSubmit={save} noValidate aria-label={queue ? `Settings of ${queue.name}` : 'New queue'}>
        <fieldset disabled={readOnly}>
          <div className="grid">
            <TextInput
              path="name"
              label="Name"
              required
              value={name}
              onChange={(value) => {
                edited();
                setName(value ?? '');
              }}
            />
            <SelectInput
              path="strategy"
              label="Offer callers to members"
              value={strategy}
              options={STRATEGIES}
              onChange={(value) => {
                edited();
                setStrategy(value);
              }}
            />
          </div>
          <MembersEditor
            value={members}
            disabled={readOnly}
            problem={membersProblem}
            onChange={(ids) => {
              edited();
              editor.state.touch('extensionIds');
              setMembers(ids);
            }}
          />
          <div className="grid">
            <TextInput
              path="holdAudioId"
              label="Hold audio id (optional)"
              hint="Empty: the default hold music"
              value={holdAudioId}
              onChange={(value) => {
                edited();
                setHoldAudioId(value);
              }}
            />
            <NumberInput
              path="maxWaitSeconds"
              label="Longest wait (seconds)"
              min={10}
              max={7200}
              required
              value={maxWaitSeconds}
              onChange={(value) => {
                edited();
                setMaxWaitSeconds(value);
              }}
            />
            <NumberInput
              path="wrapUpSeconds"
              label="Wrap-up after a call (seconds)"
              min={0}
              max={600}
              required
              value={wrapUpSeconds}
              onChange={(value) => {
                edited();
                setWrapUpSeconds(value);
              }}
            />
          </div>
          <Checkbox
            path="announcePosition"
            label="Tell waiting callers their place in line"
            value={announcePosition}
            onChange={(value) => {
              edited();
              setAnnouncePosition(value);
            }}
          />
          <h2>After the longest wait</h2>
          <p>With no steps here, the call ends.</p>
          <StepList
            steps={onTimeout}
            path="onTimeout"
            label="after the longest wait"
            onChange={(steps) => {
              edited();
              editor.changed();
              setOnTimeout(steps);
            }}
          />
        </fieldset>
        <ErrorNote error={error} />
        {saved ? <p role="status">Saved.</p> : null}
        {readOnly ? null : (
          <button type="submit" aria-busy={busy} disabled={busy}>
            {queue ? 'Save queue' : 'Create queue'}
          </button>
        )}
      </form>
    </EditorContext.Provider>
  );
}

export function NewQueue() {
  return (
    <>
      <PageHeader title="New queue" />
      <QueueForm />
    </>
  );
}

export default function QueueEdit() {
  const { id } = useParams<{ id: string }>();
  const { labelOf } = useExtensionChoices();
  return (
    <EditorPage<Queue>
      path={`/v2/portal/queues/${encodeURIComponent(id)}`}
      listHref="/queues"
      untitled="Queue"
      confirm={(queue) => `Delete the queue ${queue.name}?`}
    >
      {(queue) => (
        <>
          <QueueLiveState queueId={queue.id} labelOf={labelOf} />
          <h2>Settings</h2>
          <QueueForm key={queue.id} queue={queue} />
        </>
      )}
    </EditorPage>
  );
}
