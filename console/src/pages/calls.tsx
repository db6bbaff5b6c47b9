// Calls: the log (keyset "load more"; live calls refresh themselves), placing a call, hanging one up.
import { call, data } from '../api.ts';
import type { Item } from '../shapes.ts';
import {
  ActionButton,
  Field,
  FormDisclosure,
  PagedTable,
  PageHeader,
  Status,
  text,
  trafficColumns,
  useAction,
  usePagedList,
} from '../ui.tsx';

type Call = Item<'/v2/portal/calls'>;

const LIVE = new Set(['queued', 'ringing', 'in_progress']);

export default function Calls() {
  const list = usePagedList<Call>(['calls'], '/v2/portal/calls', 'keyset', {
    poll: (rows) => rows.some((c) => LIVE.has(c.status)),
  });
  const place = useAction(
    (form) =>
      data('POST', '/v2/portal/calls', {
        from: text(form, 'from'),
        to: text(form, 'to'),
        record: form.get('record') === 'on',
      }),
    [['calls']],
  );
  return (
    <>
      <PageHeader title="Calls" />
      <FormDisclosure summary="Place a call" mutation={place} label="Place a call" submit="Call">
        <div className="grid">
          <Field label="From" hint="One of your numbers, or an extension">
            {(id, hint) => <input id={id} name="from" required aria-describedby={hint} />}
          </Field>
          <Field label="To">{(id) => <input id={id} name="to" type="tel" required />}</Field>
        </div>
        <label>
          <input type="checkbox" name="record" /> Record the call
        </label>
      </FormDisclosure>
      <PagedTable
        list={list}
        caption="Calls"
        empty="No calls yet."
        columns={[
          ...trafficColumns<Call>((c) => c.startedAt),
          { header: 'Status', cell: (c) => <Status value={c.status} /> },
          { header: 'Duration', cell: (c) => (c.durationSeconds === null ? '—' : `${c.durationSeconds} s`) },
          {
            header: '',
            cell: (c) =>
              LIVE.has(c.status) ? (
                <ActionButton
                  label="Hang up"
                  className="secondary"
                  run={() => call('POST', `/v2/portal/calls/${encodeURIComponent(c.id)}/hangup`)}
                  invalidate={[['calls']]}
                />
              ) : (
                (c.hangupCause ?? '')
              ),
          },
        ]}
      />
    </>
  );
}
