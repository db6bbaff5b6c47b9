// A call ringing for the member: a notification wherever they are in the console, with the caller's name (a
// contact's, an extension's) and number, a ring tone, and Answer and Decline. Focus moves to Answer so a
// keyboard user can take the call at once; the ring stops when it is answered, declined or given up.
import { useEffect, useId, useRef, useState } from 'react';
import { useCallerName } from './directory.ts';
import type { PhoneCall, PhoneEngine } from './engine.ts';
import { startRinging } from './ringer.ts';

export function IncomingCall({ engine, call }: { engine: PhoneEngine; call: PhoneCall }) {
  const name = useCallerName(call.remote, call.remoteDisplayName);
  const answerRef = useRef<HTMLButtonElement>(null);
  const titleId = useId();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    answerRef.current?.focus();
    return startRinging();
  }, []);
  const run = async (step: () => Promise<unknown>) => {
    setBusy(true);
    try {
      await step();
    } catch {
      // The dock shows why (a refused microphone, a call already gone).
    } finally {
      setBusy(false);
    }
  };
  return (
    <div
      className="phone-incoming"
      role="alertdialog"
      aria-labelledby={titleId}
      aria-describedby={`${titleId}-from`}
    >
      <p id={titleId}>
        <strong>Incoming call</strong>
      </p>
      <p id={`${titleId}-from`} className="phone-caller">
        {name}
        {name !== call.remote ? <small> {call.remote}</small> : null}
      </p>
      <div className="phone-actions">
        <button
          ref={answerRef}
          type="button"
          disabled={busy}
          onClick={() => run(() => engine.answer(call.id))}
        >
          Answer
        </button>
        <button
          type="button"
          className="secondary"
          disabled={busy}
          onClick={() => run(() => engine.decline(call.id))}
        >
          Decline
        </button>
      </div>
    </div>
  );
}
