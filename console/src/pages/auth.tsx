// Signing in (with the two-factor challenge), registering, and resetting a forgotten password. These pages
// call anonymously: a 401 here is the answer to show, not a reason to sign out.
import { useMutation } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useEffect, useState } from 'react';
import { Link, useSearchParams } from 'wouter';
import { data } from '../api.ts';
import { ErrorNote, Field, NewPasswordField } from '../ui.tsx';

type LoginAnswer =
  | { requiresTwoFactor: true; tempToken: string }
  | { token: string; requiresTwoFactor?: undefined };

function AuthFrame({ title, children }: { title: string; children: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · Comms console`;
  }, [title]);
  return (
    <main className="container auth">
      <article>
        <header>
          <h1>{title}</h1>
        </header>
        {children}
      </article>
    </main>
  );
}

/** Where to go after signing in: the page that sent the user here, if it is one of ours. */
function nextPath(params: URLSearchParams): string {
  const next = params.get('next');
  return next?.startsWith('/') && !next.startsWith('//') ? next : '/';
}

function formValues(event: FormEvent<HTMLFormElement>): Record<string, string> {
  event.preventDefault();
  return Object.fromEntries(
    [...new FormData(event.currentTarget)].map(([key, value]) => [key, String(value)]),
  );
}

export function Login() {
  const [params] = useSearchParams();
  const [challenge, setChallenge] = useState<string | null>(null);
  const signedIn = () => window.location.assign(nextPath(params));

  const login = useMutation({
    mutationFn: (values: Record<string, string>) =>
      data<LoginAnswer>(
        'POST',
        '/v2/portal/auth/login',
        { email: values.email, password: values.password, remember: values.remember === 'on' },
        { anonymous: true },
      ),
    onSuccess: (answer) => (answer.requiresTwoFactor ? setChallenge(answer.tempToken) : signedIn()),
  });
  const verify = useMutation({
    mutationFn: (values: Record<string, string>) =>
      data(
        'POST',
        '/v2/portal/auth/2fa/login-verify',
        { tempToken: challenge, code: values.code },
        { anonymous: true },
      ),
    onSuccess: signedIn,
  });

  if (challenge) {
    return (
      <AuthFrame title="Two-factor verification">
        <form onSubmit={(event) => verify.mutate(formValues(event))} aria-label="Two-factor verification">
          <Field label="Code from your authenticator app, or a recovery code">
            {(id) => <input id={id} name="code" autoComplete="one-time-code" inputMode="text" required />}
          </Field>
          <ErrorNote error={verify.error} />
          <button type="submit" aria-busy={verify.isPending}>
            Verify
          </button>
        </form>
        <button type="button" className="secondary outline" onClick={() => setChallenge(null)}>
          Back
        </button>
      </AuthFrame>
    );
  }

  return (
    <AuthFrame title="Sign in">
      <form onSubmit={(event) => login.mutate(formValues(event))} aria-label="Sign in">
        <Field label="E-mail">
          {(id) => <input id={id} name="email" type="email" autoComplete="username" required />}
        </Field>
        <Field label="Password">
          {(id) => <input id={id} name="password" type="password" autoComplete="current-password" required />}
        </Field>
        <label>
          <input type="checkbox" name="remember" /> Keep me signed in for 7 days
        </label>
        <ErrorNote error={login.error} />
        <button type="submit" aria-busy={login.isPending}>
          Sign in
        </button>
      </form>
      <footer>
        <Link href="/reset-password">Forgot your password?</Link> ·{' '}
        <Link href="/register">Create an account</Link>
      </footer>
    </AuthFrame>
  );
}

export function Register() {
  const register = useMutation({
    mutationFn: (values: Record<string, string>) =>
      data('POST', '/v2/portal/auth/register', values, { anonymous: true }),
    onSuccess: () => window.location.assign('/'),
  });
  return (
    <AuthFrame title="Create an account">
      <form onSubmit={(event) => register.mutate(formValues(event))} aria-label="Create an account">
        <Field label="Your name">{(id) => <input id={id} name="name" autoComplete="name" required />}</Field>
        <Field label="Organization name">
          {(id) => <input id={id} name="organizationName" autoComplete="organization" required />}
        </Field>
        <Field label="E-mail">
          {(id) => <input id={id} name="email" type="email" autoComplete="email" required />}
        </Field>
        <NewPasswordField name="password" label="Password" />
        <ErrorNote error={register.error} />
        <button type="submit" aria-busy={register.isPending}>
          Create account
        </button>
      </form>
      <footer>
        <Link href="/login">Already have an account? Sign in</Link>
      </footer>
    </AuthFrame>
  );
}

export function ResetPassword() {
  const [params] = useSearchParams();
  const token = params.get('token');
  const request = useMutation({
    mutationFn: (values: Record<string, string>) =>
      data<{ message: string }>('POST', '/v2/portal/auth/password-reset/request', values, {
        anonymous: true,
      }),
  });
  const confirm = useMutation({
    mutationFn: (values: Record<string, string>) =>
      data(
        'POST',
        '/v2/portal/auth/password-reset/confirm',
        { token, newPassword: values.newPassword },
        {
          anonymous: true,
        },
      ),
  });

  if (token) {
    return (
      <AuthFrame title="Choose a new password">
        {confirm.isSuccess ? (
          <p role="status">
            Your password is changed. <Link href="/login">Sign in</Link>
          </p>
        ) : (
          <form onSubmit={(event) => confirm.mutate(formValues(event))} aria-label="Choose a new password">
            <NewPasswordField name="newPassword" label="New password" />
            <ErrorNote error={confirm.error} />
            <button type="submit" aria-busy={confirm.isPending}>
              Set password
            </button>
          </form>
        )}
      </AuthFrame>
    );
  }
  return (
    <AuthFrame title="Reset your password">
      {request.isSuccess ? (
        <p role="status">{request.data.message}</p>
      ) : (
        <form onSubmit={(event) => request.mutate(formValues(event))} aria-label="Reset your password">
          <Field label="E-mail">
            {(id) => <input id={id} name="email" type="email" autoComplete="email" required />}
          </Field>
          <ErrorNote error={request.error} />
          <button type="submit" aria-busy={request.isPending}>
            Send reset link
          </button>
        </form>
      )}
      <footer>
        <Link href="/login">Back to sign in</Link>
      </footer>
    </AuthFrame>
  );
}
