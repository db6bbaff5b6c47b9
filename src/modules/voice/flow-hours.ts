// Whether a business is open now, by the `hours` step of a call flow (CONTRACT section 13): weekly opening
// ranges in an IANA time zone, and holidays (whole days, in that zone). The wall time is read with
// Intl.DateTimeFormat, so daylight saving time is the zone's own; a range whose `to` is before its `from`
// runs past midnight into the next day (a night shift, 22:00–06:00).

export type Weekday = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';

export interface OpeningHours {
  timezone: string;
  open: { days: Weekday[]; from: string; to: string }[];
  holidays?: string[];
}

const WEEKDAYS: Weekday[] = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/** The wall clock in `timezone` at `at`: its date (YYYY-MM-DD), weekday and minutes since midnight. */
export function wallClock(at: Date, timezone: string): { date: string; weekday: Weekday; minutes: number } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    weekday: 'short',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(at);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((each) => each.type === type)?.value ?? '';
  const weekday = part('weekday').slice(0, 3).toLowerCase() as Weekday;
  return {
    date: `${part('year')}-${part('month')}-${part('day')}`,
    weekday,
    minutes: Number(part('hour')) * 60 + Number(part('minute')),
  };
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** Whether the business is open at `at`. A holiday closes its whole day, a night range's morning included. */
export function isOpen(hours: OpeningHours, at: Date): boolean {
  const now = wallClock(at, hours.timezone);
  if (hours.holidays?.includes(now.date)) return false;
  const yesterday = WEEKDAYS[(WEEKDAYS.indexOf(now.weekday) + 6) % 7]!;
  return hours.open.some((range) => {
    const from = minutesOf(range.from);
    const to = minutesOf(range.to);
    if (from < to) return range.days.includes(now.weekday) && now.minutes >= from && now.minutes < to;
    // Past midnight: the evening of a listed day, or the morning after one.
    return (
      (range.days.includes(now.weekday) && now.minutes >= from) ||
      (range.days.includes(yesterday) && now.minutes < to)
    );
  });
}
