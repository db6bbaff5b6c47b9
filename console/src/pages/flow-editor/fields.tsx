// The flow editor's shared state (problems, what the person has touched, the server's refusal, the lists the
// pickers offer) and its fields: each knows its path, shows the problem found there, the server's own message
// first, and says so to screen readers (aria-invalid, aria-describedby).
import { useQueries } from '@tanstack/react-query';
import { type ComponentType, createContext, type ReactNode, useContext, useId } from 'react';
import { page } from '../../api.ts';
import type { Step } from './model.ts';
import type { Problems } from './validate.ts';

export type PickerKind = 'extension' | 'ring_group' | 'queue' | 'agent' | 'flow';
export interface Choice {
  id: string;
  label: string;
}
export type Pickers = Record<PickerKind, Choice[] | undefined>;

export interface EditorState {
  problems: Problems;
  /** The server's refusal of the last save, its path in one spelling (model.ts normalPath). */
  server?: { path: string; message: string };
  /** Whether a problem at `path` is shown yet: once its field was changed, or a save was tried. */
  shown: (path: string) => boolean;
  touch: (path: string) => void;
  pickers: Pickers;
  /** The flow being edited (SELF_FLOW before it is saved): a redirect may name it. */
  selfId?: string;
  readOnly: boolean;
}

export const EditorContext = createContext<EditorState>({
  problems: new Map(),
  shown: () => false,
  touch: () => {},
  pickers: { extension: [], ring_group: [], queue: [], agent: [], flow: [] },
  readOnly: true,
});

export function useEditor(): EditorState {
  return useContext(EditorContext);
}

/** The message to show at `path`: the server's for that very field, else what the editor found there. */
export function useProblem(path: string): string | undefined {
  const editor = useEditor();
  if (editor.server?.path === path) return editor.server.message;
  return editor.shown(path) ? editor.problems.get(path) : undefined;
}

interface Named<T> {
  path: string;
  label: string;
  value: T;
  onChange: (value: T) => void;
  hint?: ReactNode;
}

function Frame({
  path,
  label,
  hint,
  className,
  children,
}: {
  path: string;
  label: string;
  hint?: ReactNode;
  className?: string;
  children: (props: {
    id: string;
    'data-path': string;
    'aria-invalid': boolean | undefined;
    'aria-describedby': string | undefined;
  }) => ReactNode;
}) {
  const id = useId();
  const problem = useProblem(path);
  const described = [hint ? `${id}-hint` : '', problem ? `${id}-problem` : ''].filter(Boolean).join(' ');
  return (
    <div className={`field ${className ?? ''}`}>
      <label htmlFor={id}>{label}</label>
      {children({
        id,
        'data-path': path,
        'aria-invalid': problem ? true : undefined,
        'aria-describedby': described || undefined,
      })}
      {hint ? <small id={`${id}-hint`}>{hint}</small> : null}
      {problem ? (
        <small id={`${id}-problem`} className="field-problem" data-problem-for={path}>
          {label} {problem}
        </small>
      ) : null}
    </div>
  );
}

export function TextInput({
  type = 'text',
  required,
  list,
  placeholder,
  inputMode,
  multiline,
  className,
  ...field
}: Named<string | undefined> & {
  type?: string;
  required?: boolean;
  list?: string;
  placeholder?: string;
  inputMode?: 'numeric' | 'tel' | 'url' | 'text';
  multiline?: boolean;
  className?: string;
}) {
  const { touch } = useEditor();
  const change = (value: string) => {
    touch(field.path);
    field.onChange(value === '' && !required ? undefined : value);
  };
  return (
    <Frame path={field.path} label={field.label} hint={field.hint} className={className}>
      {(props) =>
        multiline ? (
          <textarea
            {...props}
            rows={2}
            required={required}
            value={field.value ?? ''}
            onChange={(event) => change(event.target.value)}
          />
        ) : (
          <input
            {...props}
            type={type}
            required={required}
            list={list}
            placeholder={placeholder}
            inputMode={inputMode}
            value={field.value ?? ''}
            onChange={(event) => change(event.target.value)}
          />
        )
      }
    </Frame>
  );
}

export function NumberInput({
  min,
  max,
  required,
  ...field
}: Named<unknown> & { min: number; max: number; required?: boolean }) {
  const { touch } = useEditor();
  return (
    <Frame path={field.path} label={field.label} hint={field.hint ?? `${min} to ${max}`}>
      {(props) => (
        <input
          {...props}
          type="number"
          min={min}
          max={max}
          step={1}
          required={required}
          value={typeof field.value === 'number' ? field.value : ''}
          onChange={(event) => {
            touch(field.path);
            const text = event.target.value;
            field.onChange(text === '' ? undefined : Number(text));
          }}
        />
      )}
    </Frame>
  );
}

