// The console's shared pieces. Pico CSS styles plain semantic HTML (labelled inputs, tables, <dialog>,
// aria-invalid, aria-busy), so these stay thin: what every page would otherwise write again.
import {
  type InfiniteData,
  type UseMutationResult,
  useInfiniteQuery,
  useMutation,
  useQueryClient,
} from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { ApiProblem, call, data, type Page } from './api.ts';

export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · Comms console`;
  }, [title]);
  return (
    <header className="page-header">
      <h1>{title}</h1>
      {children ? <div className="actions">{children}</div> : null}
    </header>
  );
}

/** The server's message for a failed call (Shape A `message`), announced to screen readers. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof ApiProblem || error instanceof Error ? error.message : String(error);
  return (
    <p role="alert" className="error">
      {message}
    </p>
  );
}

export function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: ReactNode;
  children: (id: string, describedBy: string | undefined) => ReactNode;
}) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  // The hint sits beside the label, not in it, so the field's accessible name is the label alone.
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id, hintId)}
      {hint ? <small id={hintId}>{hint}</small> : null}
    </div>
  );
}

/** A field to choose a password: the server's minimum, and the browser's password manager asked to suggest one. */
export function NewPasswordField({ name, label, hint }: { name: string; label: string; hint?: string }) {
  return (
    <Field label={label} hint={hint ?? 'At least 8 characters'}>
      {(id, hintId) => (
        <input
          id={id}
          name={name}
          type="password"
          autoComplete="new-password"
          minLength={8}
          required
          aria-describedby={hintId}
        />
      )}
    </Field>
  );
}

/** A recording or voicemail to play; the transcription shown beside it is its text alternative. */
export function AudioPlayer({ src, label }: { src: string; label: string }) {
  // biome-ignore lint/a11y/useMediaCaption: the transcription beside it is the text alternative
  return <audio controls preload="none" src={src} aria-label={label} />;
}

/** A form whose submit runs a mutation: busy while it runs, the server's message when it fails. */
export function MutationForm<T>({
  mutation,
  submit,
  label,
  children,
  className,
}: {
  mutation: UseMutationResult<T, Error, FormData>;
  submit?: string;
  label: string;
  children: ReactNode;
  className?: string;
}) {
  const onSubmit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    mutation.mutate(new FormData(event.currentTarget));
  };
  return (
    <form onSubmit={onSubmit} aria-label={label} className={className}>
      {children}
      <ErrorNote error={mutation.error} />
      <button type="submit" aria-busy={mutation.isPending} disabled={mutation.isPending}>
        {submit ?? label}
      </button>
    </form>
  );
}

/**
 * A form folded under a summary until wanted ("New list", "Place a call"): how a page offers to create
 * something above the list of what exists.
 */
export function FormDisclosure<T>({
  summary,
  ...form
}: { summary: string } & Parameters<typeof MutationForm<T>>[0]) {
  return (
    <details>
      <summary>{summary}</summary>
      <MutationForm {...form} />
    </details>
  );
}

/**
 * "New list", "New knowledge base": a name and a description, created by POST to `path`, which then
 * refreshes the list (`listKey`).
 */
export function NewNamedForm({
  summary,
  label,
  path,
  listKey,
  nameMaxLength,
}: {
  summary: string;
  label: string;
  path: string;
  listKey: string;
  nameMaxLength: number;
}) {
  const create = useAction(
    (form) =>
      data('POST', path, { name: text(form, 'name'), description: text(form, 'description') ?? null }),
    [[listKey]],
  );
  return (
    <FormDisclosure summary={summary} mutation={create} label={label} submit="Create">
      <div className="grid">
        <Field label="Name">{(id) => <input id={id} name="name" required maxLength={nameMaxLength} />}</Field>
        <Field label="Description">{(id) => <input id={id} name="description" />}</Field>
      </div>
    </FormDisclosure>
  );
}

/** The columns a record of traffic (a message, a call) starts with: when, which way, from whom, to whom. */
export function trafficColumns<T extends { direction: string; from: string; to: string }>(
  at: (row: T) => string | null,
): Column<T>[] {
  return [
    { header: 'When', cell: (row) => when(at(row)) },
    { header: 'Direction', cell: (row) => row.direction },
    { header: 'From', cell: (row) => row.from },
    { header: 'To', cell: (row) => row.to },
  ];
}

/** A mutation that refreshes the named queries when it succeeds. */
export function useAction<T>(
  run: (form: FormData) => Promise<T>,
  invalidate: string[][],
  onDone?: (result: T) => void,
) {
  const client = useQueryClient();
  return useMutation<T, Error, FormData>({
    mutationFn: run,
    onSuccess: async (result) => {
      await Promise.all(invalidate.map((queryKey) => client.invalidateQueries({ queryKey })));
      onDone?.(result);
    },
  });
}

/** A button for a one-off action (pause, delete, rotate) with its own busy state and error. */
export function ActionButton({
  label,
  run,
  invalidate,
  confirm,
  className,
  onDone,
}: {
  label: string;
  run: () => Promise<unknown>;
  invalidate: string[][];
  confirm?: string;
  className?: string;
  onDone?: (result: unknown) => void;
}) {
  const action = useAction(() => run(), invalidate, onDone);
  return (
    <>
      <button
        type="button"
        className={className}
        aria-busy={action.isPending}
        disabled={action.isPending}
        onClick={() => {
          if (confirm && !window.confirm(confirm)) return;
          action.mutate(new FormData());
        }}
      >
        {label}
      </button>
      <ErrorNote error={action.error} />
    </>
  );
}

export interface Column<T> {
  header: string;
  cell: (row: T) => ReactNode;
}

interface TableProps<T> {
  caption: string;
  columns: Column<T>[];
  rows: T[] | undefined;
  /** What an empty list says (the empty state). */
  empty: string;
  rowKey?: (row: T, index: number) => string;
}

export function DataTable<T>({ caption, columns, rows, empty, rowKey }: TableProps<T>) {
  if (rows === undefined) return <p aria-busy="true">Loading…</p>;
  if (rows.length === 0) return <p className="empty">{empty}</p>;
  return (
    <div className="overflow-auto">
      <table className="striped">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column.header} scope="col">
                {column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, index) => (
            <tr key={rowKey ? rowKey(row, index) : ((row as { id?: string }).id ?? String(index))}>
              {columns.map((column) => (
                <td key={column.header} data-label={column.header}>
                  {column.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * A list read page by page: keyset ("load more" with the server's cursor) where the endpoint has it, else
 * offset pages. The rows of every page loaded so far, in order.
 */
export function usePagedList<T>(
  key: unknown[],
  path: string,
  mode: 'keyset' | 'offset',
  options: { limit?: number; poll?: (rows: T[]) => boolean } = {},
) {
  const limit = options.limit ?? 25;
  return useInfiniteQuery<Page<T>, Error, InfiniteData<Page<T>>, unknown[], string | number>({
    queryKey: [...key, path],
    // While something in the list is still changing (a message awaiting its receipt, a call ringing), look
    // again every 3 seconds.
    refetchInterval: (query) =>
      options.poll?.(query.state.data?.pages.flatMap((p) => p.data) ?? []) ? 3_000 : false,
    initialPageParam: mode === 'keyset' ? '' : 1,
    queryFn: ({ pageParam }) => {
      const joiner = path.includes('?') ? '&' : '?';
      const position =
        mode === 'keyset' ? `cursor=${encodeURIComponent(String(pageParam))}` : `page=${String(pageParam)}`;
      return call<Page<T>>('GET', `${path}${joiner}limit=${limit}&${position}`);
    },
    getNextPageParam: (last, _all, lastParam) => {
      if (mode === 'keyset') return last.next_cursor ?? undefined;
      const current = Number(lastParam);
      return last.pagination.totalPages !== null && current < last.pagination.totalPages
        ? current + 1
        : undefined;
    },
  });
}

export function LoadMore({
  list,
}: {
  list: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => unknown };
}) {
  if (!list.hasNextPage) return null;
  return (
    <button
      type="button"
      className="secondary"
      aria-busy={list.isFetchingNextPage}
      disabled={list.isFetchingNextPage}
      onClick={() => list.fetchNextPage()}
    >
      Load more
    </button>
  );
}

/** What PagedTable needs of a usePagedList. */
type PagedList<T> = Parameters<typeof LoadMore>[0]['list'] & { data?: { pages: Page<T>[] }; error: unknown };

/**
 * A list read page by page (usePagedList) as a table: why it failed, its rows or its empty state, and "Load
 * more" while the server has more. What every list page shows the same way.
 */
export function PagedTable<T>({ list, ...table }: { list: PagedList<T> } & Omit<TableProps<T>, 'rows'>) {
  return (
    <>
      <ErrorNote error={list.error} />
      <DataTable {...table} rows={rowsOf(list)} />
      <LoadMore list={list} />
    </>
  );
}

export function rowsOf<T>(list: { data?: { pages: Page<T>[] } }): T[] | undefined {
  return list.data?.pages.flatMap((page) => page.data);
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="secondary outline copy"
      onClick={async () => {
        await navigator.clipboard?.writeText(text).catch(() => undefined);
        setCopied(true);
        setTimeout(() => setCopied(false), 2000);
      }}
    >
      <span aria-live="polite">{copied ? 'Copied' : label}</span>
    </button>
  );
}

/** A modal <dialog>: focus moves into it, Escape closes it, focus returns where it was. */
export function Modal({
  open,
  title,
  onClose,
  children,
}: {
  open: boolean;
  title: string;
  onClose: () => void;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={onClose}>
      <article>
        <header>
          <button type="button" aria-label="Close" rel="prev" onClick={onClose} />
          <h2 id={titleId}>{title}</h2>
        </header>
        {open ? children : null}
      </article>
    </dialog>
  );
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Date(iso).toLocaleString();
}

export function Status({ value }: { value: string }) {
  return <mark className={`status status-${value}`}>{value.replaceAll('_', ' ')}</mark>;
}

/** A form's text field, or undefined when empty. */
export function text(form: FormData, name: string): string | undefined {
  const value = form.get(name);
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** The time now, again every `everyMs` while the component is shown: for durations that tick. */
export function useNow(everyMs = 1_000): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

/** "2 min 05 s" (or "1 h 02 min") from `since` to `now`. */
export function elapsed(since: string, now: number): string {
  const seconds = Math.max(0, Math.floor((now - new Date(since).getTime()) / 1000));
  const minutes = Math.floor(seconds / 60);
  if (minutes >= 60) return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
  const rest = String(seconds % 60).padStart(minutes > 0 ? 2 : 1, '0');
  return minutes > 0 ? `${minutes} min ${rest} s` : `${rest} s`;
}
