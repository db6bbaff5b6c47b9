// Ring groups: extensions that ring together or in turn when a call flow dials the group. Members read;
// owners and admins create, change and delete.
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { call, data } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import type { Data } from '../shapes.ts';
import { ActionButton, ErrorNote, Field, PagedTable, PageHeader, rowsOf, usePagedList } from '../ui.tsx';
import { MembersEditor, STRATEGIES, useExtensionChoices } from './extension-members.tsx';

export type RingGroup = Data<'/v2/portal/ring-groups/{id}'>;

const strategyName = (value: string) => STRATEGIES.find(([key]) => key === value)?.[1] ?? value;

function RingGroupForm({ group, onDone }: { group?: RingGroup; onDone: () => void }) {
  const client = useQueryClient();
  const [name, setName] = useState(group?.name ?? '');
  const [members, setMembers] = useState<string[]>(group?.extensionIds ?? []);
  const [strategy, setStrategy] = useState<string>(group?.strategy ?? 'simultaneous');
  const [ringSeconds, setRingSeconds] = useState(String(group?.ringSeconds ?? 20));
  const [tried, setTried] = useState(false);
  const seconds = Number(ringSeconds);
  const problems = {
    name: name.trim() === '' ? 'Name is required' : undefined,
    members: members.length === 0 ? 'Add at least one member' : undefined,
    ringSeconds:
      !Number.isInteger(seconds) || seconds < 5 || seconds > 300
        ? 'Ring time must be 5 to 300 seconds'
        : undefined,
  };
  const save = useMutation({
    mutationFn: () => {
      const body = { name: name.trim(), extensionIds: members, strategy, ringSeconds: seconds };
      return group
        ? data<RingGroup>('PATCH', `/v2/portal/ring-groups/${encodeURIComponent(group.id)}`, body)
        : data<RingGroup>('POST', '/v2/portal/ring-groups', body);
    },
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ['ring-groups'] });
      onDone();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setTried(true);
    if (Object.values(problems).some(Boolean)) return;
    save.mutate();
  };
  const show = (problem: string | undefined, always = false) => (tried || always ? problem : undefined);
  return (
    <form onSubmit={submit} noValidate aria-label={group ? `Edit ${group.name}` : 'New ring group'}>
      <div className="grid">
        <Field label="Name" hint={show(problems.name)}>
          {(id, hint) => (
            <input
              id={id}
              value={name}
              maxLength={100}
              required
              aria-invalid={show(problems.name) ? true : undefined}
              aria-describedby={hint}
              onChange={(event) => setName(event.target.value)}
            />
          )}
        </Field>
        <Field label="Strategy">
          {(id) => (
            <select id={id} value={strategy} onChange={(event) => setStrategy(event.target.value)}>
              {STRATEGIES.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field
          label="Ring time (seconds)"
          hint={show(problems.ringSeconds, true) ?? '5 to 300, each attempt'}
        >
          {(id, hint) => (
            <input
              id={id}
              type="number"
              min={5}
              max={300}
              value={ringSeconds}
              aria-invalid={problems.ringSeconds ? true : undefined}
              aria-describedby={hint}
              onChange={(event) => setRingSeconds(event.target.value)}
            />
          )}
        </Field>
      </div>
      <MembersEditor value={members} onChange={setMembers} problem={show(problems.members)} />
      <ErrorNote error={save.error} />
      <button type="submit" aria-busy={save.isPending} disabled={save.isPending}>
        {group ? 'Save' : 'Create ring group'}
      </button>
    </form>
  );
}

export default function RingGroups() {
  const me = useMe();
  const manager = canManage(me.data);
  const list = usePagedList<RingGroup>(['ring-groups'], '/v2/portal/ring-groups', 'offset');
  const { labelOf } = useExtensionChoices();
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<string | null>(null);
  const rows = rowsOf(list);
  const selected = rows?.find((group) => group.id === editing);
  return (
    <>
      <PageHeader title="Ring groups" />
      <p>Extensions that ring together or in turn when a call flow dials the group.</p>
      {manager ? (
        <details open={creating} onToggle={(event) => setCreating(event.currentTarget.open)}>
          <summary>New ring group</summary>
          {creating ? <RingGroupForm onDone={() => setCreating(false)} /> : null}
        </details>
      ) : null}
      <PagedTable
        list={list}
        caption="Ring groups"
        empty="No ring groups yet."
        columns={[
          { header: 'Name', cell: (g) => g.name },
          { header: 'Members', cell: (g) => g.extensionIds.map(labelOf).join(', ') || '—' },
          { header: 'Strategy', cell: (g) => strategyName(g.strategy) },
          { header: 'Ring time', cell: (g) => `${g.ringSeconds} s` },
          { header: 'Id', cell: (g) => <code>{g.id}</code> },
          {
            header: '',
            cell: (g) =>
              manager ? (
                <div className="row-actions">
                  <button
                    type="button"
                    className="secondary outline"
                    aria-label={`Edit ${g.name}`}
                    onClick={() => setEditing(editing === g.id ? null : g.id)}
                  >
                    Edit
                  </button>
                  <ActionButton
                    label="Delete"
                    className="secondary outline"
                    confirm={`Delete the ring group ${g.name}? Its extensions stay.`}
                    run={() => call('DELETE', `/v2/portal/ring-groups/${encodeURIComponent(g.id)}`)}
                    invalidate={[['ring-groups']]}
                  />
                </div>
              ) : null,
          },
        ]}
      />
      {selected ? (
        <section aria-label={`Edit ${selected.name}`}>
          <h2>Edit {selected.name}</h2>
          <RingGroupForm key={selected.id} group={selected} onDone={() => setEditing(null)} />
        </section>
      ) : null}
    </>
  );
}
