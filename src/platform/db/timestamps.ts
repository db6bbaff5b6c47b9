// Reading `timestamptz` values from PostgreSQL quickly. node-postgres parses each one with postgres-date, three
// regular expressions and a string split per value; a page of 100 messages carries about 500 of them, and that
// parse was a tenth of the page's CPU (docs/performance.md). A server whose session time zone is UTC (ours and
// most) writes them in one shape, `YYYY-MM-DD HH:MM:SS[.ffffff]+00`, which is read here from its character
// codes. Anything else (another offset, BC, a year before 1000 or after 9999, infinity) goes to the general
// parser, so every value reads as before: test/db-timestamps.test.ts compares the two on both.
import pg from 'pg';

const ZERO = 48;

/** The digits of `text` from `start` to `end` as a number, or -1 if one of them is not a digit. */
function digits(text: string, start: number, end: number): number {
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = text.charCodeAt(i) - ZERO;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/**
 * A UTC timestamp in PostgreSQL's ISO output as a Date (milliseconds, the rest of the fraction dropped as
 * postgres-date drops it), or undefined when `text` is not in that exact shape.
 */
export function parseUtcTimestamp(text: string): Date | undefined {
  const length = text.length;
  // The shortest is 22 characters (no fraction), the longest 29 (six fraction digits).
  if (length < 22 || length > 29) return undefined;
  if (
    text.charCodeAt(4) !== 45 || // -
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 32 || // space
    text.charCodeAt(13) !== 58 || // :
    text.charCodeAt(16) !== 58 ||
    text.charCodeAt(length - 3) !== 43 || // + of +00
    text.charCodeAt(length - 2) !== ZERO ||
    text.charCodeAt(length - 1) !== ZERO
  ) {
    return undefined;
  }
  let milliseconds = 0;
  if (length > 22) {
    // A fraction: a dot and one to six digits; the first three are the milliseconds.
    if (text.charCodeAt(19) !== 46 || length === 23) return undefined;
    const fraction = digits(text, 20, length - 3);
    if (fraction < 0) return undefined;
    const places = length - 3 - 20;
    milliseconds = places >= 3 ? Math.floor(fraction / 10 ** (places - 3)) : fraction * 10 ** (3 - places);
  }
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 7);
  const day = digits(text, 8, 10);
  const hour = digits(text, 11, 13);
  const minute = digits(text, 14, 16);
  const second = digits(text, 17, 19);
  // Years below 1000 would be read as 1900 and later by Date.UTC; the general parser handles them.
  if (year < 1000 || month < 1 || day < 1 || hour < 0 || minute < 0 || second < 0) return undefined;
  return new Date(Date.UTC(year, month - 1, day, hour, minute, second, milliseconds));
}

const TIMESTAMPTZ_OID = 1184;

/** node-postgres's own parser of `timestamptz` text (postgres-date), as it was before ours was installed. */
export const generalTimestampParser = pg.types.getTypeParser(TIMESTAMPTZ_OID) as (text: string) => unknown;

/** Reads `timestamptz` text with the fast reading above, else the general parser; node-postgres's parser. */
export function readTimestamp(text: string): unknown {
  return parseUtcTimestamp(text) ?? generalTimestampParser(text);
}

export function installTimestampParser(): void {
  pg.types.setTypeParser(TIMESTAMPTZ_OID, readTimestamp);
}
