// The twelve keys of a phone. In a call each press is sent as a telephone-event (RFC 4733); in the dialer it
// types the digit.

const KEYS: [string, string][] = [
  ['1', ''],
  ['2', 'ABC'],
  ['3', 'DEF'],
  ['4', 'GHI'],
  ['5', 'JKL'],
  ['6', 'MNO'],
  ['7', 'PQRS'],
  ['8', 'TUV'],
  ['9', 'WXYZ'],
  ['*', ''],
  ['0', '+'],
  ['#', ''],
];

export function Keypad({ label, onKey }: { label: string; onKey: (key: string) => void }) {
  return (
    <fieldset className="phone-keypad">
      <legend className="visually-hidden">{label}</legend>
      {KEYS.map(([key, letters]) => (
        <button
          key={key}
          type="button"
          className="secondary outline"
          aria-label={key === '*' ? 'Star' : key === '#' ? 'Pound' : key}
          onClick={() => onKey(key)}
        >
          {key}
          {letters ? (
            <small className="phone-key-letters" aria-hidden="true">
              {letters}
            </small>
          ) : null}
        </button>
      ))}
    </fieldset>
  );
}
