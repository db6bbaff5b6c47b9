// API keys: create one (scopes, expiry) and see its secret once, with a copy button; list and revoke.
// Creating and revoking need fresh two-factor verification when 2FA is on (api.ts asks for the code).
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { call, data } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import type { Item } from '../shapes.ts';
import {
  ActionButton,
  CopyButton,
  Field,
  FormDisclosure,
  PagedTable,
  PageHeader,
  text,
  useAction,
  usePagedList,
  when,
} from '../ui.tsx';

type ApiKey = Item<'/api/api-keys'>;

function CreateKey({ onCreated }: { onCreated: (key: ApiKey & { key: string }) => void }) {
  const scopes = useQuery({
    queryKey: ['api-keys', 'scopes'],
    queryFn: () => data<{ scope: string; description: string }[]>('GET', '/api/api-keys/scopes'),
  });
  const create = useAction(
    (form) => {
      const days = text(form, 'expiresInDays');
      return data<ApiKey & { key: string }>('POST', '/api/api-keys', {
        name: text(form, 'name'),
        scopes: form.getAll('scopes').map(String),
        expiresInDays: days ? Number(days) : null,
      });
    },
    [['api-keys']],
    onCreated,
  );
  return (
    <FormDisclosure summary="New API key" mutation={create} label="Create API key" submit="Create key">
      <div className="grid">
        <Field label="Name">{(id) => <input id={id} name="name" required maxLength={100} />}</Field>
        <Field label="Expires">
          {(id) => (
            <select id={id} name="expiresInDays" defaultValue="90">
              <option value="30">In 30 days</option>
              <option value="60">In 60 days</option>
              <option value="90">In 90 days</option>
              <option value="365">In a year</option>
              <option value="">Never</option>
            </select>
          )}
        </Field>
      </div>
      <fieldset>
        <legend>Scopes</legend>
        {scopes.data?.map((scope) => (
          <label key={scope.scope}>
            <input type="checkbox" name="scopes" value={scope.scope} /> <code>{scope.scope}</code>{' '}
            <small>{scope.description}</small>
          </label>
        ))}
      </fieldset>
    </FormDisclosure>
  );
}

export default function ApiKeys() {
  const me = useMe();
  const list = usePagedList<ApiKey>(['api-keys'], '/api/api-keys', 'offset');
  const [created, setCreated] = useState<(ApiKey & { key: string }) | null>(null);
  return (
    <>
      <PageHeader title="API keys" />
      {canManage(me.data) ? <CreateKey onCreated={setCreated} /> : null}
      {created ? (
        <article role="status" aria-label="New API key">
          <p>
            Your new key <strong>{created.name}</strong>:
          </p>
          <p>
            <code className="secret" data-testid="new-api-key">
              {created.key}
            </code>{' '}
            <CopyButton text={created.key} />
          </p>
          <p>Copy it now: it is not shown again. We keep only its hash.</p>
          <button type="button" className="secondary" onClick={() => setCreated(null)}>
            I have stored it
          </button>
        </article>
      ) : null}
      <PagedTable
        list={list}
        caption="API keys"
        empty="No API keys yet."
        columns={[
          { header: 'Name', cell: (k) => k.name },
          { header: 'Key', cell: (k) => <code>{`${k.prefix}…${k.lastFour ?? ''}`}</code> },
          { header: 'Scopes', cell: (k) => k.scopes.join(', ') || 'none' },
          { header: 'Expires', cell: (k) => (k.expiresAt ? when(k.expiresAt) : 'Never') },
          { header: 'Last used', cell: (k) => when(k.lastUsedAt) },
          {
            header: '',
            cell: (k) =>
              k.revokedAt ? (
                `Revoked ${when(k.revokedAt)}`
              ) : canManage(me.data) ? (
                <ActionButton
                  label="Revoke"
                  className="secondary outline"
                  confirm={`Revoke ${k.name}? Programs using it stop working at once.`}
                  run={() => call('DELETE', `/api/api-keys/${encodeURIComponent(k.id)}`)}
                  invalidate={[['api-keys']]}
                />
              ) : null,
          },
        ]}
      />
    </>
  );
}
