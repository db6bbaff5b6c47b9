// Instants and time windows a client sends as query parameters (`since`, `until`): parsed once, refused with
// a 400 that names the parameter, and for reports a window with a default length and a longest one.
import { ApiError } from './errors.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/** An ISO 8601 instant, or undefined when absent or empty; anything else is a 400 naming `name`. */
export function parseInstant(value: string | undefined, name: string): Date | undefined {
  if (value === undefined || value === '') return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw ApiError.badRequest(`${name} must be an ISO 8601 date-time`);
  return date;
}

/**
 * The window [since, until) a report covers: `until` defaults to now, `since` to `defaultDays` before it; since
 * after until, or a window longer than `maxDays`, is a 400.
 */
export function timeWindow(
  query: { since?: string; until?: string },
  now: Date,
  rules: { defaultDays: number; maxDays: number },
): { since: Date; until: Date } {
  const until = parseInstant(query.until, 'until') ?? now;
  const since = parseInstant(query.since, 'since') ?? new Date(until.getTime() - rules.defaultDays * DAY_MS);
  if (since.getTime() >= until.getTime()) throw ApiError.badRequest('since must be before until');
  if (until.getTime() - since.getTime() > rules.maxDays * DAY_MS) {
    throw ApiError.badRequest(`The window from since to until is at most ${rules.maxDays} days`);
  }
  return { since, until };
}

const HOUR_MS = 60 * 60 * 1000;

/**
 * Hour-long buckets over [since, until), the first starting at `since` (so a client that sends the start of one
 * of its own hours gets buckets on its own clock, whatever its offset from UTC), the last cut at `until`. Each
 * bucket starts with the counts of `empty()`; a store puts a row in the bucket hourIndexSql computes.
 */
export function hourlyBuckets<Counts extends Record<string, number>>(
  window: { since: Date; until: Date },
  empty: () => Counts,
): (Counts & { start: string })[] {
  const count = Math.ceil((window.until.getTime() - window.since.getTime()) / HOUR_MS);
  return Array.from({ length: count }, (_, index) => ({
    start: new Date(window.since.getTime() + index * HOUR_MS).toISOString(),
    ...empty(),
  }));
}

/** The SQL of a row's bucket for hourlyBuckets, `at` a timestamptz column and `since` its parameter. */
export const hourIndexSql = (at: string, since: string) =>
  `floor(extract(epoch FROM (${at} - ${since}::timestamptz)) / 3600)::int`;
