// Jobs enqueued by a statement of their own are announced after it (src/platform/jobs/announcer.ts): the
// enqueuing process's worker at once, the others by a NOTIFY that many announcements share: the first of a
// quiet queue at once, the ones after it together at the end of the interval, what is owed sent when the
// queue stops. The workers here never poll within the test, so a job they run was found by a wake-up. No
// duration is asserted: waits are bounded loops on the outcome.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Clock } from '../src/platform/clock.ts';
import { JobAnnouncer } from '../src/platform/jobs/announcer.ts';
import { JobQueue } from '../src/platform/jobs.ts';
import { freshDatabase } from './helpers/app.ts';

const NEVER_POLL = { pollIntervalMs: 60_000 };
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await pause(5);
  }
}

describe('JobAnnouncer', () => {
  function announcer(intervalMs: number) {
    const woken: string[] = [];
    const notified: string[] = [];
    const subject = new JobAnnouncer({
      wakeLocal: (queue) => woken.push(queue),
      notify: async (queue) => {
        notified.push(queue);
      },
      onError: (error) => assert.fail(String(error)),
      intervalMs,
    });
    return { subject, woken, notified };
  }

  test('the first announcement of a quiet queue notifies at once; the next ones share one at the interval end', async () => {
    const { subject, woken, notified } = announcer(40);
    subject.announce('a');
    assert.deepEqual(notified, ['a'], 'at once');
    for (let i = 0; i < 20; i++) subject.announce('a');
    subject.announce('b');
    assert.deepEqual(notified, ['a', 'b'], 'another queue is its own');
    assert.equal(woken.length, 22, 'the local worker is woken by every announcement');
    await waitFor(() => notified.length === 3);
    assert.deepEqual(notified, ['a', 'b', 'a'], 'twenty announcements of a, one NOTIFY');
    // Quiet for an interval: the next announcement is at once again.
    await pause(100);
    assert.equal(notified.length, 3);
    subject.announce('a');
    assert.deepEqual(notified, ['a', 'b', 'a', 'a']);
    await subject.flush();
  });

  test('flush sends what is owed at once, and nothing more after it', async () => {
    const { subject, notified } = announcer(60_000);
    subject.announce('a');
    subject.announce('a');
    subject.announce('b');
    await subject.flush();
    assert.deepEqual(notified, ['a', 'b', 'a']);
    subject.announce('a');
    assert.deepEqual(notified, ['a', 'b', 'a', 'a'], 'a quiet queue again after the flush');
    await subject.flush();
  });

  test('a NOTIFY that fails is reported, and announcing goes on', async () => {
    const errors: unknown[] = [];
    const subject = new JobAnnouncer({
      wakeLocal: () => {},
      notify: async () => {
        throw new Error('connection lost');
      },
      onError: (error) => errors.push(error),
      intervalMs: 5,
    });
    subject.announce('a');
    await subject.flush();
    assert.equal(errors.length, 1);
  });
});

describe('jobs enqueued by a statement of their own', () => {
  test('another instance runs them without polling, each once, though they share few NOTIFYs', async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    // The enqueuer runs no worker; the worker is another instance (its own pool on PostgreSQL).
    const enqueuer = new JobQueue(database.db, clock, { workerId: 'enqueuer', ...NEVER_POLL });
    const workerDb = database.connectAgain();
    const worker = new JobQueue(workerDb, clock, { workerId: 'worker', ...NEVER_POLL });
    const ran: number[] = [];
    worker.register<{ n: number }>('test.announced', async ({ n }) => {
      ran.push(n);
    });
    const notifications: (string | undefined)[] = [];
    const unlisten = await database.db.listen?.({
      channel: 'jobs',
      onNotify: (queue) => notifications.push(queue),
    });
    try {
      worker.start();
      await pause(200);
      await enqueuer.enqueue(database.db, 'test.announced', { n: 0 });
      await waitFor(() => ran.length === 1);
      // A burst, one statement each, single and selected.
      for (let n = 1; n <= 50; n++) {
        if (n % 2) await enqueuer.enqueue(database.db, 'test.announced', { n });
        else
          await enqueuer.enqueueSelected(database.db, 'test.announced', {
            rows: `SELECT jsonb_build_object('n', $1::int) AS payload, NULL::text AS concurrency_key`,
            params: [n],
          });
      }
      await waitFor(() => ran.length === 51);
      assert.deepEqual(
        [...ran].sort((a, b) => a - b),
        Array.from({ length: 51 }, (_, n) => n),
      );
      // How many NOTIFYs the 51 shared depends on how fast they came (the unit tests above pin the rule).
      const announced = notifications.filter((queue) => queue === 'test.announced').length;
      assert.ok(announced >= 1 && announced <= 51, `${announced} NOTIFYs for 51 enqueues`);
      console.log(`# ${announced} NOTIFYs for 51 enqueues`);
    } finally {
      await unlisten?.();
      await worker.stop();
      await enqueuer.stop();
      await database.drop();
    }
  });
});
