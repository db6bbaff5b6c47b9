// The dial step's form (targets, strategy, time to ring, caller id, recording, and what runs when nobody answers
// or all are busy) and the target editor it shares with the transfer step.
import { type FormProps, str, withField } from './basic-forms.tsx';
import { Checkbox, NestedSteps, NumberInput, Picker, SelectInput, TextInput, useEditor } from './fields.tsx';
import type { Step, Target, TargetType } from './model.ts';

const TARGET_LABELS: [TargetType, string][] = [
  ['extension', 'Extension'],
  ['ring_group', 'Ring group'],
  ['number', 'Phone number'],
  ['sip', 'SIP address'],
];

export function TargetEditor({
  path,
  target,
  onChange,
}: {
  path: string;
  target: Target;
  onChange: (target: Target) => void;
}) {
  const set = (value: string | undefined) => onChange({ ...target, target: value ?? '' });
  return (
    <div className="grid">
      <SelectInput
        path={`${path}.type`}
        label="Ring"
        value={target.type}
        options={TARGET_LABELS}
        onChange={(type) => onChange({ type: type as TargetType, target: '' })}
      />
      {target.type === 'extension' || target.type === 'ring_group' ? (
        <Picker
          kind={target.type}
          path={`${path}.target`}
          label={target.type === 'extension' ? 'Extension' : 'Ring group'}
          value={target.target}
          onChange={set}
        />
      ) : (
        <TextInput
          path={`${path}.target`}
          label={target.type === 'number' ? 'Phone number' : 'SIP address'}
          type={target.type === 'number' ? 'tel' : 'text'}
          placeholder={target.type === 'number' ? '+14155550100' : 'sip:desk@example.com'}
          required
          value={target.target}
          onChange={set}
        />
      )}
    </div>
  );
}

export function DialForm({ step, path, onChange }: FormProps) {
  const { readOnly } = useEditor();
  const targets = (step.targets as Target[]) ?? [];
  const setTargets = (next: Target[]) => onChange({ ...step, targets: next });
  const set = (field: string) => (value: unknown) => onChange(withField(step, field, value));
  return (
    <>
      <ol className="targets">
        {targets.map((target, index) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: targets are edited in place; their inputs are controlled
          <li key={index}>
            <TargetEditor
              path={`${path}.targets.${index}`}
              target={target}
              onChange={(changed) => setTargets(targets.map((t, i) => (i === index ? changed : t)))}
            />
            {readOnly || targets.length < 2 ? null : (
              <button
                type="button"
                className="secondary outline"
                onClick={() => setTargets(targets.filter((_, i) => i !== index))}
              >
                Remove target<span className="visually-hidden"> ({index + 1})</span>
              </button>
            )}
          </li>
        ))}
      </ol>
      {readOnly || targets.length >= 10 ? null : (
        <button
          type="button"
          className="secondary outline"
          onClick={() => setTargets([...targets, { type: 'extension', target: '' }])}
        >
          Add target
        </button>
      )}
      <div className="grid">
        <SelectInput
          path={`${path}.strategy`}
          label="Ring them"
          value={str(step.strategy) ?? ''}
          options={[
            ['', 'All at once (default)'],
            ['simultaneous', 'All at once'],
            ['sequential', 'One after another'],
          ]}
          onChange={(value) => set('strategy')(value || undefined)}
        />
        <NumberInput
          path={`${path}.timeoutSeconds`}
          label="Seconds to ring (optional)"
          min={5}
          max={600}
          value={step.timeoutSeconds}
          onChange={set('timeoutSeconds')}
        />
        <TextInput
          path={`${path}.callerId`}
          label="Caller id (optional)"
          type="tel"
          placeholder="+14155550100"
          value={str(step.callerId)}
          onChange={set('callerId')}
        />
      </div>
      <Checkbox
        path={`${path}.record`}
        label="Record the call"
        value={step.record === true}
        onChange={(value) => set('record')(value ? true : undefined)}
      />
      <NestedSteps
        path={`${path}.onNoAnswer`}
        label="If nobody answers"
        optional
        steps={(step.onNoAnswer as Step[]) ?? []}
        onChange={(steps) => onChange({ ...step, onNoAnswer: steps })}
      />
      <NestedSteps
        path={`${path}.onBusy`}
        label="If all are busy"
        optional
        steps={(step.onBusy as Step[]) ?? []}
        onChange={(steps) => onChange({ ...step, onBusy: steps })}
      />
    </>
  );
}
