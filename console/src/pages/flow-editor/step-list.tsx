// An ordered list of steps: each step a card with its form, moved up or down or removed, and a new step added at
// the end. Lists nest (a menu's branches, what runs when nobody answers, open and closed hours): the forms reach
// this component through ListContext. The focus follows a moved step, and goes into a new one.
import { useEffect, useRef, useState } from 'react';
import { ListContext, type ListProps, useEditor } from './fields.tsx';
import { newStep, STEP_LABELS, STEP_TYPES, type Step, type StepType } from './model.ts';
import { StepForm } from './step-forms.tsx';

function StepCard({
  step,
  path,
  index,
  count,
  listLabel,
  onChange,
  onMove,
  onRemove,
}: {
  step: Step;
  path: string;
  index: number;
  count: number;
  listLabel: string;
  onChange: (step: Step) => void;
  onMove: (by: -1 | 1) => void;
  onRemove: () => void;
}) {
  const editor = useEditor();
  const own = editor.server && (editor.server.path === path || editor.server.path === `${path}.type`);
  const name = `step ${index + 1} of ${listLabel}`;
  return (
    <li>
      <fieldset
        className="step"
        data-step-path={path}
        data-step-key={step.$key}
        aria-invalid={own ? true : undefined}
      >
        <legend>
          {index + 1}. {STEP_LABELS[step.type] ?? step.type}
        </legend>
        {editor.readOnly ? null : (
          <div className="step-tools">
            <button
              type="button"
              className="secondary outline"
              data-move="up"
              disabled={index === 0}
              onClick={() => onMove(-1)}
            >
              Up<span className="visually-hidden"> ({name})</span>
            </button>
            <button
              type="button"
              className="secondary outline"
              data-move="down"
              disabled={index === count - 1}
              onClick={() => onMove(1)}
            >
              Down<span className="visually-hidden"> ({name})</span>
            </button>
            <button type="button" className="secondary outline" onClick={onRemove}>
              Remove<span className="visually-hidden"> ({name})</span>
            </button>
          </div>
        )}
        {own ? (
          <p className="field-problem" data-problem-for={path}>
            This step {editor.server?.message}
          </p>
        ) : null}
        <StepForm step={step} path={path} onChange={onChange} />
      </fieldset>
    </li>
  );
}

function AddStep({ label, onAdd }: { label: string; onAdd: (type: StepType) => void }) {
  const [type, setType] = useState<StepType>('say');
  return (
    <div className="add-step">
      <select
        aria-label={`Type of a new step in ${label}`}
        value={type}
        onChange={(event) => setType(event.target.value as StepType)}
      >
        {STEP_TYPES.map((choice) => (
          <option key={choice} value={choice}>
            {STEP_LABELS[choice]}
          </option>
        ))}
      </select>
      <button type="button" className="secondary" onClick={() => onAdd(type)}>
        Add step<span className="visually-hidden"> to {label}</span>
      </button>
    </div>
  );
}

export function StepList({ steps, path, label, onChange }: ListProps) {
  const editor = useEditor();
  const container = useRef<HTMLDivElement>(null);
  // Where the focus goes after the render that moved or added a step: that step's own button or first field.
  const [focus, setFocus] = useState<{ key: string; move?: 'up' | 'down' }>();
  useEffect(() => {
    if (!focus) return;
    const card = container.current?.querySelector<HTMLElement>(`[data-step-key="${focus.key}"]`);
    if (!card) return;
    const target = focus.move
      ? (card.querySelector<HTMLButtonElement>(`[data-move="${focus.move}"]:not(:disabled)`) ??
        card.querySelector<HTMLButtonElement>('[data-move]:not(:disabled)'))
      : card.querySelector<HTMLElement>('input, select, textarea');
    target?.focus();
  }, [focus]);
  const move = (index: number, by: -1 | 1) => {
    const next = [...steps];
    const [moved] = next.splice(index, 1);
    next.splice(index + by, 0, moved!);
    onChange(next);
    setFocus({ key: moved!.$key, move: by === -1 ? 'up' : 'down' });
  };
  const add = (type: StepType) => {
    const step = newStep(type);
    onChange([...steps, step]);
    setFocus({ key: step.$key });
  };
  return (
    <ListContext.Provider value={StepList}>
      <div className="step-list" data-list-path={path} ref={container}>
        {steps.length === 0 ? <p className="empty">No steps in {label}.</p> : null}
        <ol>
          {steps.map((step, index) => (
            <StepCard
              key={step.$key}
              step={step}
              path={`${path}.${index}`}
              index={index}
              count={steps.length}
              listLabel={label}
              onChange={(changed) => onChange(steps.map((s, i) => (i === index ? changed : s)))}
              onMove={(by) => move(index, by)}
              onRemove={() => onChange(steps.filter((_, i) => i !== index))}
            />
          ))}
        </ol>
        {editor.readOnly ? null : <AddStep label={label} onAdd={add} />}
      </div>
    </ListContext.Provider>
  );
}
