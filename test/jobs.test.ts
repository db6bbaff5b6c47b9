// The durable job queue and the event outbox (issue: platform foundation). Jobs exist only if their
// transaction commits; each is handed to exactly one worker even with two instances on one database;
// failures retry on the backoff schedule of the app clock; a job whose worker dies is taken again when its
// lease runs out; jobs survive a restart of the server.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Type } from 'typebox';
import { Clock } from '../src/platform/clock.ts';
import { PgliteDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { type DomainEvent, defineEvent, EventOutbox } from '../src/platform/events.ts';
import { JobQueue, RetryAt } from '../src/platform/jobs.ts';
import { freshDatabase, startTestApp, type TestApp } from './helpers/app.ts';

// Events a module would declare; these tests declare their own on each outbox they record on.
const Happened = defineEvent('test.happened', Type.Object({ a: Type.Number() }), 'test', {
  example: { a: 1 },
});
const RolledBack = defineEvent('test.rolled_back', Type.Object({}), 'test', { example: {} });
const Committed = defineEvent('test.committed', Type.Object({ n: Type.Number() }), 'test', {
  example: { n: 1 },
});
const Retried = defineEvent('test.retry', Type.Object({}), 'test', { example: {} });

async function jobRow(t: TestApp, id: string) {
  const [row] = await t.ctx.db.query<any>('SELECT * FROM jobs WHERE id = $1', [id]);
  return row;
}

describe('job queue', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('the claim functions run without JIT and by index only, whatever the server says (migrations 051, 052, 055)', async () => {
    // Compiling a claim took 57-91 ms once a backlog made its estimated cost pass jit_above_cost; a claim
    // planned with a hash or merge join read the whole jobs table (finished jobs included) to mark a few.
    const byIndex = ['jit=off', 'enable_seqscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off'];
    const rows = await t.ctx.db.query<{ proname: string; proconfig: string[] | null }>(
      `SELECT proname, proconfig FROM pg_proc
        WHERE proname IN ('jobs_claim', 'jobs_claim_by_key', 'job_keys_room') ORDER BY proname`,
    );
    // jobs_claim twice: the claim of migration 052 and the one it keeps for the previous release's workers.
    assert.deepEqual(
      rows.map((row) => [row.proname, row.proconfig]),
      [
        ['job_keys_room', ['jit=off']],
        ['jobs_claim', byIndex],
        ['jobs_claim', byIndex],
        ['jobs_claim_by_key', byIndex],
      ],
    );
  });

  test('a job enqueued in a transaction that rolls back does not exist', async () => {
    let id = '';
    await assert.rejects(
      t.ctx.db.transaction(async (tx) => {
        id = await t.ctx.jobs.enqueue(tx, 'test.rollback', { n: 1 });
        throw new Error('abort');
      }),
    );
    assert.equal(await jobRow(t, id), undefined);
  });

  test('a due job runs once and is marked completed', async () => {
    const seen: unknown[] = [];
    t.ctx.jobs.register('test.simple', async (payload) => {
      seen.push(payload);
    });
    const id = await t.ctx.jobs.enqueue(t.ctx.db, 'test.simple', { hello: 'world' });
    await t.ctx.jobs.drain();
    await t.ctx.jobs.drain();
    assert.deepEqual(seen, [{ hello: 'world' }]);
    const row = await jobRow(t, id);
    assert.equal(row.status, 'completed');
    assert.equal(row.attempts, 1);
  });

  test('a job scheduled later waits for the clock', async () => {
    let ran = 0;
    t.ctx.jobs.register('test.later', async () => {
      ran++;
    });
    await t.ctx.jobs.enqueue(t.ctx.db, 'test.later', {}, { runAt: new Date(t.ctx.clock.nowMs() + 3600_000) });
    await t.ctx.jobs.drain();
    assert.equal(ran, 0);
    t.ctx.clock.advance(3601);
    await t.ctx.jobs.drain();
    assert.equal(ran, 1);
  });

  test('a failing job is retried on the backoff schedule and dies after its last attempt', async () => {
    let calls = 0;
    t.ctx.jobs.register(
      'test.flaky',
      async () => {
        calls++;
        throw new Error(`failure ${calls}`);
      },
      { maxAttempts: 3, retryDelaysSeconds: [10, 100] },
    );
    const id = await t.ctx.jobs.enqueue(t.ctx.db, 'test.flaky', {});
    await t.ctx.jobs.drain();
    assert.equal(calls, 1);
    let row = await jobRow(t, id);
    assert.equal(row.status, 'pending');
    assert.equal(row.last_error, 'failure 1');
    const delay = (new Date(row.run_at).getTime() - t.ctx.clock.nowMs()) / 1000;
    assert.ok(delay > 7 && delay <= 12, `first retry after ~10s with jitter, got ${delay}`);

    t.ctx.clock.advance(5);
    await t.ctx.jobs.drain();
    assert.equal(calls, 1, 'not before its time');
    t.ctx.clock.advance(10);
    await t.ctx.jobs.drain();
    assert.equal(calls, 2);
    t.ctx.clock.advance(130);
    await t.ctx.jobs.drain();
    assert.equal(calls, 3);
    row = await jobRow(t, id);
    assert.equal(row.status, 'dead');
    assert.equal(row.attempts, 3);
    t.ctx.clock.advance(10_000);
    await t.ctx.jobs.drain();
    assert.equal(calls, 3, 'a dead job is never run again');
  });

  test('a handler may ask to be retried at a given time (e.g. Retry-After)', async () => {
    let calls = 0;
    t.ctx.jobs.register('test.retry-at', async () => {
      calls++;
      if (calls === 1) throw new RetryAt(new Date(t.ctx.clock.nowMs() + 600_000));
    });
    const id = await t.ctx.jobs.enqueue(t.ctx.db, 'test.retry-at', {});
    await t.ctx.jobs.drain();
    t.ctx.clock.advance(599);
    await t.ctx.jobs.drain();
    assert.equal(calls, 1);
    t.ctx.clock.advance(2);
    await t.ctx.jobs.drain();
    assert.equal(calls, 2);
    assert.equal((await jobRow(t, id)).status, 'completed');
  });

  test('a second enqueue with the same dedupe key is ignored', async () => {
    const a = await t.ctx.jobs.enqueue(t.ctx.db, 'test.dedupe', { n: 1 }, { dedupeKey: 'once' });
    await t.ctx.jobs.enqueue(t.ctx.db, 'test.dedupe', { n: 2 }, { dedupeKey: 'once' });
    const rows = await t.ctx.db.query<any>("SELECT * FROM jobs WHERE queue = 'test.dedupe'");
    assert.equal(rows.length, 1);
    assert.equal(rows[0].id, a);
  });

  test('a job whose worker stops answering is taken by another worker when the lease runs out', async () => {
    const stuck = new JobQueue(t.ctx.db, t.ctx.clock, { workerId: 'stuck' });
    stuck.register('test.abandoned', () => new Promise<void>(() => {}), { leaseSeconds: 30 });
    const id = await t.ctx.jobs.enqueue(t.ctx.db, 'test.abandoned', {});
    void stuck.runDue(1);
    await waitFor(async () => (await jobRow(t, id)).status === 'running');
    assert.equal((await jobRow(t, id)).locked_by, 'stuck');

    let rescued = 0;
    const rescuer = new JobQueue(t.ctx.db, t.ctx.clock, { workerId: 'rescuer' });
    rescuer.register(
      'test.abandoned',
      async () => {
        rescued++;
      },
      { leaseSeconds: 30 },
    );
    await rescuer.drain();
    assert.equal(rescued, 0, 'not while the lease holds');
    t.ctx.clock.advance(61);
    await rescuer.drain();
    assert.equal(rescued, 1);
    const row = await jobRow(t, id);
    assert.equal(row.status, 'completed');
    assert.equal(row.attempts, 2);
  });
});

