// Time zones: IANA names checked against the runtime's own tz database, the zones a phone number belongs to
// (Google libphonenumber's prefix map, vendored as phone-timezones.json), and local daily windows ("08:00" to
// "21:00") turned into the instants they open.
import { createRequire } from 'node:module';
import { ApiError } from './errors.ts';

const require = createRequire(import.meta.url);
const PHONE_ZONES = require('./phone-timezones.json') as {
  zones: string[];
  prefixes: Record<string, number>;
};

// A time zone is valid when the runtime's Intl knows it: every name of Intl.supportedValuesOf('timeZone') and
// the aliases Intl.DateTimeFormat accepts besides (UTC, Etc/UTC, US/Eastern, Asia/Kolkata, any case), so
// whatever is stored, quiet hours can compute with. Only IANA-shaped names: newer Nodes also accept UTC offsets
// (`+05:00`), which are no IANA name and would make the rule depend on the Node version.
const IANA_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]*$/;
export const MAX_TIME_ZONE_NAME = 64;
/** Resolving a name costs ~60 µs (a formatter each); an import or a campaign repeats a few names many times. */
const resolved = new Map<string, string | undefined>();
const MAX_RESOLVED = 5_000;

/**
 * The IANA name Intl knows `name` by (`US/Eastern` is `America/New_York`; aliases of one zone are one value),
 * or undefined when it is not a time zone.
 */
export function canonicalTimeZone(name: string): string | undefined {
  if (resolved.has(name)) return resolved.get(name);
  let canonical: string | undefined;
  if (name.length <= MAX_TIME_ZONE_NAME && IANA_NAME.test(name)) {
    try {
      canonical = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    } catch {
      canonical = undefined; // RangeError: not a time zone Intl knows
    }
  }
  // Bounded: names come from clients, and any string may be tried.
  if (resolved.size < MAX_RESOLVED) resolved.set(name, canonical);
  return canonical;
}

/** More zones than this for one number means the number says nothing useful (toll-free, non-geographic). */
const MAX_ZONES_PER_NUMBER = 4;

/**
 * The zones an E.164 number's prefix belongs to, when few enough to be meaningful (an area code that spans two
 * zones gives both); undefined for numbers whose prefix covers a whole continent or is unknown.
 */
export function phoneTimeZones(e164: string): string[] | undefined {
  const digits = e164.replace(/^\+/, '');
  for (let length = Math.min(digits.length, 12); length > 0; length--) {
    const index = PHONE_ZONES.prefixes[digits.slice(0, length)];
    if (index === undefined) continue;
    const zones = PHONE_ZONES.zones[index]!.split('&').filter((zone) => canonicalTimeZone(zone));
    return zones.length > 0 && zones.length <= MAX_ZONES_PER_NUMBER ? zones : undefined;
  }
  return undefined;
}

/** A daily local window, minutes after midnight; `end` before `start` spans midnight. */
export interface DailyWindow {
  start: number;
  end: number;
}

/** "HH:MM" (00:00–23:59) as minutes after midnight, or undefined. */
export function parseClock(value: string): number | undefined {
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(value);
  return match ? Number(match[1]) * 60 + Number(match[2]) : undefined;
}

/**
 * Quiet hours as a send or a campaign takes them (`{start, end}`, HH:MM) as a window; none for null or
 * undefined. A time that is not HH:MM, or a start equal to its end, is a 400.
 */
export function quietHoursWindow(
  hours: { start: string; end: string } | null | undefined,
): DailyWindow | undefined {
  if (!hours) return undefined;
  const start = parseClock(hours.start);
  const end = parseClock(hours.end);
  if (start === undefined || end === undefined) {
    throw ApiError.badRequest('quietHours.start and quietHours.end must be HH:MM');
  }
  if (start === end) {
    throw ApiError.badRequest('quietHours.start and quietHours.end must differ (null turns quiet hours off)');
  }
  return { start, end };
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(zone: string): Intl.DateTimeFormat {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, format);
  }
  return format;
}

/** The wall-clock fields of `at` in `zone`. */
function wallClock(at: Date, zone: string) {
  const parts: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(at)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return {
    year: parts.year!,
    month: parts.month!,
    day: parts.day!,
    minutes: parts.hour! * 60 + parts.minute!,
    seconds: parts.second!,
  };
}

function isOpen(minutes: number, window: DailyWindow): boolean {
  return window.start < window.end
    ? minutes >= window.start && minutes < window.end
    : minutes >= window.start || minutes < window.end;
}

/** The instant at which `zone`'s wall clock shows `minutes` on the local date `year-month-day` (DST-safe). */
function instantOf(year: number, month: number, day: number, minutes: number, zone: string): Date {
  const wanted = Date.UTC(year, month - 1, day, Math.floor(minutes / 60), minutes % 60);
  let guess = wanted;
  // The zone's offset at the guess moves the guess; twice settles it across a DST change.
  for (let i = 0; i < 3; i++) {
    const seen = wallClock(new Date(guess), zone);
    const seenUtc = Date.UTC(seen.year, seen.month - 1, seen.day, 0, seen.minutes, seen.seconds);
    const correction = wanted - seenUtc;
    if (correction === 0) break;
    guess += correction;
  }
  return new Date(guess);
}

/** The first instant at or after `at` when `window` is open in `zone`. */
export function nextOpening(at: Date, zone: string, window: DailyWindow): Date {
  const local = wallClock(at, zone);
  if (isOpen(local.minutes, window)) return at;
  // Closed: it opens at `start` today if that is still ahead, else tomorrow.
  const dayOffset = local.minutes < window.start ? 0 : 1;
  const date = new Date(Date.UTC(local.year, local.month - 1, local.day + dayOffset));
  const opening = instantOf(
    date.getUTCFullYear(),
    date.getUTCMonth() + 1,
    date.getUTCDate(),
    window.start,
    zone,
  );
  // A start that falls in a DST gap lands a little later; never earlier than asked.
  return opening > at ? opening : new Date(at.getTime() + 60_000);
}

/**
 * The first instant at or after `at` when `window` is open in every one of `zones` (a number whose area spans
 * two zones must be inside both windows), or undefined when the zones' windows never meet.
 */
export function nextOpeningInAll(at: Date, zones: readonly string[], window: DailyWindow): Date | undefined {
  let candidate = at;
  for (let round = 0; round < 8; round++) {
    let latest = candidate;
    for (const zone of zones) {
      const opens = nextOpening(candidate, zone, window);
      if (opens > latest) latest = opens;
    }
    if (latest.getTime() === candidate.getTime()) return candidate;
    candidate = latest;
  }
  return undefined;
}

/**
 * When `window` is open for a recipient at or after `at`: in its own zone when known (a contact's time zone),
 * else in its number's zones, else in `fallbackZone` (a campaign's zone; UTC for a single message).
 */
export function recipientOpening(
  at: Date,
  recipient: { timezone: string | null | undefined; phone: string },
  fallbackZone: string,
  window: DailyWindow,
): Date {
  const zones = recipient.timezone ? [recipient.timezone] : phoneTimeZones(recipient.phone);
  if (zones) {
    const opens = nextOpeningInAll(at, zones, window);
    if (opens) return opens;
  }
  return nextOpening(at, fallbackZone, window);
}
