// The queue runtime's pure rules, without a database or a clock: the life of a caller's wait (every event in
// every state, allowed or refused, and what each event may leave), a member's state from the records' facts
// (which fact wins, wrap-up's end, offline only where phones register over SIP), and the hold sound.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { holdSound } from '../src/modules/voice/flow-queue.ts';
import {
  ENTRY_STATES,
  type EntryEvent,
  entryMove,
  isInQueue,
  nextEntryState,
} from '../src/modules/voice/queues/entry-states.ts';
import { memberState } from '../src/modules/voice/queues/member-states.ts';

const EVENTS: EntryEvent[] = ['offer', 'unanswered', 'answer', 'hangup', 'timeout'];

describe('queue waits and member states', () => {
  test('a wait moves only as its table says; an ended wait moves no more', () => {
    const allowed = Object.fromEntries(
      ENTRY_STATES.map((state) => [
        state,
        Object.fromEntries(
          EVENTS.flatMap((event) => {
            const next = nextEntryState(state, event);
            return next ? [[event, next]] : [];
          }),
        ),
      ]),
    );
    assert.deepEqual(allowed, {
      waiting: { offer: 'offered', hangup: 'abandoned', timeout: 'timed_out' },
      offered: { unanswered: 'waiting', answer: 'answered', hangup: 'abandoned', timeout: 'timed_out' },
      answered: {},
      abandoned: {},
      timed_out: {},
    });
    assert.deepEqual(entryMove('hangup'), { from: ['waiting', 'offered'], to: 'abandoned' });
    assert.deepEqual(entryMove('answer'), { from: ['offered'], to: 'answered' });
    assert.deepEqual(entryMove('offer'), { from: ['waiting'], to: 'offered' });
    assert.deepEqual(
      ENTRY_STATES.filter((state) => isInQueue(state)),
      ['waiting', 'offered'],
    );
  });

  test("a member's state: on a call, then ringing, then wrap-up, then offline (SIP only), else available", () => {
    const now = new Date('2026-06-10T12:00:00Z');
    const facts = {
      extension_id: 'ext_a',
      ringing: false,
      on_call: false,
      wrap_up_until: null as Date | null,
      registered: false,
    };
    assert.equal(memberState(facts, now, 'simulated'), 'available');
    assert.equal(memberState(facts, now, 'sip'), 'offline');
    assert.equal(memberState({ ...facts, registered: true }, now, 'sip'), 'available');
    const later = new Date(now.getTime() + 1000);
    assert.equal(memberState({ ...facts, wrap_up_until: later }, now, 'simulated'), 'wrap_up');
    assert.equal(memberState({ ...facts, wrap_up_until: now }, now, 'simulated'), 'available', 'ended');
    assert.equal(memberState({ ...facts, wrap_up_until: later, ringing: true }, now, 'sip'), 'ringing');
    assert.equal(memberState({ ...facts, ringing: true, on_call: true }, now, 'sip'), 'on_call');
  });

  test('the hold sound: the audio looped whole as often as it fits, at least once; else silence', () => {
    const audio = Int16Array.from({ length: 8000 * 7 }, (_, index) => (index % 100) + 1);
    const sound = holdSound(audio, 30);
    assert.equal(sound.length, audio.length * 4);
    assert.deepEqual(sound.subarray(audio.length, audio.length + 5), audio.subarray(0, 5));
    assert.equal(holdSound(audio, 3).length, audio.length, 'a long audio plays whole');
    const quiet = holdSound(undefined, 2.5);
    assert.equal(quiet.length, 20000);
    assert.ok(quiet.every((sample) => sample === 0));
    assert.equal(holdSound(audio, 0).length, 0);
  });
});
