// Knowledge bases: create one, upload documents (a file: text, Markdown, CSV, HTML, PDF; or pasted text),
// see their documents, and try a search as an agent would.
import { useState } from 'react';
import { call, data } from '../api.ts';
import type { Data, Item } from '../shapes.ts';
import {
  ActionButton,
  Field,
  MutationForm,
  NewNamedForm,
  PagedTable,
  PageHeader,
  rowsOf,
  text,
  useAction,
  usePagedList,
} from '../ui.tsx';

type KnowledgeBase = Item<'/v2/portal/knowledge-bases'>;
type Document = Item<'/v2/portal/knowledge-bases/{id}/documents'>;
type Hit = Data<'/v2/portal/knowledge-bases/{id}/search', 'post'>[number];

function Documents({ base }: { base: KnowledgeBase }) {
  const path = `/v2/portal/knowledge-bases/${encodeURIComponent(base.id)}`;
  const documents = usePagedList<Document>(['knowledge-bases', base.id], `${path}/documents`, 'offset');
  const upload = useAction(
    (form) => {
      const file = form.get('file') as File | null;
      if (file && file.size > 0) {
        const body = new FormData();
        body.set('file', file);
        return call('POST', `${path}/documents`, body);
      }
      return call('POST', `${path}/documents`, {
        title: text(form, 'title'),
        content: text(form, 'content'),
      });
    },
    [['knowledge-bases']],
  );
  const [hits, setHits] = useState<Hit[] | null>(null);
  const search = useAction(
    (form) => data<Hit[]>('POST', `${path}/search`, { query: text(form, 'query'), limit: 5 }),
    [],
    setHits,
  );
  return (
    <section aria-label={`Documents of ${base.name}`}>
      <h2>{base.name}</h2>
      <MutationForm mutation={upload} label={`Add a document to ${base.name}`} submit="Upload">
        <Field label="File" hint="Text, Markdown, CSV, HTML or PDF; or leave empty and paste text below">
          {(id, hint) => (
            <input
              id={id}
              name="file"
              type="file"
              accept=".txt,.md,.csv,.html,.htm,.pdf"
              aria-describedby={hint}
            />
          )}
        </Field>
        <div className="grid">
          <Field label="Title">{(id) => <input id={id} name="title" />}</Field>
        </div>
        <Field label="Text">{(id) => <textarea id={id} name="content" rows={3} />}</Field>
      </MutationForm>
      <PagedTable
        list={documents}
        caption={`Documents of ${base.name}`}
        empty="No documents yet."
        columns={[
          { header: 'Title', cell: (d) => d.title },
          { header: 'Source', cell: (d) => d.source },
          { header: 'Characters', cell: (d) => d.characters.toLocaleString() },
          { header: 'Chunks', cell: (d) => d.chunkCount },
          {
            header: '',
            cell: (d) => (
              <ActionButton
                label="Delete"
                className="secondary outline"
                confirm={`Delete ${d.title}?`}
                run={() => call('DELETE', `${path}/documents/${encodeURIComponent(d.id)}`)}
                invalidate={[['knowledge-bases']]}
              />
            ),
          },
        ]}
      />
      <MutationForm mutation={search} label={`Search ${base.name}`} submit="Search" className="inline-form">
        <Field label="Try a question">{(id) => <input id={id} name="query" required />}</Field>
      </MutationForm>
      {hits ? (
        <ol aria-label="Search results">
          {hits.length === 0 ? <li>Nothing found.</li> : null}
          {hits.map((hit) => (
            <li key={`${hit.documentId}-${hit.score}-${hit.text.slice(0, 20)}`}>
              <strong>{hit.title}</strong> ({hit.score.toFixed(2)}): {hit.text}
            </li>
          ))}
        </ol>
      ) : null}
    </section>
  );
}

export default function KnowledgeBases() {
  const list = usePagedList<KnowledgeBase>(['knowledge-bases'], '/v2/portal/knowledge-bases', 'offset');
  const [open, setOpen] = useState<string | null>(null);
  const rows = rowsOf(list);
  const selected = rows?.find((base) => base.id === open);
  return (
    <>
      <PageHeader title="Knowledge bases" />
      <NewNamedForm
        summary="New knowledge base"
        label="Create knowledge base"
        path="/v2/portal/knowledge-bases"
        listKey="knowledge-bases"
        nameMaxLength={100}
      />
      <PagedTable
        list={list}
        caption="Knowledge bases"
        empty="No knowledge bases yet."
        columns={[
          { header: 'Name', cell: (b) => b.name },
          { header: 'Documents', cell: (b) => b.documentCount },
          { header: 'Chunks', cell: (b) => b.chunkCount },
          {
            header: '',
            cell: (b) => (
              <div className="row-actions">
                <button
                  type="button"
                  className="secondary outline"
                  onClick={() => setOpen(open === b.id ? null : b.id)}
                >
                  {open === b.id ? 'Close' : 'Documents'}
                </button>
                <ActionButton
                  label="Delete"
                  className="secondary outline"
                  confirm={`Delete ${b.name} and its documents?`}
                  run={() => call('DELETE', `/v2/portal/knowledge-bases/${encodeURIComponent(b.id)}`)}
                  invalidate={[['knowledge-bases']]}
                />
              </div>
            ),
          },
        ]}
      />
      {selected ? <Documents key={selected.id} base={selected} /> : null}
    </>
  );
}
