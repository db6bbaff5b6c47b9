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
