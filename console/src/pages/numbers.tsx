// Phone numbers: the organization's numbers with their voice routes, searching the carrier's inventory and
// buying, renaming and routing a number, and releasing it.
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { call, data, get, qs } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import type { Data, Item } from '../shapes.ts';
import {
  ActionButton,
  DataTable,
  ErrorNote,
  Field,
  MutationForm,
  PagedTable,
  PageHeader,
  rowsOf,
  text,
  useAction,
  usePagedList,
} from '../ui.tsx';

type PhoneNumber = Item<'/v2/portal/numbers'>;
type Available = Data<'/v2/portal/numbers/available'>[number];

function BuyNumber() {
  const [search, setSearch] = useState<Record<string, string> | null>(null);
  const available = useQuery({
    queryKey: ['numbers', 'available', search],
    queryFn: () => get<Available[]>(`/v2/portal/numbers/available${qs({ ...search, limit: 10 })}`),
    enabled: search !== null,
  });
  return (
    <details>
      <summary>Buy a number</summary>
      <form
        className="inline-form"
        aria-label="Search available numbers"
        onSubmit={(event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          setSearch(
            Object.fromEntries(
              ['country', 'type', 'areaCode', 'contains'].flatMap((name) => {
                const value = text(form, name);
                return value ? [[name, value]] : [];
              }),
            ),
          );
        }}
      >
        <Field label="Country">
          {(id) => (
            <select id={id} name="country" defaultValue="US">
              <option>US</option>
              <option>CA</option>
            </select>
          )}
        </Field>
        <Field label="Type">
          {(id) => (
            <select id={id} name="type" defaultValue="local">
              <option value="local">Local</option>
              <option value="toll_free">Toll-free</option>
            </select>
          )}
        </Field>
        <Field label="Area code">
          {(id) => <input id={id} name="areaCode" inputMode="numeric" maxLength={3} />}
        </Field>
        <Field label="Contains">{(id) => <input id={id} name="contains" inputMode="numeric" />}</Field>
        <button type="submit">Search</button>
      </form>
      <ErrorNote error={available.error} />
      {search ? (
        <DataTable
          caption="Available numbers"
          rows={available.data}
          rowKey={(n) => n.number}
          empty="Nothing matches; try another area code."
          columns={[
            { header: 'Number', cell: (n) => n.number },
            { header: 'Type', cell: (n) => n.type },
            {
              header: '',
              cell: (n) => (
                <ActionButton
                  label={`Buy ${n.number}`}
                  run={() => data('POST', '/v2/portal/numbers', { number: n.number })}
                  invalidate={[['numbers']]}
                />
              ),
            },
          ]}
        />
      ) : null}
    </details>
  );
}

function RouteForm({ number }: { number: PhoneNumber }) {
  const save = useAction(
    (form) => {
      const type = text(form, 'routeType');
      // Only a webhook route has a fallback flow (docs/voice.md "Flows from your app").
      const fallbackFlowId = type === 'webhook' ? text(form, 'fallbackFlowId') : undefined;
      return data('PATCH', `/v2/portal/numbers/${encodeURIComponent(number.id)}`, {
        friendlyName: text(form, 'friendlyName') ?? null,
        voiceRoute: type
          ? { type, target: text(form, 'target') ?? '', ...(fallbackFlowId ? { fallbackFlowId } : {}) }
          : null,
      });
    },
    [['numbers']],
  );
  return (
    <MutationForm
      mutation={save}
      label={`Settings of ${number.number}`}
      submit="Save"
      className="inline-form"
    >
      <Field label="Name">
        {(id) => <input id={id} name="friendlyName" defaultValue={number.friendlyName ?? ''} />}
      </Field>
      <Field label="Calls go to">
        {(id) => (
          <select id={id} name="routeType" defaultValue={number.voiceRoute?.type ?? ''}>
            <option value="">Nowhere (calls are refused)</option>
            <option value="extension">Extension</option>
            <option value="agent">AI agent</option>
            <option value="forward">Forward to a number</option>
            <option value="voicemail">Voicemail of an extension</option>
            <option value="flow">Call flow</option>
            <option value="webhook">Your app (a webhook URL)</option>
          </select>
        )}
      </Field>
      <Field label="Target (extension, agent or call flow id, a number, or your app's URL)">
        {(id) => <input id={id} name="target" defaultValue={number.voiceRoute?.target ?? ''} />}
      </Field>
      <Field label="Fallback call flow id (your app only: runs when the app fails)">
        {(id) => (
          <input id={id} name="fallbackFlowId" defaultValue={number.voiceRoute?.fallbackFlowId ?? ''} />
        )}
      </Field>
    </MutationForm>
  );
}

export default function Numbers() {
  const me = useMe();
  const list = usePagedList<PhoneNumber>(['numbers'], '/v2/portal/numbers', 'offset');
  const [editing, setEditing] = useState<string | null>(null);
  const rows = rowsOf(list);
  const selected = rows?.find((n) => n.id === editing);
  return (
    <>
      <PageHeader title="Numbers" />
      {canManage(me.data) ? <BuyNumber /> : null}
      <PagedTable
        list={list}
        caption="Numbers"
        empty="No numbers yet."
        columns={[
          { header: 'Number', cell: (n) => `${n.number}${n.isDefault ? ' (default sender)' : ''}` },
          { header: 'Name', cell: (n) => n.friendlyName ?? '—' },
          { header: 'Type', cell: (n) => n.type.replaceAll('_', ' ') },
          {
            header: 'Voice route',
            cell: (n) => (n.voiceRoute ? `${n.voiceRoute.type}: ${n.voiceRoute.target}` : '—'),
          },
          {
            header: '',
            cell: (n) =>
              canManage(me.data) ? (
                <div className="row-actions">
                  <button
                    type="button"
                    className="secondary outline"
                    onClick={() => setEditing(editing === n.id ? null : n.id)}
                  >
                    Edit
                  </button>
                  <ActionButton
                    label="Release"
                    className="secondary outline"
                    confirm={`Release ${n.number}? It goes back to the carrier.`}
                    run={() => call('DELETE', `/v2/portal/numbers/${encodeURIComponent(n.id)}`)}
                    invalidate={[['numbers']]}
                  />
                </div>
              ) : null,
          },
        ]}
      />
      {selected ? <RouteForm key={selected.id} number={selected} /> : null}
    </>
  );
}
