// The page of one thing being edited (a call flow, a queue): its name as the title, Delete for owners and
// admins (then back to the list), and its loading and failure states around the editor. The record is read
// once and kept: a refresh behind the person's back must not replace what they are typing.
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { useLocation } from 'wouter';
import { call, get } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import { ActionButton, ErrorNote, PageHeader } from '../ui.tsx';

export function EditorPage<T extends { id: string; name: string }>({
  path,
  listHref,
  untitled,
  confirm,
  children,
}: {
  /** The record's path, which DELETE removes too: `/v2/portal/queues/{id}`. */
  path: string;
  /** The list it belongs to (`/queues`), whose query key is its name. */
  listHref: string;
  /** The title while the record is read. */
  untitled: string;
  /** What Delete asks first. */
  confirm: (record: T) => string;
  children: (record: T) => ReactNode;
}) {
  const me = useMe();
  const [, navigate] = useLocation();
  const client = useQueryClient();
  const listKey = listHref.slice(1);
  const record = useQuery({
    queryKey: [listKey, path.split('/').pop()],
    queryFn: () => get<T>(path),
    staleTime: Number.POSITIVE_INFINITY,
    refetchOnWindowFocus: false,
  });
  return (
    <>
      <PageHeader title={record.data?.name ?? untitled}>
        {canManage(me.data) && record.data ? (
          <ActionButton
            label="Delete"
            className="secondary outline"
            confirm={confirm(record.data)}
            run={() => call('DELETE', path)}
            invalidate={[]}
            onDone={() => {
              navigate(listHref);
              void client.invalidateQueries({ queryKey: [listKey] });
            }}
          />
        ) : null}
      </PageHeader>
      <ErrorNote error={record.error} />
      {record.isPending ? <p aria-busy="true">Loading…</p> : null}
      {record.data ? children(record.data) : null}
    </>
  );
}
