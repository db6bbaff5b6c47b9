// Phone normalisation (src/platform/phone.ts): the fast path for North American numbers must give exactly
// what libphonenumber-js gives, valid or not, in every region, for every area code and the shapes people
// write. Inputs are drawn from a seeded generator, so a failure names an input that fails again.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type CountryCode, parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Region } from '../src/platform/http/caller.ts';
import { normalisePhone } from '../src/platform/phone.ts';

const COUNTRY: Record<Region, CountryCode | undefined> = { us: 'US', ca: 'CA', eu: undefined };

/** What libphonenumber-js alone answers. */
function reference(input: string, region?: Region): string | undefined {
  const trimmed = input.trim();
  if (!trimmed || trimmed.length > 40) return undefined;
  const parsed = parsePhoneNumberFromString(trimmed, region && COUNTRY[region]);
  return parsed?.isValid() ? parsed.number : undefined;
}

/** A small seeded generator (mulberry32), so the inputs are the same on every run. */
function generator(seed: number) {
  let state = seed;
  return (below: number) => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (((t ^ (t >>> 14)) >>> 0) % below) as number;
  };
}

const SHAPES: ((area: string, exchange: string, line: string) => string)[] = [
  (a, e, l) => `+1${a}${e}${l}`,
  (a, e, l) => `${a}${e}${l}`,
  (a, e, l) => `(${a}) ${e}-${l}`,
  (a, e, l) => `${a}-${e}-${l}`,
  (a, e, l) => `${a}.${e}.${l}`,
  (a, e, l) => `+1 ${a} ${e} ${l}`,
  (a, e, l) => `+1 (${a}) ${e}-${l}`,
  (a, e, l) => `+1-${a}-${e}-${l}`,
  (a, e, l) => `  ${a} ${e} ${l} `,
  (a, e, l) => `(${a})${e}${l}`,
  (a, e, l) => `${a}))${e}  ${l}`,
  (a, e, l) => `+1((${a}${e}-.${l}`,
  // Shapes the fast path leaves to the library.
  (a, e, l) => `1${a}${e}${l}`,
  (a, e, l) => `+1${a}${e}${l}0`,
  (a, e, l) => `${a}\t${e}${l}`,
  (a, e, l) => `${a}${e}${l} ext 12`,
  (a, e, l) => `+1 ${a}${e}${l.slice(0, 3)}`,
];
const REGIONS: (Region | undefined)[] = ['us', 'ca', 'eu', undefined];

describe('phone normalisation', () => {
  test('agrees with libphonenumber-js for every North American area code, in every shape and region', () => {
    const random = generator(12);
    const digits = (count: number) => Array.from({ length: count }, () => random(10)).join('');
    let checked = 0;
    let valid = 0;
    for (let area = 200; area <= 999; area++) {
      // The 555 exchange, one that starts like each +1 country's leading digits, and random ones.
      for (const exchange of ['555', `5${digits(2)}`, digits(3), digits(3), digits(3), digits(3)]) {
        const line = digits(4);
        const shape = SHAPES[random(SHAPES.length)]!;
        const input = shape(String(area), exchange, line);
        for (const region of REGIONS) {
          const expected = reference(input, region);
          assert.equal(normalisePhone(input, region), expected, `${JSON.stringify(input)} in ${region}`);
          checked++;
          if (expected) valid++;
        }
      }
    }
    // The sample holds both answers in numbers, or it proves little.
    assert.ok(valid > checked / 5 && valid < checked, `${valid} valid of ${checked}`);
  });

  test('numbers outside North America still go through libphonenumber-js', () => {
    assert.equal(normalisePhone('+44 20 7946 0958'), '+442079460958');
    assert.equal(normalisePhone('+49 30 901820', 'eu'), '+4930901820');
    assert.equal(normalisePhone('020 7946 0958', 'eu'), undefined);
    assert.equal(normalisePhone('+1 202 555 01'), undefined);
    assert.equal(normalisePhone('2025550171', 'eu'), undefined);
    assert.equal(normalisePhone('2025550171', 'us'), '+12025550171');
  });
});
