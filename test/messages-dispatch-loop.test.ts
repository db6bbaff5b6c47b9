// Dispatch under the real worker loop (JobQueue.start: NOTIFY wake-ups, a timer to the next paced slot,
// busy slots), not drain(): pacing per number stays exact (no message reaches the carrier before its slot,
// and a number's messages leave in slot order), and a burst on one number never holds back another number's
// message. Nothing here is timed: the app clock decides when each slot falls due, and the test moves it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, type Sender, send, sender } from './helpers/messaging.ts';

const BURST = 25;

describe('dispatch under the worker loop', () => {
  let t: TestApp;
  let acme: Sender;
  let second: string;
  before(async () => {
    t = await startTestApp();
    acme = await sender(t, {}, { type: 'toll_free' });
    second = freshNumber('800');
    const res = await t.admin('POST', `/organizations/${acme.id}/numbers`, {
      number: second,
      type: 'toll_free',
    });
    assert.equal(res.status, 201);
    t.ctx.jobs.start();
  });
  after(() => t.close());

  const dispatchOf = (ids: string[]) =>
    t.ctx.db.query<{ id: string; status: string; sent_at: Date | null; run_at: Date }>(
      `SELECT m.id, m.status, m.sent_at, j.run_at
         FROM messages m JOIN jobs j ON j.dedupe_key = 'dispatch:' || m.id
        WHERE m.id = ANY($1::text[]) ORDER BY j.run_at, m.id`,
      [ids],
    );
  /** Waits (in real time, bounded) until `done` holds; the worker runs on its own. */
  async function until(done: () => Promise<boolean>, what: string) {
    for (let waited = 0; waited < 30_000; waited += 20) {
      if (await done()) return;
      await sleep(20);
    }
    assert.fail(`timed out waiting until ${what}`);
  }

  test("a burst on one number: each message at its slot, in order; another number's message is not held back", async () => {
    // The clock is held from the start: had real time run while the burst was booked, a later slot could
    // come due and be claimed, then handed over after the clock was set back to the first slot, stamped
    // before its own slot (the check at the end caught it on a loaded machine).
    t.ctx.clock.freeze();
    const burst: string[] = [];
    for (let i = 0; i < BURST; i++) {
      const res = await send(t, acme, { from: acme.number, to: '+12025550142', message: `burst ${i}` });
      assert.equal(res.status, 202, res.text);
      burst.push(res.body.data.id);
    }
    const slots = await dispatchOf(burst);
    for (let i = 1; i < slots.length; i++) {
      assert.ok(slots[i]!.run_at.getTime() - slots[i - 1]!.run_at.getTime() >= 334, 'slots one pace apart');
    }

    // At the first slot (where the clock already is, or just before it), held there: the burst's later slots
    // (seconds apart) lie ahead, and real time passing on a slow machine cannot bring them due.
    if (slots[0]!.run_at.getTime() > t.ctx.clock.nowMs()) t.ctx.clock.set(slots[0]!.run_at);
    // The other number's message is due at once and leaves while the burst's later slots are still ahead.
    const other = await send(t, acme, { from: second, to: '+12025550143', message: 'not held back' });
    assert.equal(other.status, 202, other.text);
    await until(
      async () => (await dispatchOf([other.body.data.id]))[0]!.status === 'sent',
      'the other is sent',
    );
    const waiting = (await dispatchOf(burst)).filter((row) => row.status === 'queued');
    for (const row of waiting)
      assert.ok(row.run_at.getTime() > t.ctx.clock.nowMs(), 'queued ones are not due');
    // The last three slots lie seconds after the first: the other number's message did not wait for them.
    for (const slot of slots.slice(BURST - 3)) {
      assert.ok(
        waiting.some((row) => row.id === slot.id),
        'the burst is still under way',
      );
    }

    // Moving the clock to each slot in turn releases that slot's message and no later one; each step waits
    // for everything released so far before releasing the next slot.
    for (const slot of slots.slice(BURST - 3)) {
      t.ctx.clock.set(slot.run_at);
      await until(async () => {
        const rows = await dispatchOf(burst);
        return rows.every((row) => row.run_at.getTime() > slot.run_at.getTime() || row.status === 'sent');
      }, `every message up to the slot ${slot.run_at.toISOString()} is sent`);
      const later = (await dispatchOf(burst)).filter((row) => row.run_at.getTime() > slot.run_at.getTime());
      for (const row of later) assert.equal(row.status, 'queued', 'a later slot waits for its time');
    }

    const sent = await dispatchOf(burst);
    for (const row of sent) {
      assert.equal(row.status, 'sent');
      assert.ok(row.sent_at!.getTime() >= row.run_at.getTime(), 'never handed over before its slot');
    }
    // In slot order: each slot released on its own reached the carrier after every slot booked before it.
    // (The first move released every slot up to its own at once: those go out side by side.)
    for (let i = BURST - 2; i < sent.length; i++) {
      for (const earlier of sent.slice(0, i)) {
        assert.ok(sent[i]!.sent_at!.getTime() >= earlier.sent_at!.getTime(), 'in slot order');
      }
    }
  });
});
