// What the job queue's speed must not break (issue: throughput). Two workers on one database share 4,000
// jobs and each job runs exactly once; a worker killed holding a claimed batch loses it to another; an
// idle worker is woken by the enqueue's notification and by the next job falling due, not by its poll
// (every worker here polls once a minute, far beyond any wait); a queue's own limit holds. Nothing here
// asserts a duration: waits are bounded loops on the outcome.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { Clock } from '../src/platform/clock.ts';
import type { Database } from '../src/platform/db/index.ts';
import { JobQueue, RetryAt } from '../src/platform/jobs.ts';
import { freshDatabase } from './helpers/app.ts';

// Longer than any wait below: a job these workers run was found by a wake-up, never by the poll.
const NEVER_POLL = { pollIntervalMs: 60_000 };

async function waitFor(condition: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function statuses(db: Database, queue: string) {
  const rows = await db.query<{ status: string; count: number }>(
    'SELECT status, count(*)::int AS count FROM jobs WHERE queue = $1 GROUP BY status',
    [queue],
  );
  return Object.fromEntries(rows.map((row) => [row.status, row.count]));
}

describe('two workers, 4,000 jobs', () => {
  test('every job is done exactly once, enqueued before and while the workers run', async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    // On PostgreSQL each worker has its own connection pool (two instances); PGlite is one handle.
    const handles = [database.db, database.connectAgain()];
    const workers = handles.map(
      (db, index) => new JobQueue(db, clock, { workerId: `worker-${index}`, ...NEVER_POLL }),
    );
    const doneBy = new Map<number, string[]>();
    try {
      for (const worker of workers) {
        worker.register<{ n: number }>('test.many', async ({ n }) => {
          await new Promise((resolve) => setImmediate(resolve));
          doneBy.set(n, [...(doneBy.get(n) ?? []), worker.workerId]);
        });
      }
      // Each instance enqueues 2,000: half before the workers start, half while they run.
      const enqueue = async (from: number) => {
        for (let batch = 0; batch < 10; batch++) {
          const db = handles[from % 2]!;
          await db.transaction(async (tx) => {
            for (let i = 0; i < 100; i++) {
              await workers[0]!.enqueue(tx, 'test.many', { n: from * 1000 + batch * 100 + i });
            }
          });
        }
      };
      await Promise.all([enqueue(0), enqueue(1)]);
      for (const worker of workers) worker.start();
      await Promise.all([enqueue(2), enqueue(3)]);

      await waitFor(() => doneBy.size === 4000, 120_000);
      await waitFor(async () => (await statuses(database.db, 'test.many')).completed === 4000);
      await Promise.all(workers.map((worker) => worker.stop()));

      assert.equal(doneBy.size, 4000);
      for (const [n, by] of doneBy) assert.equal(by.length, 1, `job ${n} ran ${by.length} times`);
      const [attempts] = await database.db.query<{ max: number }>(
        "SELECT max(attempts)::int AS max FROM jobs WHERE queue = 'test.many'",
      );
      assert.equal(attempts!.max, 1);
      if (database.url) {
        const by = new Set([...doneBy.values()].flat());
        assert.deepEqual([...by].sort(), ['worker-0', 'worker-1'], 'both instances took work');
      }
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
      await database.drop();
    }
  });
});

describe('a worker killed holding a claimed batch', () => {
  test('another worker takes up the whole batch when the lease runs out', {
    skip: !process.env.DATABASE_URL && 'needs a PostgreSQL server (DATABASE_URL): PGlite is in-process',
  }, async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    const rescuer = new JobQueue(database.db, clock, { workerId: 'rescuer', ...NEVER_POLL });
    try {
      for (let n = 0; n < 8; n++) await rescuer.enqueue(database.db, 'test.dies', { n });
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'test/fixtures/dying-worker.ts', database.url!, '8'],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let output = '';
      child.stdout.on('data', (chunk) => {
        output += chunk;
      });
      const signal = await new Promise((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
      assert.equal(signal, 'SIGKILL');
      assert.match(output, /claimed/);
      const held = await database.db.query<{ status: string; locked_by: string }>(
        "SELECT status, locked_by FROM jobs WHERE queue = 'test.dies'",
      );
      assert.equal(held.length, 8);
      for (const row of held) assert.deepEqual(row, { status: 'running', locked_by: 'doomed-worker' });

      const ran: number[] = [];
      rescuer.register<{ n: number }>('test.dies', async ({ n }) => {
        ran.push(n);
      });
      rescuer.start();
      await pause(200);
      assert.deepEqual(ran, [], 'not while the lease holds');
      // The started worker hears of the clock's move: no drain, no poll.
      clock.advance(120);
      await waitFor(async () => (await statuses(database.db, 'test.dies')).completed === 8);
      assert.deepEqual(
        ran.sort((a, b) => a - b),
        [0, 1, 2, 3, 4, 5, 6, 7],
      );
      const [attempts] = await database.db.query<{ min: number; max: number }>(
        "SELECT min(attempts)::int AS min, max(attempts)::int AS max FROM jobs WHERE queue = 'test.dies'",
      );
      assert.deepEqual(attempts, { min: 2, max: 2 });
    } finally {
      await rescuer.stop();
      await database.drop();
    }
  });
});

