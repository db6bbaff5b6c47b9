// The members of a ring group or a queue: extensions in ring order (the order sequential and round robin
// follow), added from the organization's extensions, moved up or down, removed. Also the strategies both share.
import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { page } from '../api.ts';

export const STRATEGIES: [string, string][] = [
  ['simultaneous', 'All at once'],
  ['sequential', 'One after another, in order'],
  ['round_robin', 'Round robin (after whoever answered last)'],
  ['longest_idle', 'Longest idle first'],
];

export interface ExtensionChoice {
  id: string;
  label: string;
}

/** The organization's extensions (the first 100) as choices, and a way to name one by its id. */
export function useExtensionChoices() {
  const list = useQuery({
    queryKey: ['extensions', 'picker'],
    queryFn: async () =>
      (
        await page<{ id: string; extension: string; name: string }>('/v2/portal/extensions?limit=100')
      ).data.map((row) => ({ id: row.id, label: `${row.extension} · ${row.name}` })),
  });
  const choices = list.data;
  return {
    choices,
    labelOf: (id: string) => choices?.find((choice) => choice.id === id)?.label ?? id,
  };
}

export function MembersEditor({
  value,
  onChange,
  disabled,
  problem,
}: {
  value: string[];
  onChange: (ids: string[]) => void;
  disabled?: boolean;
  problem?: string;
}) {
  const { choices, labelOf } = useExtensionChoices();
  const [adding, setAdding] = useState('');
  const id = useId();
  const free = (choices ?? []).filter((choice) => !value.includes(choice.id));
  const move = (index: number, by: -1 | 1) => {
    const next = [...value];
    const [moved] = next.splice(index, 1);
    next.splice(index + by, 0, moved!);
    onChange(next);
  };
  return (
    <fieldset className="members" aria-describedby={problem ? `${id}-problem` : undefined}>
      <legend>Members, in ring order</legend>
      {value.length === 0 ? <p className="empty">No members yet.</p> : null}
      <ol>
        {value.map((member, index) => (
          <li key={member}>
            <span>{labelOf(member)}</span>
            {disabled ? null : (
              <span className="row-actions">
                <button
                  type="button"
                  className="secondary outline"
                  disabled={index === 0}
                  onClick={() => move(index, -1)}
                >
                  Up<span className="visually-hidden"> ({labelOf(member)})</span>
                </button>
                <button
                  type="button"
                  className="secondary outline"
                  disabled={index === value.length - 1}
                  onClick={() => move(index, 1)}
                >
                  Down<span className="visually-hidden"> ({labelOf(member)})</span>
                </button>
                <button
                  type="button"
                  className="secondary outline"
                  onClick={() => onChange(value.filter((m) => m !== member))}
                >
                  Remove<span className="visually-hidden"> ({labelOf(member)})</span>
                </button>
              </span>
            )}
          </li>
        ))}
      </ol>
      {disabled ? null : (
        <div className="add-step">
          <label htmlFor={`${id}-add`} className="visually-hidden">
            Extension to add
          </label>
          <select id={`${id}-add`} value={adding} onChange={(event) => setAdding(event.target.value)}>
            <option value="">{choices === undefined ? 'Loading…' : 'Choose an extension…'}</option>
            {free.map((choice) => (
              <option key={choice.id} value={choice.id}>
                {choice.label}
              </option>
            ))}
          </select>
          <button
            type="button"
            className="secondary"
            disabled={adding === ''}
            onClick={() => {
              onChange([...value, adding]);
              setAdding('');
            }}
          >
            Add member
          </button>
        </div>
      )}
      {problem ? (
        <small id={`${id}-problem`} className="field-problem">
          {problem}
        </small>
      ) : null}
    </fieldset>
  );
}
