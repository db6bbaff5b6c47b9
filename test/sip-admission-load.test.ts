// The rule that sheds new calls under overload (src/modules/voice/sip/admission-load.ts; docs/voice.md "Real SIP:
// overload"), on a clock the test moves: a newcomer's expected wait is the admissions ahead of it times the
// interval at which admissions complete while some are in flight, and past the budget it is refused with a
// Retry-After of the time to drain back within it (1 to 5 s).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ADMISSION_WAIT_BUDGET_MS, AdmissionLoad } from '../src/modules/voice/sip/admission-load.ts';

function withClock() {
  const clock = { ms: 0 };
  return { clock, load: new AdmissionLoad(() => clock.ms) };
}

describe('admission load', () => {
  test('a quiet line is never refused: idle time between calls is not counted as admission time', () => {
    const { clock, load } = withClock();
    for (let call = 0; call < 100; call++) {
      clock.ms += 1_000; // one call a second
      assert.equal(load.refusal(), undefined);
      const admitted = load.begin();
      clock.ms += 5; // admitted in 5 ms
      admitted();
    }
    assert.equal(load.expectedWait(), 0, 'nothing in flight');
    // A burst at once on this line, as many as 5 ms each fit in the budget: none refused.
    const burst = Array.from({ length: ADMISSION_WAIT_BUDGET_MS / 5 }, () => {
      assert.equal(load.refusal(), undefined);
      return load.begin();
    });
    for (const admitted of burst) admitted();
    assert.equal(load.refused, 0);
  });

  test('a queue that would make a newcomer wait past the budget refuses it, with a Retry-After of 1 to 5 s', () => {
    const { clock, load } = withClock();
    // Admissions complete one every 10 ms while 300 are queued: 3 s for the next one, 2 s past the budget.
    const queued = Array.from({ length: 300 }, () => load.begin());
    for (let i = 0; i < 40; i++) {
      clock.ms += 10;
      queued.shift()!();
      queued.push(load.begin());
    }
    assert.equal(load.expectedWait(), 3_000);
    assert.equal(ADMISSION_WAIT_BUDGET_MS, 1_000);
    assert.equal(load.refusal(), 2);
    // Drained to 40 in flight: 400 ms, within the budget again.
    while (queued.length > 40) {
      clock.ms += 10;
      queued.shift()!();
    }
    assert.ok(load.expectedWait() <= ADMISSION_WAIT_BUDGET_MS);
    assert.equal(load.refusal(), undefined);
    // A far deeper queue is still told 5 s at most: a trunk keeps away from us for as long as we say.
    for (let i = 0; i < 5_000; i++) queued.push(load.begin());
    assert.equal(load.refusal(), 5);
    assert.equal(load.refused, 2);
  });

  test('the end of an admission counts once, however often it is reported', () => {
    const { clock, load } = withClock();
    const first = load.begin();
    load.begin();
    clock.ms += 20;
    first();
    first();
    assert.equal(load.expectedWait(), 20, 'one still in flight, at one 20 ms interval');
  });
});
