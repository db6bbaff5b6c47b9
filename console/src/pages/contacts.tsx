// Contacts: the table (keyset "load more", search by phone or name), adding one, and CSV import with the
// report of rejected rows (row number and reason from the server).
import { useState } from 'react';
import { Link } from 'wouter';
import { call, data, qs } from '../api.ts';
import type { Data, Item } from '../shapes.ts';
import {
  DataTable,
  Field,
  MutationForm,
  PagedTable,
  PageHeader,
  text,
  useAction,
  usePagedList,
  when,
} from '../ui.tsx';

export type Contact = Item<'/v2/portal/contacts'>;

type ImportReport = Data<'/v2/portal/contacts/import', 'post'>;

function ImportCsv() {
  const [report, setReport] = useState<ImportReport | null>(null);
  const upload = useAction(
    async (form) => {
      const body = new FormData();
      body.set('file', form.get('file') as File);
      return (await call<{ data: ImportReport }>('POST', '/v2/portal/contacts/import', body)).data;
    },
    [['contacts']],
    setReport,
  );
  return (
    <details>
      <summary>Import a CSV</summary>
      <MutationForm mutation={upload} label="Import contacts" submit="Import">
        <Field
          label="CSV file"
          hint="A header row naming a phone column (required) and any of first name, last name, email, company, timezone. An import never clears an opt-out."
        >
          {(id, hint) => (
            <input id={id} name="file" type="file" accept=".csv,text/csv" required aria-describedby={hint} />
          )}
        </Field>
      </MutationForm>
      {report ? (
        <section aria-label="Import report" role="status">
          <p>
            <strong>{report.imported}</strong> imported, <strong>{report.updated}</strong> updated,{' '}
            <strong>{report.rejected}</strong> rejected.
          </p>
          {report.errors.length ? (
            <DataTable
              caption="Rejected rows"
              rows={report.errors}
              empty=""
              rowKey={(error) => String(error.row)}
              columns={[
                { header: 'Row', cell: (error) => error.row },
                { header: 'Reason', cell: (error) => error.reason },
              ]}
            />
          ) : null}
        </section>
      ) : null}
    </details>
  );
}

function AddContact() {
  const add = useAction(
    (form) =>
      data('POST', '/v2/portal/contacts', {
        phone: text(form, 'phone'),
        firstName: text(form, 'firstName') ?? null,
        lastName: text(form, 'lastName') ?? null,
        email: text(form, 'email') ?? null,
        company: text(form, 'company') ?? null,
      }),
    [['contacts']],
  );
  return (
    <details>
      <summary>Add a contact</summary>
      <MutationForm mutation={add} label="Add contact" submit="Add">
        <div className="grid">
          <Field label="Phone">{(id) => <input id={id} name="phone" type="tel" required />}</Field>
          <Field label="E-mail">{(id) => <input id={id} name="email" type="email" />}</Field>
        </div>
        <div className="grid">
          <Field label="First name">{(id) => <input id={id} name="firstName" />}</Field>
          <Field label="Last name">{(id) => <input id={id} name="lastName" />}</Field>
          <Field label="Company">{(id) => <input id={id} name="company" />}</Field>
        </div>
      </MutationForm>
    </details>
  );
}

export default function Contacts() {
  const [search, setSearch] = useState('');
  const list = usePagedList<Contact>(['contacts'], `/v2/portal/contacts${qs({ search })}`, 'keyset');
  return (
    <>
      <PageHeader title="Contacts" />
      <AddContact />
      <ImportCsv />
      <form
        aria-label="Search contacts"
        onSubmit={(event) => {
          event.preventDefault();
          setSearch(text(new FormData(event.currentTarget), 'search') ?? '');
        }}
      >
        <input
          name="search"
          type="search"
          aria-label="Search contacts"
          placeholder="Search by phone or name"
        />
      </form>
      <PagedTable
        list={list}
        caption="Contacts"
        empty="No contacts yet."
        columns={[
          { header: 'Phone', cell: (c) => <Link href={`/contacts/${c.id}`}>{c.phone}</Link> },
          { header: 'Name', cell: (c) => c.fullName ?? '—' },
          { header: 'E-mail', cell: (c) => c.email ?? '—' },
          { header: 'Company', cell: (c) => c.company ?? '—' },
          { header: 'Consent', cell: (c) => (c.optedOut ? `Opted out ${when(c.optedOutAt)}` : 'Subscribed') },
        ]}
      />
    </>
  );
}
