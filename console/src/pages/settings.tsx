// The signed-in person's account: password, two-factor authentication (set up with a QR code, recovery
// codes shown once, turn off), and signing out everywhere.
import { useState } from 'react';
import { encode } from 'uqr';
import { call, data } from '../api.ts';
import { useMe } from '../session.ts';
import {
  CopyButton,
  ErrorNote,
  Field,
  MutationForm,
  NewPasswordField,
  PageHeader,
  text,
  useAction,
} from '../ui.tsx';

/** A QR code drawn as SVG rectangles (no inline markup, so the page's CSP holds). */
function QrCode({ value, label }: { value: string; label: string }) {
  const qr = encode(value, { border: 2 });
  const cells: string[] = [];
  qr.data.forEach((row, y) => {
    row.forEach((dark, x) => {
      if (dark) cells.push(`M${x} ${y}h1v1h-1z`);
    });
  });
  return (
    <div className="qr">
      <svg viewBox={`0 0 ${qr.size} ${qr.size}`} role="img" aria-label={label} shapeRendering="crispEdges">
        <path d={cells.join('')} fill="#000" />
      </svg>
    </div>
  );
}

function TwoFactor() {
  const me = useMe();
  const [setup, setSetup] = useState<{ secret: string; otpauthUrl: string } | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const start = useAction(
    () => data<{ secret: string; otpauthUrl: string }>('POST', '/v2/portal/auth/2fa/setup'),
    [],
    setSetup,
  );
  const enable = useAction(
    (form) =>
      data<{ recoveryCodes: string[] }>('POST', '/v2/portal/auth/2fa/enable', {
        code: text(form, 'code'),
        password: String(form.get('password') ?? ''),
      }),
    [['me']],
    (result) => {
      setSetup(null);
      setCodes(result.recoveryCodes);
    },
  );
  const disable = useAction(
    (form) => call('POST', '/v2/portal/auth/2fa/disable', { code: text(form, 'code') }),
    [['me']],
  );
  if (!me.data) return null;

  if (codes) {
    return (
      <article role="status" aria-label="Recovery codes">
        <p>
          Two-factor authentication is on. Keep these recovery codes somewhere safe; each works once, and they
          are not shown again.
        </p>
        <ul data-testid="recovery-codes">
          {codes.map((code) => (
            <li key={code}>
              <code>{code}</code>
            </li>
          ))}
        </ul>
        <CopyButton text={codes.join('\n')} label="Copy all" />{' '}
        <button type="button" className="secondary" onClick={() => setCodes(null)}>
          I have stored them
        </button>
      </article>
    );
  }
  if (me.data.user.twoFactorEnabled) {
    return (
      <>
        <p>Two-factor authentication is on.</p>
        <MutationForm mutation={disable} label="Turn off two-factor authentication" submit="Turn off">
          <Field label="Code from your authenticator app">
            {(id) => <input id={id} name="code" autoComplete="one-time-code" required />}
          </Field>
        </MutationForm>
      </>
    );
  }
  if (setup) {
    return (
      <>
        <p>Scan this code with your authenticator app, or enter the key by hand.</p>
        <QrCode value={setup.otpauthUrl} label="QR code for your authenticator app" />
        <p>
          Key:{' '}
          <code className="secret" data-testid="totp-secret">
            {setup.secret}
          </code>{' '}
          <CopyButton text={setup.secret} />
        </p>
        <MutationForm mutation={enable} label="Turn on two-factor authentication" submit="Turn on">
          <div className="grid">
            <Field label="Code from the app">
              {(id) => (
                <input id={id} name="code" autoComplete="one-time-code" inputMode="numeric" required />
              )}
            </Field>
            <Field label="Your password">
              {(id) => (
                <input id={id} name="password" type="password" autoComplete="current-password" required />
              )}
            </Field>
          </div>
        </MutationForm>
        <button type="button" className="secondary outline" onClick={() => setSetup(null)}>
          Cancel
        </button>
      </>
    );
  }
  return (
    <>
      <p>Two-factor authentication is off. Turn it on so a stolen password alone cannot open your account.</p>
      <ErrorNote error={start.error} />
      <button type="button" aria-busy={start.isPending} onClick={() => start.mutate(new FormData())}>
        Set up two-factor authentication
      </button>
    </>
  );
}

export default function Settings() {
  const me = useMe();
  const password = useAction(
    (form) =>
      data('POST', '/v2/portal/auth/password', {
        currentPassword: String(form.get('currentPassword') ?? ''),
        newPassword: String(form.get('newPassword') ?? ''),
      }),
    [['me']],
  );
  const everywhere = useAction(
    () => call('POST', '/v2/portal/auth/logout-all'),
    [],
    () => window.location.assign('/login'),
  );
  return (
    <>
      <PageHeader title="Settings" />
      {me.data ? (
        <p>
          {me.data.user.name ?? me.data.user.email} · {me.data.user.email} · {me.data.role} of{' '}
          {me.data.organization.name} ({me.data.organization.plan},{' '}
          {me.data.organization.subscriptionState.replaceAll('_', ' ')}, region {me.data.organization.region})
        </p>
      ) : null}
      <section aria-labelledby="two-factor">
        <h2 id="two-factor">Two-factor authentication</h2>
        <TwoFactor />
      </section>
      <section aria-labelledby="password">
        <h2 id="password">Password</h2>
        <MutationForm mutation={password} label="Change password" submit="Change password">
          <div className="grid">
            <Field label="Current password">
              {(id) => (
                <input
                  id={id}
                  name="currentPassword"
                  type="password"
                  autoComplete="current-password"
                  required
                />
              )}
            </Field>
            <NewPasswordField
              name="newPassword"
              label="New password"
              hint="At least 8 characters; your other sessions are signed out"
            />
          </div>
        </MutationForm>
        {password.isSuccess ? <p role="status">Password changed.</p> : null}
      </section>
      <section aria-labelledby="sessions">
        <h2 id="sessions">Sessions</h2>
        <p>Signed in on another device you no longer have? Sign out of every session, this one included.</p>
        <ErrorNote error={everywhere.error} />
        <button
          type="button"
          className="secondary"
          aria-busy={everywhere.isPending}
          onClick={() => everywhere.mutate(new FormData())}
        >
          Sign out everywhere
        </button>
      </section>
    </>
  );
}
