// Transferring a call: blind (the other side is sent to the target at once, REFER) or attended (this call is
// held while the member consults the target in a second call; completing joins the two, REFER with Replaces).
import { useState } from 'react';
import type { PhoneEngine } from './engine.ts';

export function TransferForm({
  engine,
  callId,
  onDone,
}: {
  engine: PhoneEngine;
  callId: string;
  onDone: () => void;
}) {
  const [target, setTarget] = useState('');
  const [problem, setProblem] = useState<string>();
  const run = async (step: () => Promise<unknown>) => {
    setProblem(undefined);
    try {
      await step();
      onDone();
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
    }
  };
  const valid = /[\d+]/.test(target);
  return (
    <form
      className="phone-transfer"
      aria-label="Transfer"
      onSubmit={(event) => {
        event.preventDefault();
        void run(() => engine.transfer(callId, target));
      }}
    >
      <label>
        Transfer to
        <input
          name="transferTarget"
          value={target}
          inputMode="tel"
          autoComplete="off"
          placeholder="Extension or number"
          onChange={(event) => setTarget(event.target.value)}
        />
      </label>
      <div className="phone-actions">
        <button type="submit" disabled={!valid}>
          Transfer now
        </button>
        <button
          type="button"
          className="secondary"
          disabled={!valid}
          onClick={() =>
            run(async () => {
              await engine.toggleHold(callId);
              await engine.dial(target);
            })
          }
        >
          Consult first
        </button>
      </div>
      {problem ? <p role="alert">{problem}</p> : null}
    </form>
  );
}