describe('wake-ups of an idle worker', () => {
  test('a job committed while the worker idles runs without drain: the enqueue notifies', async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    // The worker works through another handle than the enqueue (another instance, on PostgreSQL).
    const worker = new JobQueue(database.connectAgain(), clock, { workerId: 'idle', ...NEVER_POLL });
    const ran: unknown[] = [];
    worker.register('test.wake', async (payload) => {
      ran.push(payload);
    });
    try {
      worker.start();
      await pause(200);
      let id = '';
      await database.db.transaction(async (tx) => {
        id = await worker.enqueue(tx, 'test.wake', { first: true });
        // Not before the commit: the row is not visible, and the notification is held until then.
        await pause(100);
        assert.deepEqual(ran, []);
      });
      await waitFor(() => ran.length === 1);
      assert.deepEqual(ran, [{ first: true }]);
      await waitFor(async () => (await statuses(database.db, 'test.wake')).completed === 1);

      // Again, once the worker has gone back to sleep.
      await pause(200);
      await worker.enqueue(database.db, 'test.wake', { second: true });
      await waitFor(() => ran.length === 2);
      const [row] = await database.db.query<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [
        id,
      ]);
      assert.equal(row!.status, 'completed');
    } finally {
      await worker.stop();
      await database.drop();
    }
  });

  test('a job scheduled ahead runs when it falls due, and so does a retry a handler asked for', async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    const worker = new JobQueue(database.db, clock, { workerId: 'timer', ...NEVER_POLL });
    const runs: { at: number; attempt: number }[] = [];
    let retryAt = 0;
    worker.register('test.later', async (_payload, job) => {
      runs.push({ at: clock.nowMs(), attempt: job.attempts });
      if (job.attempts === 1) {
        retryAt = clock.nowMs() + 300;
        throw new RetryAt(new Date(retryAt));
      }
    });
    try {
      worker.start();
      await pause(200);
      const runAt = clock.nowMs() + 300;
      await worker.enqueue(database.db, 'test.later', {}, { runAt: new Date(runAt) });
      await waitFor(() => runs.length === 2);
      assert.ok(runs[0]!.at >= runAt, 'not before it was due');
      assert.ok(runs[1]!.at >= retryAt, 'the retry not before the time asked');
      assert.deepEqual(
        runs.map((run) => run.attempt),
        [1, 2],
      );
      await waitFor(async () => (await statuses(database.db, 'test.later')).completed === 1);
    } finally {
      await worker.stop();
      await database.drop();
    }
  });

  test('a job due in an hour of the app clock runs when the test clock is moved past it', async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    const worker = new JobQueue(database.db, clock, { workerId: 'clock', ...NEVER_POLL });
    let ran = 0;
    worker.register('test.clock', async () => {
      ran++;
    });
    try {
      worker.start();
      await worker.enqueue(database.db, 'test.clock', {}, { runAt: new Date(clock.nowMs() + 3600_000) });
      await pause(200);
      assert.equal(ran, 0, 'not before its time');
      clock.advance(3601);
      await waitFor(() => ran === 1);
      // A drain after the move finds nothing left: the started worker did it, once.
      assert.equal(await worker.drain(), 0);
      assert.equal(ran, 1);
    } finally {
      await worker.stop();
      await database.drop();
    }
  });
});

