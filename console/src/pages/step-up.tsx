// 403 MFA_STEP_UP_REQUIRED: the server wants a fresh two-factor code before a sensitive action (creating or
// revoking an API key, rotating a webhook secret, turning 2FA off). api.ts calls stepUp(), which opens this
// dialog and resolves with the code typed, or null if the user cancels; the action is then retried.
import { type FormEvent, useSyncExternalStore } from 'react';
import { Field, Modal } from '../ui.tsx';

let pending: ((code: string | null) => void) | null = null;
const listeners = new Set<() => void>();
const notify = () => {
  for (const listener of listeners) listener();
};

export function stepUp(): Promise<string | null> {
  pending?.(null);
  return new Promise((resolve) => {
    pending = resolve;
    notify();
  });
}

function settle(code: string | null) {
  const resolve = pending;
  pending = null;
  notify();
  resolve?.(code);
}

export function StepUpDialog() {
  const open = useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => pending !== null,
  );
  const onSubmit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    settle(String(new FormData(event.currentTarget).get('code') ?? '').trim());
  };
  return (
    <Modal open={open} title="Confirm it's you" onClose={() => settle(null)}>
      <form onSubmit={onSubmit} aria-label="Two-factor confirmation">
        <p>This action needs a fresh code from your authenticator app (or a recovery code).</p>
        <Field label="Two-factor code">
          {(id) => <input id={id} name="code" autoComplete="one-time-code" required />}
        </Field>
        <button type="submit">Confirm</button>
      </form>
    </Modal>
  );
}
