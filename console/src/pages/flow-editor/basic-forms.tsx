// The forms of the steps that hold no other steps (say, play, record, stream, redirect), and what every step's
// form is given.
import { NumberInput, Picker, SelectInput, TextInput } from './fields.tsx';
import type { Step } from './model.ts';

export interface FormProps {
  step: Step;
  path: string;
  onChange: (step: Step) => void;
}

/** A copy of the step with `field` set, or left out when `value` is undefined (an optional field not given). */
export function withField(step: Step, field: string, value: unknown): Step {
  const next: Step = { ...step };
  if (value === undefined) delete next[field];
  else next[field] = value;
  return next;
}

export const str = (value: unknown) => (typeof value === 'string' ? value : undefined);

export function SayForm({ step, path, onChange }: FormProps) {
  const set = (field: string) => (value: unknown) => onChange(withField(step, field, value));
  return (
    <>
      <TextInput
        path={`${path}.text`}
        label="Text to speak"
        multiline
        required
        value={str(step.text)}
        onChange={set('text')}
      />
      <div className="grid">
        <TextInput
          path={`${path}.voice`}
          label="Voice (optional)"
          placeholder="en-us"
          value={str(step.voice)}
          onChange={set('voice')}
        />
        <TextInput
          path={`${path}.language`}
          label="Language (optional)"
          placeholder="en-US"
          value={str(step.language)}
          onChange={set('language')}
        />
      </div>
    </>
  );
}

export function PlayForm({ step, path, onChange }: FormProps) {
  const stored = step.audioId !== undefined;
  return (
    <div className="grid">
      <SelectInput
        path={`${path}.source`}
        label="Audio from"
        value={stored ? 'id' : 'url'}
        options={[
          ['url', 'A URL'],
          ['id', 'Stored audio (id)'],
        ]}
        onChange={(source) => {
          const { audioId: _id, audioUrl: _url, ...rest } = step;
          onChange(source === 'id' ? { ...rest, audioId: '' } : { ...rest, audioUrl: '' });
        }}
      />
      {stored ? (
        <TextInput
          path={`${path}.audioId`}
          label="Audio id"
          required
          value={str(step.audioId)}
          onChange={(value) => onChange(withField(step, 'audioId', value ?? ''))}
        />
      ) : (
        <TextInput
          path={`${path}.audioUrl`}
          label="Audio URL"
          type="url"
          required
          placeholder="https://…"
          value={str(step.audioUrl)}
          onChange={(value) => onChange(withField(step, 'audioUrl', value ?? ''))}
        />
      )}
      <NumberInput
        path={`${path}.loop`}
        label="Times to play (optional)"
        min={1}
        max={10}
        value={step.loop}
        onChange={(value) => onChange(withField(step, 'loop', value))}
      />
    </div>
  );
}

export function RecordForm({ step, path, onChange }: FormProps) {
  return (
    <div className="grid">
      <NumberInput
        path={`${path}.maxSeconds`}
        label="Longest recording, seconds (optional)"
        min={1}
        max={3600}
        value={step.maxSeconds}
        onChange={(value) => onChange(withField(step, 'maxSeconds', value))}
      />
      <TextInput
        path={`${path}.finishOnKey`}
        label="Key that ends it (optional)"
        placeholder="#"
        value={str(step.finishOnKey)}
        onChange={(value) => onChange(withField(step, 'finishOnKey', value))}
      />
    </div>
  );
}

export function StreamForm({ step, path, onChange }: FormProps) {
  return (
    <div className="grid">
      <TextInput
        path={`${path}.url`}
        label="WebSocket URL"
        type="url"
        required
        placeholder="wss://…"
        value={str(step.url)}
        onChange={(value) => onChange(withField(step, 'url', value ?? ''))}
      />
      <SelectInput
        path={`${path}.track`}
        label="Audio sent"
        value={str(step.track) ?? ''}
        options={[
          ['', "The caller's (default)"],
          ['inbound', "The caller's"],
          ['both', 'Both sides'],
        ]}
        onChange={(value) => onChange(withField(step, 'track', value || undefined))}
      />
    </div>
  );
}

export function RedirectForm({ step, path, onChange }: FormProps) {
  const toUrl = step.url !== undefined;
  return (
    <div className="grid">
      <SelectInput
        path={`${path}.mode`}
        label="Continue with"
        value={toUrl ? 'url' : 'flow'}
        options={[
          ['flow', 'A call flow'],
          ['url', 'Steps from a URL'],
        ]}
        onChange={(mode) => {
          const { flowId: _flow, url: _url, ...rest } = step;
          onChange(mode === 'url' ? { ...rest, url: '' } : { ...rest, flowId: '' });
        }}
      />
      {toUrl ? (
        <TextInput
          path={`${path}.url`}
          label="URL answering {steps}"
          type="url"
          required
          placeholder="https://…"
          value={str(step.url)}
          onChange={(value) => onChange(withField(step, 'url', value ?? ''))}
        />
      ) : (
        <Picker
          kind="flow"
          path={`${path}.flowId`}
          label="Call flow"
          value={str(step.flowId)}
          onChange={(value) => onChange(withField(step, 'flowId', value ?? ''))}
        />
      )}
    </div>
  );
}
