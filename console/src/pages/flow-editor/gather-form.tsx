// The menu step's form (gather): what is collected and how, the prompt (a say or play step), a branch of steps
// per answer, and what runs when the answer matches none.
import { type FormProps, PlayForm, SayForm, str, withField } from './basic-forms.tsx';
import { NestedSteps, NumberInput, SelectInput, TextInput, useEditor } from './fields.tsx';
import { type Branch, newKey, type Step } from './model.ts';

const INPUTS: [string, string][] = [
  ['dtmf', 'Keys'],
  ['speech', 'Speech'],
  ['dtmf,speech', 'Keys or speech'],
];

function Prompt({ step, path, onChange }: FormProps) {
  const prompt = step.prompt as Step | undefined;
  const at = `${path}.prompt`;
  return (
    <section className="nested" aria-label="Prompt">
      <SelectInput
        path={`${at}.type`}
        label="Prompt"
        value={prompt?.type ?? ''}
        options={[
          ['', 'None'],
          ['say', 'Say text'],
          ['play', 'Play audio'],
        ]}
        onChange={(type) =>
          onChange(
            withField(
              step,
              'prompt',
              type === 'say'
                ? { type, $key: newKey(), text: '' }
                : type === 'play'
                  ? { type, $key: newKey(), audioUrl: '' }
                  : undefined,
            ),
          )
        }
      />
      {prompt?.type === 'say' ? (
        <SayForm step={prompt} path={at} onChange={(changed) => onChange({ ...step, prompt: changed })} />
      ) : null}
      {prompt?.type === 'play' ? (
        <PlayForm step={prompt} path={at} onChange={(changed) => onChange({ ...step, prompt: changed })} />
      ) : null}
    </section>
  );
}

/** The first key from 1 up that no branch answers yet. */
function nextAnswer(branches: Branch[]): string {
  const used = new Set(branches.map((branch) => branch.answer));
  for (const key of ['1', '2', '3', '4', '5', '6', '7', '8', '9', '0', '*', '#']) {
    if (!used.has(key)) return key;
  }
  return '';
}

export function GatherForm({ step, path, onChange }: FormProps) {
  const { readOnly } = useEditor();
  const branches = (step.branches as Branch[]) ?? [];
  const input = ((step.input as string[]) ?? ['dtmf']).join(',');
  const speech = input.includes('speech');
  const set = (field: string) => (value: unknown) => onChange(withField(step, field, value));
  const setBranches = (next: Branch[]) => onChange({ ...step, branches: next });
  const setBranch = (index: number, branch: Branch) =>
    setBranches(branches.map((b, i) => (i === index ? branch : b)));
  return (
    <>
      <div className="grid">
        <SelectInput
          path={`${path}.input`}
          label="Listen for"
          value={input}
          options={INPUTS}
          onChange={(value) => onChange({ ...step, input: value.split(',') })}
        />
        <NumberInput
          path={`${path}.numDigits`}
          label="Keys to collect (optional)"
          min={1}
          max={32}
          value={step.numDigits}
          onChange={set('numDigits')}
        />
        <TextInput
          path={`${path}.finishOnKey`}
          label="Key that ends the answer (optional)"
          placeholder="#"
          value={str(step.finishOnKey)}
          onChange={set('finishOnKey')}
        />
        <NumberInput
          path={`${path}.timeoutSeconds`}
          label="Seconds to wait (optional)"
          min={1}
          max={60}
          value={step.timeoutSeconds}
          onChange={set('timeoutSeconds')}
        />
      </div>
      <Prompt step={step} path={path} onChange={onChange} />
      {branches.map((branch, index) => {
        const at = `${path}.branches.${branch.answer}`;
        const title = `When the caller ${speech ? 'answers' : 'presses'} ${branch.answer || '…'}`;
        return (
          <div className="branch" key={branch.$key}>
            <div className="branch-head">
              <TextInput
                path={at}
                label={speech ? 'Answer (keys or a phrase)' : 'Keys pressed'}
                required
                inputMode={speech ? 'text' : 'numeric'}
                value={branch.answer}
                onChange={(answer) => setBranch(index, { ...branch, answer: answer ?? '' })}
              />
              {readOnly ? null : (
                <button
                  type="button"
                  className="secondary outline"
                  onClick={() => setBranches(branches.filter((_, i) => i !== index))}
                >
                  Remove branch<span className="visually-hidden"> ({branch.answer || 'no answer'})</span>
                </button>
              )}
            </div>
            <NestedSteps
              path={at}
              label={title}
              steps={branch.steps}
              onChange={(steps) => setBranch(index, { ...branch, steps })}
            />
          </div>
        );
      })}
      {readOnly ? null : (
        <button
          type="button"
          className="secondary outline"
          onClick={() =>
            setBranches([...branches, { $key: newKey(), answer: nextAnswer(branches), steps: [] }])
          }
        >
          Add branch
        </button>
      )}
      <NestedSteps
        path={`${path}.otherwise`}
        label="Otherwise (no answer, or no branch matches)"
        optional
        steps={(step.otherwise as Step[]) ?? []}
        onChange={(steps) => onChange({ ...step, otherwise: steps })}
      />
      <TextInput
        path={`${path}.actionUrl`}
        label="Also post the answer to (optional)"
        type="url"
        placeholder="https://…"
        value={str(step.actionUrl)}
        onChange={set('actionUrl')}
      />
    </>
  );
}
