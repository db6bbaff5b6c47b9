// The business-hours step's form: a time zone, ranges of open hours (days, from, to), holidays, and the steps
// for open and for closed.
import { useId } from 'react';
import type { FormProps } from './basic-forms.tsx';
import { NestedSteps, TextInput, useEditor, useProblem } from './fields.tsx';
import { type OpenRange, type Step, WEEKDAYS } from './model.ts';

const DAY_NAMES: Record<string, string> = {
  mon: 'Mon',
  tue: 'Tue',
  wed: 'Wed',
  thu: 'Thu',
  fri: 'Fri',
  sat: 'Sat',
  sun: 'Sun',
};

/** The browser's own list of time zones, offered as suggestions; the server's tz database has the last word. */
const ZONES: string[] = (() => {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return [];
  }
})();

function Days({
  path,
  days,
  onChange,
}: {
  path: string;
  days: string[];
  onChange: (days: string[]) => void;
}) {
  const { readOnly, touch } = useEditor();
  const problem = useProblem(path);
  const id = useId();
  return (
    <fieldset
      className="days"
      data-path={path}
      aria-invalid={problem ? true : undefined}
      aria-describedby={problem ? id : undefined}
    >
      <legend>Days</legend>
      {WEEKDAYS.map((day) => (
        <label key={day}>
          <input
            type="checkbox"
            disabled={readOnly}
            checked={days.includes(day)}
            onChange={(event) => {
              touch(path);
              const next = event.target.checked ? [...days, day] : days.filter((d) => d !== day);
              onChange(WEEKDAYS.filter((d) => next.includes(d)));
            }}
          />
          {DAY_NAMES[day]}
        </label>
      ))}
      {problem ? (
        <small id={id} className="field-problem" data-problem-for={path}>
          Days {problem}
        </small>
      ) : null}
    </fieldset>
  );
}

export function HoursForm({ step, path, onChange }: FormProps) {
  const { readOnly } = useEditor();
  const zonesId = useId();
  const open = (step.open as OpenRange[]) ?? [];
  const holidays = (step.holidays as string[]) ?? [];
  const setOpen = (next: OpenRange[]) => onChange({ ...step, open: next });
  const setRange = (index: number, range: OpenRange) =>
    setOpen(open.map((r, i) => (i === index ? range : r)));
  const setHolidays = (next: string[]) => onChange({ ...step, holidays: next });
  return (
    <>
      <TextInput
        path={`${path}.timezone`}
        label="Time zone"
        required
        list={zonesId}
        placeholder="America/New_York"
        value={typeof step.timezone === 'string' ? step.timezone : ''}
        onChange={(value) => onChange({ ...step, timezone: value ?? '' })}
      />
      <datalist id={zonesId}>
        {ZONES.map((zone) => (
          <option key={zone} value={zone} />
        ))}
      </datalist>
      <h4>Open hours</h4>
      {open.map((range, index) => {
        const at = `${path}.open.${index}`;
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: ranges are edited in place; their inputs are controlled
          <div className="open-range" key={index}>
            <Days
              path={`${at}.days`}
              days={range.days}
              onChange={(days) => setRange(index, { ...range, days })}
            />
            <TextInput
              path={`${at}.from`}
              label="From (HH:MM)"
              required
              inputMode="numeric"
              placeholder="09:00"
              value={range.from}
              onChange={(from) => setRange(index, { ...range, from: from ?? '' })}
            />
            <TextInput
              path={`${at}.to`}
              label="To (HH:MM)"
              required
              inputMode="numeric"
              placeholder="17:00"
              value={range.to}
              onChange={(to) => setRange(index, { ...range, to: to ?? '' })}
            />
            {readOnly || open.length < 2 ? null : (
              <button
                type="button"
                className="secondary outline"
                onClick={() => setOpen(open.filter((_, i) => i !== index))}
              >
                Remove<span className="visually-hidden"> ({`open hours ${index + 1}`})</span>
              </button>
            )}
          </div>
        );
      })}
      {readOnly ? null : (
        <button
          type="button"
          className="secondary outline"
          onClick={() => setOpen([...open, { days: ['sat'], from: '10:00', to: '14:00' }])}
        >
          Add open hours
        </button>
      )}
      <h4>Holidays (closed all day)</h4>
      {holidays.length === 0 ? <p className="empty">No holidays.</p> : null}
      {holidays.map((day, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: holidays are edited in place; their inputs are controlled
        <div className="holiday" key={index}>
          <TextInput
            path={`${path}.holidays.${index}`}
            label={`Holiday ${index + 1}`}
            type="date"
            required
            value={day}
            onChange={(value) => setHolidays(holidays.map((d, i) => (i === index ? (value ?? '') : d)))}
          />
          {readOnly ? null : (
            <button
              type="button"
              className="secondary outline"
              onClick={() => setHolidays(holidays.filter((_, i) => i !== index))}
            >
              Remove<span className="visually-hidden"> ({`holiday ${index + 1}`})</span>
            </button>
          )}
        </div>
      ))}
      {readOnly ? null : (
        <button type="button" className="secondary outline" onClick={() => setHolidays([...holidays, ''])}>
          Add holiday
        </button>
      )}
      <NestedSteps
        path={`${path}.whenOpen`}
        label="When open"
        steps={(step.whenOpen as Step[]) ?? []}
        onChange={(steps) => onChange({ ...step, whenOpen: steps })}
      />
      <NestedSteps
        path={`${path}.whenClosed`}
        label="When closed"
        steps={(step.whenClosed as Step[]) ?? []}
        onChange={(steps) => onChange({ ...step, whenClosed: steps })}
      />
    </>
  );
}