describe('two instances on one database', () => {
  test('200 jobs, two workers polling at once: each job is done exactly once', async () => {
    const database = await freshDatabase();
    const first = await startTestApp({ database });
    const second = await startTestApp({ database });
    try {
      const doneBy = new Map<number, string[]>();
      for (const [name, instance] of [
        ['first', first],
        ['second', second],
      ] as const) {
        instance.ctx.jobs.register<{ n: number }>('test.shared', async ({ n }) => {
          await new Promise((resolve) => setImmediate(resolve));
          doneBy.set(n, [...(doneBy.get(n) ?? []), name]);
        });
      }
      await first.ctx.db.transaction(async (tx) => {
        for (let n = 0; n < 200; n++) await first.ctx.jobs.enqueue(tx, 'test.shared', { n });
      });
      first.ctx.jobs.start();
      second.ctx.jobs.start();
      await waitFor(async () => {
        const [row] = await first.ctx.db.query<{ open: number }>(
          "SELECT count(*)::int AS open FROM jobs WHERE queue = 'test.shared' AND status <> 'completed'",
        );
        return row!.open === 0;
      }, 60_000);
      await first.ctx.jobs.stop();
      await second.ctx.jobs.stop();

      assert.equal(doneBy.size, 200);
      for (const [n, workers] of doneBy)
        assert.equal(workers.length, 1, `job ${n} ran ${workers.length} times`);
      const byWorker = [...doneBy.values()].flat();
      // On PostgreSQL both workers really compete; on PGlite they share one in-process connection.
      if (database.url) {
        assert.ok(byWorker.includes('first') && byWorker.includes('second'), 'both instances took work');
      }
      const [attempts] = await first.ctx.db.query<{ max: number }>(
        "SELECT max(attempts)::int AS max FROM jobs WHERE queue = 'test.shared'",
      );
      assert.equal(attempts!.max, 1);
    } finally {
      await second.close();
      await first.close();
      await database.drop();
    }
  });

  test('a worker process killed while holding a job: the job is picked up again', {
    skip: !process.env.DATABASE_URL && 'needs a PostgreSQL server (DATABASE_URL): PGlite is in-process',
  }, async () => {
    const t = await startTestApp();
    try {
      const id = await t.ctx.jobs.enqueue(t.ctx.db, 'test.dies', { important: true });
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'test/fixtures/dying-worker.ts', t.database.url!],
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
      const held = await jobRow(t, id);
      assert.equal(held.status, 'running');
      assert.equal(held.locked_by, 'doomed-worker');

      let ran = 0;
      t.ctx.jobs.register('test.dies', async (payload) => {
        assert.deepEqual(payload, { important: true });
        ran++;
      });
      await t.ctx.jobs.drain();
      assert.equal(ran, 0, 'the lease still holds');
      t.ctx.clock.advance(120);
      await t.ctx.jobs.drain();
      assert.equal(ran, 1);
      assert.equal((await jobRow(t, id)).status, 'completed');
    } finally {
      await t.close();
    }
  });
});

