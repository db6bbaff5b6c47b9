// Compose (with the server's own segment count as you type, merge-variable hints and MMS attachments) and
// the history, newest first, with filters and keyset "load more". A message may be scheduled (send at, 15
// minutes to 35 days ahead); a scheduled one can be cancelled from its row until it leaves.
import { useState } from 'react';
import { data, qs } from '../api.ts';
import type { Item } from '../shapes.ts';
import {
  ActionButton,
  Field,
  MutationForm,
  PagedTable,
  PageHeader,
  Status,
  text,
  trafficColumns,
  useAction,
  usePagedList,
  when,
} from '../ui.tsx';
import { MergeVariables, mediaFilesOf, SegmentCounter } from './compose.tsx';

export type Message = Item<'/v2/portal/messages'>;

function Compose() {
  const [body, setBody] = useState('');
  const [sent, setSent] = useState<{ id: string; status: string; sendAt?: string } | null>(null);
  const send = useAction(
    async (form) => {
      const mediaFiles = await mediaFilesOf(form);
      // datetime-local is the browser's local time; the API takes an instant.
      const sendAt = text(form, 'sendAt');
      return data<{ id: string; status: string; sendAt?: string }>('POST', '/v2/portal/messages/send', {
        to: text(form, 'to'),
        from: text(form, 'from'),
        message: body === '' ? undefined : body,
        mediaFiles,
        sendAt: sendAt ? new Date(sendAt).toISOString() : undefined,
      });
    },
    [['messages']],
    (result) => {
      setSent(result);
      setBody('');
    },
  );

  return (
    <details open>
      <summary>New message</summary>
      <MutationForm mutation={send} label="Send message" submit="Send">
        <div className="grid">
          <Field label="To" hint="E.164, e.g. +14155550123">
            {(id, hint) => <input id={id} name="to" type="tel" required aria-describedby={hint} />}
          </Field>
          <Field label="From (optional)" hint="One of your numbers; default: your default sender">
            {(id, hint) => <input id={id} name="from" type="tel" aria-describedby={hint} />}
          </Field>
        </div>
        <Field label="Message" hint={<MergeVariables onPick={(variable) => setBody(`${body}${variable}`)} />}>
          {(id, hint) => (
            <textarea
              id={id}
              name="message"
              rows={4}
              value={body}
              onChange={(event) => setBody(event.target.value)}
              aria-describedby={hint}
            />
          )}
        </Field>
        <SegmentCounter body={body} />
        <Field label="Send at (optional)" hint="15 minutes to 35 days from now, your local time; empty: now">
          {(id, hint) => <input id={id} name="sendAt" type="datetime-local" aria-describedby={hint} />}
        </Field>
        <Field label="Pictures or files (MMS)">
          {(id) => (
            <input id={id} name="media" type="file" multiple accept="image/*,video/*,audio/*,.pdf,.vcf" />
          )}
        </Field>
      </MutationForm>
      {sent ? (
        <p role="status">
          {sent.status === 'scheduled' ? 'Scheduled' : 'Queued'} as <code>{sent.id}</code>
          {sent.sendAt ? ` for ${when(sent.sendAt)}` : ''}.
        </p>
      ) : null}
    </details>
  );
}

export default function Messages() {
  const [filters, setFilters] = useState<Record<string, string>>({});
  const list = usePagedList<Message>(['messages'], `/v2/portal/messages${qs(filters)}`, 'keyset', {
    poll: (rows) => rows.some((row) => ['scheduled', 'queued', 'sent'].includes(row.status)),
  });

  return (
    <>
      <PageHeader title="Messages" />
      <Compose />
      <h2>History</h2>
      <form
        className="inline-form"
        aria-label="Filter messages"
        onSubmit={(event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          setFilters(
            Object.fromEntries(
              ['direction', 'status', 'number'].flatMap((name) => {
                const value = text(form, name);
                return value ? [[name, value]] : [];
              }),
            ),
          );
        }}
      >
        <Field label="Direction">
          {(id) => (
            <select id={id} name="direction" defaultValue="">
              <option value="">Any</option>
              <option value="outbound">Outbound</option>
              <option value="inbound">Inbound</option>
            </select>
          )}
        </Field>
        <Field label="Status">
          {(id) => (
            <select id={id} name="status" defaultValue="">
              <option value="">Any</option>
              {[
                'scheduled',
                'queued',
                'sent',
                'delivered',
                'failed',
                'undelivered',
                'cancelled',
                'received',
              ].map((status) => (
                <option key={status}>{status}</option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Number">{(id) => <input id={id} name="number" type="tel" />}</Field>
        <button type="submit">Filter</button>
      </form>
      <PagedTable
        list={list}
        caption="Messages"
        empty="No messages yet."
        columns={[
          ...trafficColumns<Message>((m) => m.createdAt),
          {
            header: 'Message',
            cell: (m) => (
              <>
                {m.body}
                {m.mediaCount ? ` (+${m.mediaCount} media)` : ''}
              </>
            ),
          },
          { header: 'Segments', cell: (m) => `${m.segments} · ${m.encoding}` },
          {
            header: 'Status',
            cell: (m) => (
              <>
                <Status value={m.status} />
                {m.sendAt && m.status === 'scheduled' ? <small> for {when(m.sendAt)}</small> : null}
                {m.errorMessage ? <small> {m.errorMessage}</small> : null}
                {m.status === 'scheduled' ? (
                  <ActionButton
                    label="Cancel"
                    className="secondary outline"
                    confirm="Cancel this scheduled message? It will not be sent."
                    run={() => data('DELETE', `/v2/portal/messages/${m.id}`)}
                    invalidate={[['messages']]}
                  />
                ) : null}
              </>
            ),
          },
        ]}
      />
    </>
  );
}