describe('slots', () => {
  test("a queue's own concurrency holds while other queues use the remaining slots", async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    const worker = new JobQueue(database.db, clock, { workerId: 'slots', concurrency: 6, ...NEVER_POLL });
    const running = { narrow: 0, wide: 0 };
    const most = { narrow: 0, wide: 0 };
    const track = (queue: 'narrow' | 'wide') => async () => {
      running[queue]++;
      most[queue] = Math.max(most[queue], running[queue]);
      await pause(5);
      running[queue]--;
    };
    worker.register('test.narrow', track('narrow'), { concurrency: 2 });
    worker.register('test.wide', track('wide'));
    try {
      await database.db.transaction(async (tx) => {
        for (let n = 0; n < 40; n++) {
          await worker.enqueue(tx, 'test.narrow', { n });
          await worker.enqueue(tx, 'test.wide', { n });
        }
      });
      worker.start();
      await waitFor(async () => {
        const [narrow, wide] = [
          await statuses(database.db, 'test.narrow'),
          await statuses(database.db, 'test.wide'),
        ];
        return narrow.completed === 40 && wide.completed === 40;
      });
      assert.ok(most.narrow <= 2, `the narrow queue ran ${most.narrow} at once`);
      assert.ok(most.wide <= 6, `the wide queue ran ${most.wide} at once with 6 slots`);

      // drain() keeps the same limits.
      await worker.stop();
      most.narrow = 0;
      for (let n = 0; n < 10; n++) await worker.enqueue(database.db, 'test.narrow', { again: n });
      assert.equal(await worker.drain(), 10);
      assert.ok(most.narrow <= 2, `drain ran ${most.narrow} of the narrow queue at once`);
    } finally {
      await worker.stop();
      await database.drop();
    }
  });

  test('a queue with slots of its own runs beside the shared slots and takes none of them', async () => {
    // Two shared slots; the waiting queue (a webhook delivery's kind) has five of its own. All five waiting
    // jobs run at once, and the two others still get both shared slots while they wait.
    const database = await freshDatabase();
    const worker = new JobQueue(database.db, new Clock(true), {
      workerId: 'own',
      concurrency: 2,
      ...NEVER_POLL,
    });
    const running = { waiting: 0, work: 0 };
    const most = { waiting: 0, work: 0 };
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const track = (queue: 'waiting' | 'work') => async () => {
      running[queue]++;
      most[queue] = Math.max(most[queue], running[queue]);
      await released;
      running[queue]--;
    };
    worker.register('test.waiting', track('waiting'), { concurrency: 5, ownSlots: true });
    worker.register('test.work', track('work'));
    assert.throws(() => worker.register('test.unsized', async () => {}, { ownSlots: true }), /concurrency/);
    // runDue's limit holds for the queue's own slots too.
    const once = new JobQueue(database.db, new Clock(true), {
      workerId: 'once',
      concurrency: 2,
      ...NEVER_POLL,
    });
    let ranOnce = 0;
    once.register('test.once', async () => void ranOnce++, { concurrency: 5, ownSlots: true });
    for (let n = 0; n < 3; n++) await once.enqueue(database.db, 'test.once', { n });
    assert.equal(await once.runDue(1), 1);
    assert.equal(ranOnce, 1);
    try {
      await database.db.transaction(async (tx) => {
        for (let n = 0; n < 8; n++) await worker.enqueue(tx, 'test.waiting', { n });
        for (let n = 0; n < 3; n++) await worker.enqueue(tx, 'test.work', { n });
      });
      worker.start();
      await waitFor(() => running.waiting === 5 && running.work === 2);
      release();
      await waitFor(async () => {
        const [waiting, work] = [
          await statuses(database.db, 'test.waiting'),
          await statuses(database.db, 'test.work'),
        ];
        return waiting.completed === 8 && work.completed === 3;
      });
      assert.equal(most.waiting, 5, 'the own slots, all of them and no more');
      assert.equal(most.work, 2, 'the shared slots, untouched by the other queue');
    } finally {
      await worker.stop();
      await database.drop();
    }
  });

  test('a claim that also takes jobs of a queue with its own slots takes no more shared jobs than slots are free', async () => {
    // Two shared slots and two queues that share them, each with three due jobs: each queue's quota is two
    // (the free slots), four together; the one claim that also fills the waiting queue's own slots must still
    // take only two of them.
    const database = await freshDatabase();
    const worker = new JobQueue(database.db, new Clock(true), {
      workerId: 'mixed',
      concurrency: 2,
      ...NEVER_POLL,
    });
    let shared = 0;
    let mostShared = 0;
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const work = async () => {
      shared++;
      mostShared = Math.max(mostShared, shared);
      await released;
      shared--;
    };
    worker.register('test.work-a', work);
    worker.register('test.work-b', work);
    worker.register('test.waiting', async () => {}, { concurrency: 5, ownSlots: true });
    try {
      await database.db.transaction(async (tx) => {
        for (let n = 0; n < 3; n++) await worker.enqueue(tx, 'test.work-a', { n });
        for (let n = 0; n < 3; n++) await worker.enqueue(tx, 'test.work-b', { n });
        await worker.enqueue(tx, 'test.waiting', {});
      });
      worker.start();
      await waitFor(async () => (await statuses(database.db, 'test.waiting')).completed === 1 && shared >= 2);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(mostShared, 2, 'two shared slots, two shared jobs at once');
      release();
      await waitFor(
        async () =>
          (await statuses(database.db, 'test.work-a')).completed === 3 &&
          (await statuses(database.db, 'test.work-b')).completed === 3,
      );
      assert.equal(mostShared, 2);
    } finally {
      release();
      await worker.stop();
      await database.drop();
    }
  });

  test('drain() goes on when jobs that end during a claim that found nothing enqueue more', async () => {
    // The claim runs while the last job is still working; that job enqueues another and ends before the
    // claim's answer arrives. The claim saw nothing, nothing is running any more, and yet work is due: a
    // drain that stopped there left a webhook bench with most deliveries pending.
    const database = await freshDatabase();
    let claims = 0;
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    let slowEnded: () => void = () => {};
    const slowEnd = new Promise<void>((resolve) => {
      slowEnded = resolve;
    });
    const db: Database = Object.create(database.db);
    db.query = async (sql, params) => {
      const rows = await database.db.query(sql, params);
      if (sql.includes('jobs_claim(') && ++claims === 2) {
        // The second claim (after the quick job ended) has found nothing; let the slow job finish now.
        assert.equal(rows.length, 0);
        openGate();
        await slowEnd;
        for (let tick = 0; tick < 20; tick++) await new Promise((resolve) => setImmediate(resolve));
      }
      return rows as never;
    };
    const worker = new JobQueue(db, new Clock(true), { workerId: 'drain', concurrency: 2, ...NEVER_POLL });
    const ran: string[] = [];
    worker.register('test.first', async (payload: { name: string }) => {
      if (payload.name === 'slow') {
        await gate;
        await worker.enqueue(database.db, 'test.then', { name: 'then' });
      }
      ran.push(payload.name);
      if (payload.name === 'slow') setTimeout(slowEnded, 50);
    });
    worker.register('test.then', async (payload: { name: string }) => {
      ran.push(payload.name);
    });
    try {
      await worker.enqueue(database.db, 'test.first', { name: 'quick' });
      await worker.enqueue(database.db, 'test.first', { name: 'slow' });
      assert.equal(await worker.drain(), 3);
      assert.deepEqual(ran.sort(), ['quick', 'slow', 'then']);
      assert.ok(claims >= 3, `claims made: ${claims}`);
    } finally {
      await worker.stop();
      await database.drop();
    }
  });

  const slotSettings = [
    {
      name: 'WORKER_CONCURRENCY',
      field: 'workerConcurrency',
      byDefault: 16,
      good: 64,
      bad: ['0', '-1', '2.5', 'many', '257'],
    },
    {
      name: 'WEBHOOK_CONCURRENCY',
      field: 'webhookConcurrency',
      byDefault: 128,
      good: 512,
      bad: ['0', '-3', '1.5', 'lots', '1025'],
    },
  ] as const;
  for (const { name, field, byDefault, good, bad } of slotSettings) {
    test(`${name} is validated`, () => {
      assert.equal(loadConfig({ DATA_DIR: 'memory://' })[field], byDefault);
      assert.equal(loadConfig({ DATA_DIR: 'memory://', [name]: String(good) })[field], good);
      for (const value of bad) {
        assert.throws(() => loadConfig({ DATA_DIR: 'memory://', [name]: value }), new RegExp(name));
      }
    });
  }
});