describe('restart durability (embedded PGlite files)', () => {
  test('a job enqueued before a restart runs after it; an event recorded before is still there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'comms-restart-'));
    try {
      const clock = new Clock(true);
      let db = await PgliteDatabase.open(dir);
      await migrate(db);
      let jobs = new JobQueue(db, clock);
      let outbox = new EventOutbox(db, jobs, clock);
      outbox.declare(Happened);
      // A consumer that wants every event, as the webhooks consumer of a running product would be.
      outbox.subscribe(async () => {});
      const jobId = await jobs.enqueue(db, 'test.durable', { survive: true });
      const event = await db.transaction((tx) =>
        outbox.record(tx, Happened, { organizationId: 'org_x', data: { a: 1 } }),
      );
      await db.close();

      db = await PgliteDatabase.open(dir);
      assert.deepEqual(await migrate(db), [], 'migrations are not applied twice');
      jobs = new JobQueue(db, clock);
      outbox = new EventOutbox(db, jobs, clock);
      const seen: unknown[] = [];
      const dispatched: DomainEvent[] = [];
      jobs.register('test.durable', async (payload) => {
        seen.push(payload);
      });
      outbox.subscribe(async (e) => {
        dispatched.push(e);
      });
      await jobs.drain();
      assert.deepEqual(seen, [{ survive: true }]);
      assert.deepEqual(
        dispatched.map((e) => e.id),
        [event.id],
      );
      const [row] = await db.query<any>('SELECT status FROM jobs WHERE id = $1', [jobId]);
      assert.equal(row.status, 'completed');
      await db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('event outbox', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
    t.ctx.events.declare(RolledBack, Committed);
  });
  after(() => t.close());

  test('an event exists only if the change that caused it commits', async () => {
    const received: DomainEvent[] = [];
    t.ctx.events.subscribe(async (event) => {
      received.push(event);
    });
    await assert.rejects(
      t.ctx.db.transaction(async (tx) => {
        await t.ctx.events.record(tx, RolledBack, { organizationId: 'org_a', data: {} });
        throw new Error('the change failed');
      }),
    );
    const committed = await t.ctx.db.transaction((tx) =>
      t.ctx.events.record(tx, Committed, { organizationId: 'org_a', data: { n: 1 } }),
    );
    assert.match(committed.id, /^evt_/);
    const rows = await t.ctx.db.query<any>("SELECT type FROM events WHERE organization_id = 'org_a'");
    assert.deepEqual(
      rows.map((r) => r.type),
      ['test.committed'],
    );

    await t.ctx.jobs.drain();
    assert.deepEqual(
      received.map((e) => [e.type, e.data]),
      [['test.committed', { n: 1 }]],
    );
    const [row] = await t.ctx.db.query<any>('SELECT dispatched_at FROM events WHERE id = $1', [committed.id]);
    assert.ok(row.dispatched_at);
  });

  test('a consumer that fails gets the event again on retry', async () => {
    const t2 = await startTestApp();
    t2.ctx.events.declare(Retried);
    try {
      let attempts = 0;
      t2.ctx.events.subscribe(async () => {
        attempts++;
        if (attempts === 1) throw new Error('receiver down');
      });
      await t2.ctx.db.transaction((tx) =>
        t2.ctx.events.record(tx, Retried, { organizationId: 'org_b', data: {} }),
      );
      await t2.ctx.jobs.drain();
      assert.equal(attempts, 1);
      t2.ctx.clock.advance(60);
      await t2.ctx.jobs.drain();
      assert.equal(attempts, 2);
    } finally {
      await t2.close();
    }
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
