// One call in the dock: who it is with, its state and timer, and what can be done with it (mute, hold, keys,
// transfer, hang up). While a second call is up and this one is held, it can be joined to it (attended transfer).
import { useEffect, useState } from 'react';
import { CallTimer } from './call-timer.tsx';
import { useCallerName } from './directory.ts';
import type { PhoneCall, PhoneEngine } from './engine.ts';
import { Keypad } from './keypad.tsx';
import { TransferForm } from './transfer.tsx';

export function CallPanel({
  engine,
  call,
  consult,
}: {
  engine: PhoneEngine;
  call: PhoneCall;
  consult?: PhoneCall;
}) {
  const name = useCallerName(call.remote, call.remoteDisplayName);
  const [tool, setTool] = useState<'keys' | 'transfer'>();
  const active = call.state === 'active';
  const act = (step: () => unknown) => () => void Promise.resolve(step()).catch(() => undefined);
  const headingId = `call-${call.id}`;
  return (
    <section
      className="phone-call"
      aria-labelledby={headingId}
      data-call-state={call.held ? 'held' : call.state}
    >
      <h3 id={headingId}>
        {name}
        {name !== call.remote ? <small> {call.remote}</small> : null}
      </h3>
      <p>
        {call.state === 'calling' ? 'Calling…' : call.held ? 'On hold' : active ? 'In call' : call.state}
        {call.answeredAt ? (
          <>
            {' · '}
            <CallTimer since={call.answeredAt} />
          </>
        ) : null}
      </p>
      {active ? <AudioMeter engine={engine} callId={call.id} /> : null}
      {active ? (
        <fieldset className="phone-actions">
          <legend className="visually-hidden">Call controls</legend>
          <button
            type="button"
            className="secondary"
            aria-pressed={call.muted}
            onClick={act(() => engine.toggleMute(call.id))}
          >
            {call.muted ? 'Unmute' : 'Mute'}
          </button>
          <button
            type="button"
            className="secondary"
            aria-pressed={call.held}
            onClick={act(() => engine.toggleHold(call.id))}
          >
            {call.held ? 'Resume' : 'Hold'}
          </button>
          <button
            type="button"
            className="secondary outline"
            aria-expanded={tool === 'keys'}
            onClick={() => setTool(tool === 'keys' ? undefined : 'keys')}
          >
            Keys
          </button>
          <button
            type="button"
            className="secondary outline"
            aria-expanded={tool === 'transfer'}
            onClick={() => setTool(tool === 'transfer' ? undefined : 'transfer')}
          >
            Transfer
          </button>
        </fieldset>
      ) : null}
      {active && tool === 'keys' ? (
        <Keypad label="Keys to send" onKey={(key) => void engine.sendKey(call.id, key)} />
      ) : null}
      {active && tool === 'transfer' ? (
        <TransferForm engine={engine} callId={call.id} onDone={() => setTool(undefined)} />
      ) : null}
      {call.held && consult?.state === 'active' ? (
        <button type="button" onClick={act(() => engine.completeTransfer(call.id, consult.id))}>
          Complete transfer to {consult.remote}
        </button>
      ) : null}
      <button type="button" className="phone-hangup" onClick={act(() => engine.hangup(call.id))}>
        {call.state === 'calling' ? 'Cancel' : 'Hang up'}
      </button>
    </section>
  );
}

/** Whether their voice is arriving: the packets received so far, and a level meter of what is heard now. */
function AudioMeter({ engine, callId }: { engine: PhoneEngine; callId: string }) {
  const [stats, setStats] = useState<{ received: number; sent: number; level: number }>();
  useEffect(() => {
    const timer = setInterval(() => void engine.audioStats(callId).then(setStats), 1000);
    return () => clearInterval(timer);
  }, [engine, callId]);
  return (
    <p
      className="phone-audio"
      data-testid="call-audio"
      data-received={stats?.received ?? 0}
      data-sent={stats?.sent ?? 0}
      data-level={stats?.level ?? 0}
    >
      <label>
        Their voice
        <meter min={0} max={1} value={stats?.level ?? 0} />
      </label>
    </p>
  );
}
