// A form per step type (docs/voice.md "Steps"): which form a step gets, and the one-field forms of the steps that
// name a queue, a voicemail box, an agent, a transfer target or a pause.
import {
  type FormProps,
  PlayForm,
  RecordForm,
  RedirectForm,
  SayForm,
  StreamForm,
  str,
  withField,
} from './basic-forms.tsx';
import { DialForm, TargetEditor } from './dial-form.tsx';
import { NumberInput, Picker } from './fields.tsx';
import { GatherForm } from './gather-form.tsx';
import { HoursForm } from './hours-form.tsx';
import type { Target } from './model.ts';

export function StepForm({ step, path, onChange }: FormProps) {
  const props = { step, path, onChange };
  const pick = (kind: 'queue' | 'extension' | 'agent', field: string, label: string) => (
    <Picker
      kind={kind}
      path={`${path}.${field}`}
      label={label}
      value={str(step[field])}
      onChange={(value) => onChange(withField(step, field, value ?? ''))}
    />
  );
  switch (step.type) {
    case 'say':
      return <SayForm {...props} />;
    case 'play':
      return <PlayForm {...props} />;
    case 'gather':
      return <GatherForm {...props} />;
    case 'dial':
      return <DialForm {...props} />;
    case 'queue':
      return pick('queue', 'queueId', 'Queue');
    case 'voicemail':
      return pick('extension', 'extensionId', 'Voicemail box of');
    case 'agent':
      return pick('agent', 'agentId', 'AI agent');
    case 'record':
      return <RecordForm {...props} />;
    case 'transfer':
      return (
        <TargetEditor
          path={`${path}.target`}
          target={step.target as Target}
          onChange={(target) => onChange({ ...step, target })}
        />
      );
    case 'stream':
      return <StreamForm {...props} />;
    case 'hours':
      return <HoursForm {...props} />;
    case 'pause':
      return (
        <NumberInput
          path={`${path}.seconds`}
          label="Seconds of silence"
          min={1}
          max={60}
          required
          value={step.seconds}
          onChange={(value) => onChange(withField(step, 'seconds', value))}
        />
      );
    case 'redirect':
      return <RedirectForm {...props} />;
    case 'hangup':
      return <p>Ends the call.</p>;
    default:
      // A type this console does not know (a newer server's): its fields are kept and saved as they are.
      return <p>This console has no form for {String(step.type)} steps; the step is kept as it is.</p>;
  }
}
