// Contact lists: create, rename, delete; a list's members (offset pages) and adding or removing contacts.
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { call, page, qs } from '../api.ts';
import type { Item } from '../shapes.ts';
import {
  ActionButton,
  Field,
  MutationForm,
  NewNamedForm,
  PagedTable,
  PageHeader,
  rowsOf,
  useAction,
  usePagedList,
} from '../ui.tsx';
import type { Contact } from './contacts.tsx';

export type ContactList = Item<'/v2/portal/contact-lists'>;

function Members({ list }: { list: ContactList }) {
  const path = `/v2/portal/contact-lists/${encodeURIComponent(list.id)}/members`;
  const members = usePagedList<Contact>(['contact-lists', list.id], path, 'offset');
  const [search, setSearch] = useState('');
  const candidates = useQuery({
    queryKey: ['contacts', 'pick', search],
    queryFn: () => page<Contact>(`/v2/portal/contacts${qs({ search, limit: 100 })}`),
  });
  const add = useAction(
    (form) => call('POST', path, { contactIds: form.getAll('contactIds').map(String) }),
    [['contact-lists']],
  );
  return (
    <section aria-label={`Members of ${list.name}`}>
      <h3>Members of {list.name}</h3>
      <MutationForm mutation={add} label={`Add contacts to ${list.name}`} submit="Add to list">
        <input
          type="search"
          aria-label="Find contacts to add"
          placeholder="Find contacts"
          value={search}
          onChange={(event) => setSearch(event.target.value)}
        />
        <Field label="Contacts (choose one or more)">
          {(id) => (
            <select id={id} name="contactIds" multiple size={6} required>
              {candidates.data?.data.map((contact) => (
                <option key={contact.id} value={contact.id}>
                  {contact.phone} {contact.fullName ?? ''}
                </option>
              ))}
            </select>
          )}
        </Field>
      </MutationForm>
      <PagedTable
        list={members}
        caption={`Members of ${list.name}`}
        empty="No members yet."
        columns={[
          { header: 'Phone', cell: (c) => c.phone },
          { header: 'Name', cell: (c) => c.fullName ?? '—' },
          {
            header: '',
            cell: (c) => (
              <ActionButton
                label="Remove"
                className="secondary outline"
                run={() => call('DELETE', path, { contactIds: [c.id] })}
                invalidate={[['contact-lists']]}
              />
            ),
          },
        ]}
      />
    </section>
  );
}

export default function ContactLists() {
  const lists = usePagedList<ContactList>(['contact-lists'], '/v2/portal/contact-lists', 'offset', {
    limit: 100,
  });
  const [open, setOpen] = useState<string | null>(null);
  const rows = rowsOf(lists);
  const selected = rows?.find((list) => list.id === open);
  return (
    <>
      <PageHeader title="Contact lists" />
      <NewNamedForm
        summary="New list"
        label="Create list"
        path="/v2/portal/contact-lists"
        listKey="contact-lists"
        nameMaxLength={200}
      />
      <PagedTable
        list={lists}
        caption="Contact lists"
        empty="No lists yet."
        columns={[
          { header: 'Name', cell: (l) => l.name },
          { header: 'Description', cell: (l) => l.description ?? '—' },
          { header: 'Members', cell: (l) => l.memberCount.toLocaleString() },
          {
            header: '',
            cell: (l) => (
              <div className="row-actions">
                <button
                  type="button"
                  className="secondary outline"
                  onClick={() => setOpen(open === l.id ? null : l.id)}
                >
                  {open === l.id ? 'Hide members' : 'Members'}
                </button>
                <ActionButton
                  label="Delete"
                  className="secondary outline"
                  confirm={`Delete the list ${l.name}? Its contacts stay.`}
                  run={() => call('DELETE', `/v2/portal/contact-lists/${encodeURIComponent(l.id)}`)}
                  invalidate={[['contact-lists']]}
                />
              </div>
            ),
          },
        ]}
      />
      {selected ? <Members list={selected} /> : null}
    </>
  );
}