export function SelectInput({ options, ...field }: Named<string> & { options: [string, string][] }) {
  const { touch } = useEditor();
  return (
    <Frame path={field.path} label={field.label} hint={field.hint}>
      {(props) => (
        <select
          {...props}
          value={field.value}
          onChange={(event) => {
            touch(field.path);
            field.onChange(event.target.value);
          }}
        >
          {options.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      )}
    </Frame>
  );
}

/** A choice among the organization's extensions, ring groups, queues, agents or flows. */
export function Picker({ kind, ...field }: Named<string | undefined> & { kind: PickerKind }) {
  const { pickers, selfId } = useEditor();
  const choices = [...(pickers[kind] ?? [])];
  if (kind === 'flow' && selfId) {
    const others = choices.filter((choice) => choice.id !== selfId);
    choices.splice(0, choices.length, { id: selfId, label: 'This flow (start it again)' }, ...others);
  }
  const value = field.value ?? '';
  const options: [string, string][] = [['', pickers[kind] === undefined ? 'Loading…' : 'Choose…']];
  for (const choice of choices) options.push([choice.id, choice.label]);
  if (value && !choices.some((choice) => choice.id === value)) options.push([value, `${value} (not found)`]);
  return <SelectInput {...field} value={value} options={options} />;
}

const PICKER_LISTS: [PickerKind, string, (row: Record<string, string>) => string][] = [
  ['extension', '/v2/portal/extensions', (row) => `${row.extension} · ${row.name}`],
  ['ring_group', '/v2/portal/ring-groups', (row) => row.name ?? row.id],
  ['queue', '/v2/portal/queues', (row) => row.name ?? row.id],
  ['agent', '/v2/portal/agents', (row) => row.name ?? row.id],
  ['flow', '/v2/portal/call-flows', (row) => row.name ?? row.id],
];

/**
 * The lists the pickers offer: the first 100 of each, as the portal lists them. A list the organization cannot
 * read (no AI agents product: 402) offers nothing rather than loading for ever.
 */
export function usePickers(): Pickers {
  const results = useQueries({
    queries: PICKER_LISTS.map(([, path, label]) => ({
      queryKey: [path.split('/').pop(), 'picker'],
      queryFn: async (): Promise<Choice[]> =>
        (await page<Record<string, string>>(`${path}?limit=100`)).data.map((row) => ({
          id: row.id!,
          label: label(row),
        })),
    })),
  });
  const pickers = {} as Pickers;
  PICKER_LISTS.forEach(([kind], index) => {
    const result = results[index]!;
    pickers[kind] = result.isError ? [] : result.data;
  });
  return pickers;
}

export interface ListProps {
  steps: Step[];
  /** Where the list sits: `steps`, `steps.0.whenOpen`, `onTimeout`. */
  path: string;
  /** What the list is for, said to the person: "When open", "If nobody answers". */
  label: string;
  onChange: (steps: Step[]) => void;
}

/**
 * The step list component, handed down by the outermost list (step-list.tsx), so that a step's form can hold
 * lists of steps without the two files importing each other.
 */
export const ListContext = createContext<ComponentType<ListProps> | null>(null);

/**
 * A list of steps inside a step, under its title: "When open", "If nobody answers". An optional one that is
 * empty stays folded, so a dial does not show two empty lists every time.
 */
export function NestedSteps({ optional, ...props }: ListProps & { optional?: boolean }) {
  const List = useContext(ListContext);
  const list = List ? <List {...props} /> : null;
  if (optional) {
    return (
      <details className="nested" open={props.steps.length > 0}>
        <summary>
          {props.label} ({props.steps.length === 0 ? 'no steps' : `${props.steps.length} steps`})
        </summary>
        {list}
      </details>
    );
  }
  return (
    <section className="nested" aria-label={props.label}>
      <h4>{props.label}</h4>
      {list}
    </section>
  );
}

export function Checkbox({ path, label, value, onChange }: Named<boolean>) {
  const { touch } = useEditor();
  return (
    <label className="checkbox">
      <input
        type="checkbox"
        data-path={path}
        checked={value}
        onChange={(event) => {
          touch(path);
          onChange(event.target.checked);
        }}
      />{' '}
      {label}
    </label>
  );
}
