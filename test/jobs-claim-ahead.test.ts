// Claiming ahead (QueueOptions.claimAhead, src/platform/jobs/slots.ts): a queue with slots of its own claims
// that many jobs more than its slots and holds them, each started the moment a slot frees, oldest claim
// first; a held job never runs past its queue's concurrency; one held for a quarter of its lease is handed
// back instead of started, even when no slot frees; a worker that stops hands its held jobs back at once. Against a real database: the held
// jobs are claimed (running, under this worker's lease) and every job runs exactly once, in order.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Clock } from '../src/platform/clock.ts';
import type { Database } from '../src/platform/db/index.ts';
import { type SlotQueue, Slots } from '../src/platform/jobs/slots.ts';
import type { Claim, Job } from '../src/platform/jobs/store.ts';
import { JobWorker } from '../src/platform/jobs/worker.ts';
import { JobQueue } from '../src/platform/jobs.ts';
import { freshDatabase } from './helpers/app.ts';

async function waitFor(condition: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const job = (id: string, queue = 'q'): Job =>
  ({
    id,
    queue,
    payload: {},
    attempts: 1,
    maxAttempts: 5,
    runAt: new Date(0),
    createdAt: new Date(0),
    concurrencyKey: null,
  }) as unknown as Job;

const ahead: SlotQueue = { name: 'q', concurrency: 2, leaseSeconds: 8, ownSlots: true, claimAhead: 3 };

describe('the slots of a queue that claims ahead', () => {
  test('a claim may take its slots and its claimAhead more; held jobs come out oldest first', () => {
    const slots = new Slots({ total: 4 });
    assert.equal(slots.claimable([ahead]).quotas[0]!.limit, 5);
    assert.equal(slots.claimable([ahead], { ahead: false }).quotas[0]!.limit, 2);
    // A queue sharing the worker's slots never claims ahead, whatever it says.
    assert.equal(slots.claimable([{ ...ahead, name: 's', ownSlots: false }]).quotas[0]!.limit, 2);
    for (const id of ['a', 'b', 'c', 'd', 'e']) {
      if (slots.canStart(ahead)) slots.take(ahead);
      else slots.hold(ahead, job(id), 0);
    }
    assert.equal(slots.claimable([ahead]).quotas.length, 0, 'two running and three held: no room');
    assert.deepEqual(slots.nextHeld(ahead, 0), { stale: [] }, 'no slot free: nothing starts');
    slots.release(ahead);
    assert.equal(slots.nextHeld(ahead, 0).job?.id, 'c');
    slots.take(ahead);
    assert.equal(slots.claimable([ahead]).quotas[0]!.limit, 1, 'one taken from the hand: room for one');
    assert.deepEqual(
      slots.releaseHeld().map((held) => held.id),
      ['d', 'e'],
    );
    assert.equal(slots.nextHeld(ahead, 0).job, undefined);
  });

  test('a job held for a quarter of its lease is given back, not started', () => {
    const slots = new Slots({ total: 4 });
    slots.take(ahead);
    slots.take(ahead);
    slots.hold(ahead, job('old'), 0);
    slots.hold(ahead, job('new'), 1_500);
    // Lease 8 s: stale from 2 s after it was held.
    assert.deepEqual(slots.takeStale(1_999), []);
    slots.release(ahead);
    const next = slots.nextHeld(ahead, 2_000);
    assert.deepEqual(
      next.stale.map((held) => held.id),
      ['old'],
    );
    assert.equal(next.job?.id, 'new');
    slots.take(ahead);
    slots.hold(ahead, job('later'), 2_000);
    assert.deepEqual(
      slots.takeStale(4_000).map((held) => held.id),
      ['later'],
    );
  });
});

describe('a worker that claims ahead', () => {
  /** A JobWorker over scripted claims: each claim hands out the jobs it is given, up to its room. */
  function scriptedWorker(clock: Clock, backlog: Job[], queue: SlotQueue = ahead) {
    const started: string[] = [];
    /** How many claims had been made when each job started. */
    const claimsAtStart = new Map<string, number>();
    const finish = new Map<string, () => void>();
    const handedBack: string[] = [];
    const errors: unknown[] = [];
    let claims = 0;
    const worker = new JobWorker({
      db: {} as Database,
      clock,
      concurrency: 4,
      pollIntervalMs: 60_000,
      scheduleStepMs: 0,
      queues: () => [queue],
      claim: async (claim: Claim) => {
        claims++;
        return backlog.splice(0, claim.quotas.find((quota) => quota.queue === 'q')?.limit ?? 0);
      },
      nextRunAt: async () => undefined,
      run: (running) => {
        started.push(running.id);
        claimsAtStart.set(running.id, claims);
        return new Promise((resolve) => finish.set(running.id, () => resolve(undefined)));
      },
      handBack: async (ids) => handedBack.push(...ids) && ids.length,
      onError: (error) => errors.push(error),
    });
    return { worker, started, claimsAtStart, finish, handedBack, errors, claims: () => claims };
  }

  test('a freed slot starts the next held job at once, in claim order, never more than its slots', async () => {
    const clock = new Clock(true);
    const backlog = ['j1', 'j2', 'j3', 'j4', 'j5', 'j6', 'j7'].map((id) => job(id));
    const { worker, started, claimsAtStart, finish, errors, claims } = scriptedWorker(clock, backlog);
    worker.start();
    await waitFor(() => started.length === 2);
    await waitFor(() => backlog.length === 2, 5_000); // two running, three held
    assert.deepEqual(started, ['j1', 'j2']);
    const claimsBefore = claims();
    finish.get('j1')!();
    await waitFor(() => started.length === 3);
    assert.equal(started[2], 'j3');
    assert.equal(claimsAtStart.get('j3'), claimsBefore, 'the held job started before any claim');
    for (const id of ['j2', 'j3', 'j4', 'j5', 'j6']) {
      await waitFor(() => finish.has(id));
      finish.get(id)!();
    }
    await waitFor(() => started.length === 7);
    assert.deepEqual(started, ['j1', 'j2', 'j3', 'j4', 'j5', 'j6', 'j7']);
    finish.get('j7')!();
    assert.deepEqual(await worker.stop(), { unfinished: [], handedBack: 0 });
    assert.deepEqual(errors, []);
  });

  test('held jobs that waited a quarter of their lease, and those held when it stops, are handed back', async () => {
    const clock = new Clock(true);
    const backlog = ['j1', 'j2', 'j3', 'j4', 'j5'].map((id) => job(id));
    const { worker, started, finish, handedBack, errors } = scriptedWorker(clock, backlog);
    worker.start();
    await waitFor(() => started.length === 2 && backlog.length === 0);
    clock.advance(2); // lease 8 s: the three held jobs are stale
    finish.get('j1')!();
    await waitFor(() => handedBack.length === 3);
    assert.deepEqual(handedBack, ['j3', 'j4', 'j5']);
    assert.deepEqual(started, ['j1', 'j2']);
    // Claimed again later (the scripted backlog is empty now), held, then the worker stops: handed back.
    backlog.push(job('j6'), job('j7'), job('j8'));
    clock.advance(0); // a move of the clock wakes the worker
    await waitFor(() => started.length === 3 && backlog.length === 0);
    // Stopping without waiting: the two held go back at once, the two running are returned unfinished.
    const stopped = await worker.stop(0);
    assert.deepEqual(
      stopped.unfinished.map((running) => running.id),
      ['j2', 'j6'],
    );
    assert.equal(stopped.handedBack, 2);
    assert.deepEqual(handedBack, ['j3', 'j4', 'j5', 'j7', 'j8']);
    finish.get('j2')!();
    finish.get('j6')!();
    assert.deepEqual(errors, []);
  });

  test('a held job past a quarter of its lease goes back on the worker’s own alarm, with no slot freeing and no clock moving', async () => {
    const clock = new Clock(true);
    const shortLease: SlotQueue = { ...ahead, leaseSeconds: 1 }; // stale 250 ms after it is held
    const backlog = ['j1', 'j2', 'j3'].map((id) => job(id));
    const { worker, started, finish, handedBack, errors } = scriptedWorker(clock, backlog, shortLease);
    worker.start();
    await waitFor(() => handedBack.length === 1);
    assert.deepEqual(handedBack, ['j3']);
    assert.deepEqual(started, ['j1', 'j2']);
    finish.get('j1')!();
    finish.get('j2')!();
    await worker.stop();
    assert.deepEqual(errors, []);
  });
});

describe('claiming ahead against the database', () => {
  test('held jobs are claimed by this worker, and every job runs exactly once, oldest first', async () => {
    const database = await freshDatabase();
    const clock = new Clock(true);
    const queue = new JobQueue(database.db, clock, { workerId: 'ahead', pollIntervalMs: 60_000 });
    const started: number[] = [];
    const finish = new Map<number, () => void>();
    let running = 0;
    let most = 0;
    queue.register<{ n: number }>(
      'test.ahead',
      ({ n }) => {
        started.push(n);
        most = Math.max(most, ++running);
        return new Promise((resolve) =>
          finish.set(n, () => {
            running--;
            resolve();
          }),
        );
      },
      { concurrency: 2, ownSlots: true, claimAhead: 2 },
    );
    try {
      for (let n = 0; n < 8; n++) {
        await queue.enqueue(database.db, 'test.ahead', { n }, { runAt: new Date(clock.nowMs() - 1000 + n) });
      }
      queue.start();
      const runningRows = async () =>
        (
          await database.db.query<{ count: number }>(
            "SELECT count(*)::int AS count FROM jobs WHERE queue = 'test.ahead' AND status = 'running' AND locked_by = 'ahead'",
          )
        )[0]!.count;
      await waitFor(async () => started.length === 2 && (await runningRows()) === 4);
      assert.deepEqual(started, [0, 1], 'two slots: two run, two more claimed and held');
      for (let n = 0; n < 8; n++) {
        await waitFor(() => finish.has(n));
        finish.get(n)!();
      }
      await waitFor(async () => {
        const [row] = await database.db.query<{ count: number }>(
          "SELECT count(*)::int AS count FROM jobs WHERE queue = 'test.ahead' AND status = 'completed'",
        );
        return row!.count === 8;
      });
      assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6, 7]);
      assert.equal(most, 2, 'never more than its two slots at once');
    } finally {
      await queue.stop();
      await database.drop();
    }
  });
});
