// Extensions: desk and soft phones of the organization, their voicemail, and their SIP credentials (the
// password is shown once, on create and on rotation).
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
} from '../ui.tsx';

export type Extension = Item<'/v2/portal/extensions'>;

function Credentials({ extension }: { extension: Extension }) {
  return (
    <article role="status">
      <p>
        SIP credentials of {extension.extension}: user <code>{extension.sip.username}</code> at{' '}
        <code>{extension.sip.domain}</code>, password{' '}
        <code className="secret" data-testid="sip-password">
          {extension.sip.password}
        </code>{' '}
        <CopyButton text={extension.sip.password ?? ''} />
      </p>
      <p>Store the password now: it is not shown again.</p>
    </article>
  );
}

export default function Extensions() {
  const me = useMe();
  const list = usePagedList<Extension>(['extensions'], '/v2/portal/extensions', 'offset');
  const [shown, setShown] = useState<Extension | null>(null);
  const create = useAction(
    (form) =>
      data<Extension>('POST', '/v2/portal/extensions', {
        extension: text(form, 'extension'),
        name: text(form, 'name'),
        forwardTo: text(form, 'forwardTo') ?? null,
        voicemail: { enabled: form.get('voicemail') === 'on', greeting: text(form, 'greeting') ?? null },
      }),
    [['extensions']],
    setShown,
  );
  return (
    <>
      <PageHeader title="Extensions" />
      {canManage(me.data) ? (
        <FormDisclosure summary="New extension" mutation={create} label="Create extension" submit="Create">
          <div className="grid">
            <Field label="Extension" hint="2 to 6 digits">
              {(id, hint) => (
                <input id={id} name="extension" pattern="[0-9]{2,6}" required aria-describedby={hint} />
              )}
            </Field>
            <Field label="Name">{(id) => <input id={id} name="name" required />}</Field>
            <Field label="Forward unanswered calls to (optional)">
              {(id) => <input id={id} name="forwardTo" type="tel" />}
            </Field>
          </div>
          <label>
            <input type="checkbox" name="voicemail" defaultChecked /> Voicemail
          </label>
          <Field label="Voicemail greeting (spoken)">{(id) => <input id={id} name="greeting" />}</Field>
        </FormDisclosure>
      ) : null}
      {shown ? <Credentials extension={shown} /> : null}
      <PagedTable
        list={list}
        caption="Extensions"
        empty="No extensions yet."
        columns={[
          { header: 'Extension', cell: (e) => e.extension },
          { header: 'Name', cell: (e) => e.name },
          { header: 'Voicemail', cell: (e) => (e.voicemail.enabled ? 'On' : 'Off') },
          { header: 'Forward to', cell: (e) => e.forwardTo ?? '—' },
          { header: 'SIP user', cell: (e) => `${e.sip.username}@${e.sip.domain}` },
          {
            header: '',
            cell: (e) =>
              canManage(me.data) ? (
                <div className="row-actions">
                  <ActionButton
                    label="New password"
                    className="secondary outline"
                    confirm={`Rotate the SIP password of ${e.extension}? Its phones must be set up again.`}
                    run={() =>
                      data<Extension>(
                        'POST',
                        `/v2/portal/extensions/${encodeURIComponent(e.id)}/rotate-password`,
                      )
                    }
                    invalidate={[['extensions']]}
                    onDone={(rotated) => setShown(rotated as Extension)}
                  />
                  <ActionButton
                    label="Delete"
                    className="secondary outline"
                    confirm={`Delete extension ${e.extension}?`}
                    run={() => call('DELETE', `/v2/portal/extensions/${encodeURIComponent(e.id)}`)}
                    invalidate={[['extensions']]}
                  />
                </div>
              ) : null,
          },
        ]}
      />
    </>
  );
}
