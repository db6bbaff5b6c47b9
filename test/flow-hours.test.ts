// The `hours` step's clock (src/modules/voice/flow-hours.ts): opening ranges in an IANA time zone with its own
// daylight saving time, holidays in that zone's calendar, and ranges that run past midnight.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isOpen, type OpeningHours, wallClock } from '../src/modules/voice/flow-hours.ts';

const office: OpeningHours = {
  timezone: 'America/New_York',
  open: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '17:00' }],
  holidays: ['2026-12-24'],
};

describe('business hours', () => {
  test('the wall clock is the zone’s own, daylight saving time included', () => {
    // 14:30 UTC is 10:30 in New York in summer (EDT, -4) and 09:30 in winter (EST, -5).
    assert.deepEqual(wallClock(new Date('2026-07-01T14:30:00Z'), 'America/New_York'), {
      date: '2026-07-01',
      weekday: 'wed',
      minutes: 10 * 60 + 30,
    });
    assert.equal(wallClock(new Date('2026-12-02T14:30:00Z'), 'America/New_York').minutes, 9 * 60 + 30);
    // Late on Tuesday UTC is still Tuesday in New York, already Wednesday in Tokyo.
    assert.equal(wallClock(new Date('2026-12-01T23:30:00Z'), 'America/New_York').weekday, 'tue');
    assert.equal(wallClock(new Date('2026-12-01T23:30:00Z'), 'Asia/Tokyo').weekday, 'wed');
  });

  test('open from 09:00 up to but not at 17:00 on weekdays; closed at weekends', () => {
    assert.equal(isOpen(office, new Date('2026-12-02T13:59:00Z')), false); // Wed 08:59
    assert.equal(isOpen(office, new Date('2026-12-02T14:00:00Z')), true); // Wed 09:00
    assert.equal(isOpen(office, new Date('2026-12-02T21:59:00Z')), true); // Wed 16:59
    assert.equal(isOpen(office, new Date('2026-12-02T22:00:00Z')), false); // Wed 17:00
    assert.equal(isOpen(office, new Date('2026-12-05T15:00:00Z')), false); // Sat 10:00
  });

  test('a holiday closes its whole day in the zone’s calendar, not in UTC’s', () => {
    assert.equal(isOpen(office, new Date('2026-12-24T15:00:00Z')), false); // Thu 10:00, a holiday
    assert.equal(isOpen(office, new Date('2026-12-23T15:00:00Z')), true); // the day before
    assert.equal(isOpen(office, new Date('2026-12-25T15:00:00Z')), true); // the 25th is not listed
    // 03:00 UTC on the 24th is still the 23rd, 22:00, in New York: closed by the hour, not the holiday.
    assert.equal(wallClock(new Date('2026-12-24T03:00:00Z'), 'America/New_York').date, '2026-12-23');
  });

  test('a range past midnight covers the evening of its days and the next morning; 24:00 ends a day', () => {
    const night: OpeningHours = {
      timezone: 'UTC',
      open: [{ days: ['fri'], from: '22:00', to: '06:00' }],
    };
    assert.equal(isOpen(night, new Date('2026-12-04T23:00:00Z')), true); // Fri 23:00
    assert.equal(isOpen(night, new Date('2026-12-05T05:59:00Z')), true); // Sat 05:59
    assert.equal(isOpen(night, new Date('2026-12-05T06:00:00Z')), false); // Sat 06:00
    assert.equal(isOpen(night, new Date('2026-12-04T05:00:00Z')), false); // Fri 05:00: Thursday was closed
    const late: OpeningHours = { timezone: 'UTC', open: [{ days: ['mon'], from: '18:00', to: '24:00' }] };
    assert.equal(isOpen(late, new Date('2026-11-30T23:59:00Z')), true);
    assert.equal(isOpen(late, new Date('2026-12-01T00:00:00Z')), false);
  });
});
