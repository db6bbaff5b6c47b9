// The dialer: type an extension, a number or a name; matching extensions, the organization's numbers and
// contacts are listed to call with one press; the keypad types digits.
import { useId, useState } from 'react';
import { useDirectory } from './directory.ts';
import { Keypad } from './keypad.tsx';

export function Dialer({ onDial }: { onDial: (target: string) => Promise<void> }) {
  const [target, setTarget] = useState('');
  const [busy, setBusy] = useState(false);
  const [showKeypad, setShowKeypad] = useState(false);
  const { entries } = useDirectory(/\d{3,}|[a-z]/i.test(target) ? target : '');
  const matchesId = useId();

  const dial = async (what: string) => {
    setBusy(true);
    try {
      await onDial(what);
      setTarget('');
    } catch {
      // The engine shows what went wrong in the dock (the microphone, the server).
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className="phone-dialer"
      onSubmit={(event) => {
        event.preventDefault();
        void dial(target);
      }}
    >
      <label>
        Call
        <input
          type="search"
          name="target"
          value={target}
          autoComplete="off"
          placeholder="Extension, number or name"
          aria-describedby={entries.length ? matchesId : undefined}
          onChange={(event) => setTarget(event.target.value)}
        />
      </label>
      {entries.length > 0 ? (
        <ul id={matchesId} className="phone-matches" aria-label="Matches">
          {entries.map((entry) => (
            <li key={`${entry.kind}-${entry.key}`}>
              <button
                type="button"
                className="secondary outline"
                disabled={busy}
                onClick={() => dial(entry.dial)}
              >
                Call {entry.name}{' '}
                <small>
                  ({entry.kind.toLowerCase()} {entry.dial})
                </small>
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      <div className="phone-actions">
        <button type="submit" disabled={busy || !/[\d+]/.test(target)} aria-busy={busy}>
          Call
        </button>
        <button
          type="button"
          className="secondary outline"
          aria-expanded={showKeypad}
          onClick={() => setShowKeypad(!showKeypad)}
        >
          Keypad
        </button>
      </div>
      {showKeypad ? <Keypad label="Dial pad" onKey={(key) => setTarget(target + key)} /> : null}
    </form>
  );
}
