// The phone dock: on every signed-in page (the shell renders it), so a call survives navigation. A button
// shows the phone's state and opens the panel: the dialer, the calls under way, or why the phone cannot work
// (no extension, a blocked microphone, the server out of reach). Incoming calls ring above it wherever the
// member is.
import { useEffect, useState } from 'react';
import { CallPanel } from './call-panel.tsx';
import { Dialer } from './dialer.tsx';
import type { PhoneSnapshot } from './engine.ts';
import { IncomingCall } from './incoming.tsx';
import { MicrophoneCheck } from './microphone-check.tsx';
import { NoExtension } from './no-extension.tsx';
import { PhoneProvider, usePhone } from './use-phone.tsx';

const STATUS_TEXT: Record<PhoneSnapshot['status'], string> = {
  starting: 'Starting…',
  'no-extension': 'No extension',
  connecting: 'Connecting…',
  ready: 'Ready',
  offline: 'Offline',
  failed: 'Not available',
};

export default function PhoneDock() {
  return (
    <PhoneProvider>
      <Dock />
    </PhoneProvider>
  );
}

function Dock() {
  const { engine, phone } = usePhone();
  const [open, setOpen] = useState(false);
  const ringing = phone.calls.filter((each) => each.direction === 'incoming' && each.state === 'ringing');
  const calls = phone.calls.filter((each) => !ringing.includes(each));
  useEffect(() => {
    if (calls.length > 0) setOpen(true);
  }, [calls.length]);
  const label = phone.extension ? `Phone · ${phone.extension.number}` : 'Phone';

  return (
    <aside className="phone-dock" aria-label="Phone">
      {ringing.map((call) => (
        <IncomingCall key={call.id} engine={engine} call={call} />
      ))}
      <div id="phone-panel" className="phone-panel" hidden={!open}>
        <h2 className="visually-hidden">Phone</h2>
        <p className="phone-status" role="status" data-phone-status={phone.status}>
          {phone.extension ? `Extension ${phone.extension.number} (${phone.extension.name}): ` : ''}
          {STATUS_TEXT[phone.status]}
        </p>
        {phone.problem ? (
          <p className="phone-problem" role="alert">
            {phone.problem}
          </p>
        ) : null}
        {phone.status === 'no-extension' ? <NoExtension /> : <MicrophoneCheck />}
        {calls.map((call) => (
          <CallPanel
            key={call.id}
            engine={engine}
            call={call}
            consult={calls.find((other) => other.id !== call.id)}
          />
        ))}
        {phone.status === 'ready' && calls.length < 2 ? (
          <Dialer onDial={(target) => engine.dial(target)} />
        ) : null}
      </div>
      <button
        type="button"
        className="phone-toggle"
        aria-expanded={open}
        aria-controls="phone-panel"
        onClick={() => setOpen(!open)}
      >
        {label} <small className={`phone-dot phone-dot-${phone.status}`}>{STATUS_TEXT[phone.status]}</small>
      </button>
    </aside>
  );
}
