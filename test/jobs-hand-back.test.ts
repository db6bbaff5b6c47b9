// A worker that stops with a bound (a process shutting down, docs/operations.md "Shutdown"): the jobs that finish
// within it are recorded as usual; the ones still running are handed back at once, pending again with the
// interrupted attempt not counted, and another worker on the database takes them at once, not when the lease
// would have run out. What the abandoned handler records later is refused: the job is no longer its worker's.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Clock } from '../src/platform/clock.ts';
import { JobQueue } from '../src/platform/jobs.ts';
import { type FreshDatabase, freshDatabase } from './helpers/app.ts';

describe('a worker stopping with a bound', () => {
  let database: FreshDatabase;
  before(async () => {
    database = await freshDatabase();
  });
  after(() => database.drop());

  const jobRow = async (id: string) =>
    (
      await database.db.query<{ status: string; attempts: number; locked_by: string | null }>(
        'SELECT status, attempts, locked_by FROM jobs WHERE id = $1',
        [id],
      )
    )[0]!;

  test('finishes the quick job, hands the stuck one back, and another worker takes it at once', async () => {
    const clock = new Clock(true);
    const stopping = new JobQueue(database.db, clock, { workerId: 'stopping', pollIntervalMs: 50 });
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => {
      release = resolve;
    });
    const started: string[] = [];
    stopping.register('test.quick', async () => {
      started.push('quick');
    });
    stopping.register(
      'test.stuck',
      async () => {
        started.push('stuck');
        await stuck;
      },
      // A long lease: were the job left to it, nobody would take it again for an hour.
      { leaseSeconds: 3600 },
    );
    const quickId = await stopping.enqueue(database.db, 'test.quick', {});
    const stuckId = await stopping.enqueue(database.db, 'test.stuck', {});
    stopping.start();
    const until = Date.now() + 10_000;
    while (started.length < 2 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(started.sort(), ['quick', 'stuck']);
    assert.equal((await jobRow(stuckId)).status, 'running');

    const { handedBack } = await stopping.stop({ finishWithinMs: 200 });
    assert.equal(handedBack, 1);
    assert.deepEqual(await jobRow(quickId), { status: 'completed', attempts: 1, locked_by: null });
    assert.deepEqual(await jobRow(stuckId), { status: 'pending', attempts: 0, locked_by: null });

    // Another worker, same clock, lease unexpired had it not been handed back: it takes the job now.
    const next = new JobQueue(database.db, clock, { workerId: 'next' });
    const ranBy: string[] = [];
    next.register('test.quick', async () => {});
    next.register('test.stuck', async () => {
      ranBy.push('next');
    });
    assert.equal(await next.runDue(), 1);
    assert.deepEqual(ranBy, ['next']);
    assert.deepEqual(await jobRow(stuckId), { status: 'completed', attempts: 1, locked_by: null });

    // The abandoned handler ends after all: its worker no longer holds the job, so nothing it records counts.
    release();
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(await jobRow(stuckId), { status: 'completed', attempts: 1, locked_by: null });
  });

  test('without a bound, stop waits for every job in hand and hands nothing back', async () => {
    const clock = new Clock(true);
    const queue = new JobQueue(database.db, clock, { workerId: 'patient', pollIntervalMs: 50 });
    let running = false;
    queue.register('test.slow', async () => {
      running = true;
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    const id = await queue.enqueue(database.db, 'test.slow', {});
    queue.start();
    const until = Date.now() + 10_000;
    while (!running && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(await queue.stop(), { handedBack: 0 });
    assert.equal((await jobRow(id)).status, 'completed');
  });
});
