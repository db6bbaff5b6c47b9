// Concurrency groups in the job queue (issue 12: one slow receiver cannot starve the others). In a queue with
// `perKeyConcurrency`, no more than that many jobs of one key run at once, counted across every worker on the
// database; a claim takes no more of a key than its room; a long run of one key's jobs at the head of the queue
// does not hide the jobs of other keys behind it; a key's job whose worker died stops counting once its lease
// runs out. Nothing here asserts a duration: waits are bounded loops on the outcome.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Clock } from '../src/platform/clock.ts';
import type { Database } from '../src/platform/db/index.ts';
import { JobQueue } from '../src/platform/jobs.ts';
import { freshDatabase } from './helpers/app.ts';

const NEVER_POLL = { pollIntervalMs: 60_000 };

async function waitFor(condition: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function completed(db: Database, queue: string): Promise<number> {
  const [row] = await db.query<{ count: number }>(
    "SELECT count(*)::int AS count FROM jobs WHERE queue = $1 AND status = 'completed'",
    [queue],
  );
  return row!.count;
}

/** Jobs running now and the most at once, per key, across every worker of the test. */
class Tracker {
  readonly running = new Map<string, number>();
  readonly most = new Map<string, number>();
  readonly runs = new Map<number, number>();

  start(key: string, n: number): void {
    const now = (this.running.get(key) ?? 0) + 1;
    this.running.set(key, now);
    this.most.set(key, Math.max(this.most.get(key) ?? 0, now));
    this.runs.set(n, (this.runs.get(n) ?? 0) + 1);
  }

  end(key: string): void {
    this.running.set(key, this.running.get(key)! - 1);
  }
}

describe('concurrency keys', () => {
  test("a key's cap holds across two workers on one database; every job runs once", async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    // On PostgreSQL each worker has its own pool (two instances); PGlite is one handle.
    const handles = [database.db, database.connectAgain()];
    const workers = handles.map(
      (db, index) => new JobQueue(db, clock, { workerId: `worker-${index}`, concurrency: 8, ...NEVER_POLL }),
    );
    const tracker = new Tracker();
    const CAP = 3;
    try {
      for (const worker of workers) {
        worker.register<{ n: number; key: string }>(
          'test.keyed',
          async ({ n, key }) => {
            tracker.start(key, n);
            // Long enough that both workers' claims overlap the jobs of every key.
            await pause(key === 'slow' ? 20 : 2);
            tracker.end(key);
          },
          { perKeyConcurrency: CAP },
        );
      }
      const keys = ['slow', 'a', 'b', 'c'];
      await database.db.transaction(async (tx) => {
        for (let n = 0; n < 160; n++) {
          const key = keys[n % keys.length]!;
          await workers[0]!.enqueue(tx, 'test.keyed', { n, key }, { concurrencyKey: key });
        }
      });
      for (const worker of workers) worker.start();
      await waitFor(async () => (await completed(database.db, 'test.keyed')) === 160, 120_000);
      await Promise.all(workers.map((worker) => worker.stop()));

      for (const key of keys) {
        const most = tracker.most.get(key)!;
        assert.ok(most <= CAP, `key ${key} had ${most} jobs running at once (cap ${CAP})`);
      }
      assert.equal(tracker.most.get('slow'), CAP, 'the slow key used its whole room');
      assert.equal(tracker.runs.size, 160);
      for (const [n, count] of tracker.runs) assert.equal(count, 1, `job ${n} ran ${count} times`);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
      await database.drop();
    }
  });

  test('a claim takes no more of a key than its room; jobs without a key are not limited', async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    const worker = new JobQueue(database.db, clock, { workerId: 'room', ...NEVER_POLL });
    const ran: string[] = [];
    worker.register<{ key: string | null }>(
      'test.room',
      async ({ key }) => {
        ran.push(key ?? 'none');
      },
      { perKeyConcurrency: 2 },
    );
    try {
      for (let n = 0; n < 5; n++) {
        await worker.enqueue(database.db, 'test.room', { key: 'k' }, { concurrencyKey: 'k' });
        await worker.enqueue(database.db, 'test.room', { key: null });
      }
      // One claim of 16: two of `k` (its room), and every job without a key.
      assert.equal(await worker.runDue(16), 7);
      assert.deepEqual(ran.filter((key) => key === 'k').length, 2);
      assert.deepEqual(ran.filter((key) => key === 'none').length, 5);
      assert.equal(await worker.drain(), 3);
      assert.equal(await completed(database.db, 'test.room'), 10);
      await assert.rejects(
        worker.enqueue(database.db, 'test.room', {}, { concurrencyKey: '' }),
        /must not be empty/,
      );
    } finally {
      await database.drop();
    }
  });

  test("a long run of one key's jobs at the head does not hide the other keys' jobs", async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    const worker = new JobQueue(database.db, clock, { workerId: 'head', concurrency: 6, ...NEVER_POLL });
    const tracker = new Tracker();
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    worker.register<{ n: number; key: string }>(
      'test.head',
      async ({ n, key }) => {
        tracker.start(key, n);
        // The slow key's jobs hang (a receiver that holds requests open) until the test lets them go.
        if (key === 'slow') await released;
        tracker.end(key);
      },
      { perKeyConcurrency: 2 },
    );
    try {
      // 400 of the slow key first, far more than a claim reads of the head, then 30 of 10 other keys: every
      // other key's job is behind the whole slow run.
      await database.db.transaction(async (tx) => {
        for (let n = 0; n < 400; n++) {
          await worker.enqueue(tx, 'test.head', { n, key: 'slow' }, { concurrencyKey: 'slow' });
        }
      });
      clock.advance(1);
      await database.db.transaction(async (tx) => {
        for (let n = 400; n < 430; n++) {
          const key = `fast-${n % 10}`;
          await worker.enqueue(tx, 'test.head', { n, key }, { concurrencyKey: key });
        }
      });
      worker.start();
      await waitFor(async () => (await completed(database.db, 'test.head')) === 30);
      assert.equal(tracker.running.get('slow'), 2, 'the slow key holds its two slots, no more');
      assert.equal(tracker.most.get('slow'), 2);

      release();
      await waitFor(async () => (await completed(database.db, 'test.head')) === 430, 60_000);
      assert.equal(tracker.most.get('slow'), 2);
      for (const [n, count] of tracker.runs) assert.equal(count, 1, `job ${n} ran ${count} times`);
    } finally {
      release();
      await worker.stop();
      await database.drop();
    }
  });

  test("a key's job whose worker died stops counting when its lease runs out", async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    const doomed = new JobQueue(database.db, clock, { workerId: 'doomed', ...NEVER_POLL });
    const rescuer = new JobQueue(database.db, clock, { workerId: 'rescuer', ...NEVER_POLL });
    const ran: number[] = [];
    // The doomed worker claims and never finishes (as if its process had died with the job in hand).
    doomed.register('test.lease', () => new Promise<void>(() => {}), {
      perKeyConcurrency: 1,
      leaseSeconds: 60,
    });
    rescuer.register<{ n: number }>(
      'test.lease',
      async ({ n }) => {
        ran.push(n);
      },
      { perKeyConcurrency: 1, leaseSeconds: 60 },
    );
    try {
      await rescuer.enqueue(database.db, 'test.lease', { n: 1 }, { concurrencyKey: 'k' });
      await rescuer.enqueue(database.db, 'test.lease', { n: 2 }, { concurrencyKey: 'k' });
      void doomed.runDue(1);
      await waitFor(async () => {
        const [row] = await database.db.query<{ count: number }>(
          "SELECT count(*)::int AS count FROM jobs WHERE status = 'running'",
        );
        return row!.count === 1;
      });
      assert.equal(await rescuer.runDue(4), 0, 'the key is at its cap while the lease holds');
      clock.advance(61);
      assert.equal(await rescuer.drain(), 2, 'the dead lease frees the key: both jobs run');
      assert.deepEqual(ran.sort(), [1, 2]);
    } finally {
      await database.drop();
    }
  });
});
