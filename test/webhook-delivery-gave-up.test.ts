// A delivery whose job gives up (issue 11, finding: stuck delivery). A job that keeps failing before it can
// make an attempt (here: a secret that cannot be opened, as when the key that sealed it changed) is marked
// dead by the queue after its last try; the delivery must then be `failed` with the reason as its last
// error, not `pending` forever, and redelivery must work once the secret is fixed or rotated. A pending
// delivery whose job is dead or missing is redeliverable too. Also the queue's `onDead` hook this relies on.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DELIVER_QUEUE } from '../src/modules/webhooks/service.ts';
import { JobQueue } from '../src/platform/jobs.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createUser, signIn, type TestUser } from './helpers/portal.ts';
import { type Receiver, startReceiver, verifyWithBoth } from './helpers/receiver.ts';

// Longer than the delivery queue's longest backoff (600 s) with its +20% jitter.
const PAST_ANY_RETRY_SECONDS = 721;

describe('a delivery whose job gives up', () => {
  let t: TestApp;
  let receiver: Receiver;
  let owner: TestUser;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
    receiver = await startReceiver(() => t.ctx.clock.nowMs());
    owner = await createUser(t, { role: 'owner' });
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  const receivedAt = (path: string) => receiver.received.filter((r) => r.path === path);
  // Sessions last 8 hours and walking the retries takes longer: sign in afresh for every request.
  const request = async (method: string, path: string) =>
    t.request(method, path, { token: await signIn(t, owner) });

  async function createHook(path: string) {
    const res = await t.request('POST', '/api/webhooks', {
      token: await signIn(t, owner),
      body: { url: `${receiver.url}${path}`, events: ['webhook.test'] },
    });
    assert.equal(res.status, 201, res.text);
    return res.body.data as { id: string; secret: string };
  }

  async function sendTest(endpointId: string): Promise<string> {
    const res = await request('POST', `/api/webhooks/${endpointId}/test`);
    assert.equal(res.status, 202, res.text);
    return res.body.data.id;
  }

  async function deliveryOf(endpointId: string, deliveryId: string) {
    const res = await request('GET', `/api/webhooks/${endpointId}/deliveries?limit=100`);
    assert.equal(res.status, 200, res.text);
    return res.body.data.find((delivery: { id: string }) => delivery.id === deliveryId);
  }

  async function jobsOf(deliveryId: string) {
    return t.ctx.db.query<{ id: string; status: string; attempts: number; last_error: string | null }>(
      `SELECT id, status, attempts, last_error FROM jobs WHERE queue = $1 AND payload->>'deliveryId' = $2
        ORDER BY created_at, id`,
      [DELIVER_QUEUE, deliveryId],
    );
  }

  /** Runs the queue, moving the clock past each retry, until nothing is left to run. */
  async function drainEveryRetry() {
    for (let round = 0; round < 100; round++) {
      const ran = await t.ctx.jobs.drain();
      const [open] = await t.ctx.db.query<{ count: number }>(
        "SELECT count(*)::int AS count FROM jobs WHERE status IN ('pending', 'running')",
      );
      if (ran === 0 && open!.count === 0) return;
      t.ctx.clock.advance(PAST_ANY_RETRY_SECONDS);
    }
    assert.fail('the queue never emptied');
  }

  async function corruptSecret(endpointId: string): Promise<string> {
    const [row] = await t.ctx.db.query<{ secret_sealed: string }>(
      'SELECT secret_sealed FROM webhook_endpoints WHERE id = $1',
      [endpointId],
    );
    // As if sealed with a key no longer configured: well formed, but it does not open.
    const sealed = row!.secret_sealed;
    const flipped = sealed.slice(0, -2) + (sealed.endsWith('AA') ? 'BB' : 'AA');
    await t.ctx.db.query('UPDATE webhook_endpoints SET secret_sealed = $2 WHERE id = $1', [
      endpointId,
      flipped,
    ]);
    return sealed;
  }

  async function failedForGood(endpointId: string, deliveryId: string) {
    const delivery = await deliveryOf(endpointId, deliveryId);
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempts, 0, 'no POST was ever made');
    assert.equal(delivery.nextAttemptAt, null);
    assert.match(
      delivery.lastError,
      /^Gave up after 50 tries: the endpoint's signing secret cannot be opened .*rotate it, then redeliver$/,
    );
    const [job] = await jobsOf(deliveryId);
    assert.equal(job!.status, 'dead');
    assert.equal(job!.attempts, 50);
  }

  test('a secret that cannot be opened: the delivery fails with the reason; fixed, it is redelivered', async () => {
    const hook = await createHook('/unsealable');
    const original = await corruptSecret(hook.id);
    const deliveryId = await sendTest(hook.id);
    await drainEveryRetry();
    await failedForGood(hook.id, deliveryId);
    assert.equal(receivedAt('/unsealable').length, 0);

    await t.ctx.db.query('UPDATE webhook_endpoints SET secret_sealed = $2 WHERE id = $1', [
      hook.id,
      original,
    ]);
    const redo = await request('POST', `/api/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`);
    assert.equal(redo.status, 202, redo.text);
    assert.equal(redo.body.data.status, 'pending');
    await t.ctx.jobs.drain();

    const got = receivedAt('/unsealable');
    assert.equal(got.length, 1);
    verifyWithBoth(hook.secret, got[0]!);
    const delivery = await deliveryOf(hook.id, deliveryId);
    assert.equal(delivery.status, 'succeeded');
    assert.equal(delivery.attempts, 1);
    assert.equal(delivery.lastError, null);
  });

  test('a secret that cannot be opened, then rotated: redelivered, signed with the new secret only', async () => {
    const hook = await createHook('/rotated');
    await corruptSecret(hook.id);
    const deliveryId = await sendTest(hook.id);
    await drainEveryRetry();
    await failedForGood(hook.id, deliveryId);

    const rotated = await request('POST', `/api/webhooks/${hook.id}/rotate-secret`);
    assert.equal(rotated.status, 200, rotated.text);
    const redo = await request('POST', `/api/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`);
    assert.equal(redo.status, 202, redo.text);
    await t.ctx.jobs.drain();

    const got = receivedAt('/rotated');
    assert.equal(got.length, 1);
    // The replaced secret still "signs" for 24 hours, but it cannot be opened: it is left out.
    assert.equal(got[0]!.headers['webhook-signature']!.split(' ').length, 1);
    verifyWithBoth(rotated.body.data.secret, got[0]!);
    assert.equal((await deliveryOf(hook.id, deliveryId)).status, 'succeeded');
  });

  test('a pending delivery whose job is dead or missing can be redelivered; one still queued cannot', async () => {
    const hook = await createHook('/orphaned');
    const deliveryId = await sendTest(hook.id);
    const refused = await request('POST', `/api/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`);
    assert.equal(refused.status, 409, 'its job is waiting to run');

    // A job that died before deliveries were failed with their jobs (or was lost): the delivery is pending.
    const [job] = await jobsOf(deliveryId);
    await t.ctx.db.query("UPDATE jobs SET status = 'dead' WHERE id = $1", [job!.id]);
    assert.equal((await deliveryOf(hook.id, deliveryId)).status, 'pending');
    const revived = await request('POST', `/api/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`);
    assert.equal(revived.status, 202, revived.text);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/orphaned').length, 1);
    assert.equal((await deliveryOf(hook.id, deliveryId)).status, 'succeeded');

    const second = await sendTest(hook.id);
    await t.ctx.db.query(`DELETE FROM jobs WHERE queue = $1 AND payload->>'deliveryId' = $2`, [
      DELIVER_QUEUE,
      second,
    ]);
    const missing = await request('POST', `/api/webhooks/${hook.id}/deliveries/${second}/redeliver`);
    assert.equal(missing.status, 202, missing.text);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/orphaned').length, 2);
    assert.equal((await deliveryOf(hook.id, second)).status, 'succeeded');
  });
});

describe('job queue: onDead', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const statusOf = async (id: string) =>
    (
      await t.ctx.db.query<{ status: string; last_error: string }>('SELECT * FROM jobs WHERE id = $1', [id])
    )[0]!;

  test('runs once, when the last attempt fails, in the transaction that marks the job dead', async () => {
    const queue = new JobQueue(t.ctx.db, t.ctx.clock, { workerId: 'hooked' });
    const calls: { payload: unknown; attempts: number; error: string; status: string }[] = [];
    queue.register<{ n: number }>(
      'test.gives-up',
      async (payload) => {
        throw new Error(`failure ${payload.n}`);
      },
      {
        maxAttempts: 2,
        retryDelaysSeconds: [10],
        onDead: async (tx, job, error) => {
          const [row] = await tx.query<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [job.id]);
          calls.push({
            payload: job.payload,
            attempts: job.attempts,
            error: (error as Error).message,
            status: row!.status,
          });
        },
      },
    );
    const id = await queue.enqueue(t.ctx.db, 'test.gives-up', { n: 7 });
    await queue.drain();
    assert.equal(calls.length, 0, 'not while attempts remain');
    t.ctx.clock.advance(15);
    await queue.drain();
    assert.deepEqual(calls, [{ payload: { n: 7 }, attempts: 2, error: 'failure 7', status: 'dead' }]);
    t.ctx.clock.advance(10_000);
    await queue.drain();
    assert.equal(calls.length, 1);
    assert.equal((await statusOf(id)).status, 'dead');
  });

  test('a hook that throws: its writes are undone, and the job is dead all the same', async () => {
    const reported: unknown[] = [];
    const queue = new JobQueue(t.ctx.db, t.ctx.clock, {
      workerId: 'hook-fails',
      onError: (error) => reported.push(error),
    });
    queue.register(
      'test.hook-fails',
      async () => {
        throw new Error('handler failed');
      },
      {
        maxAttempts: 1,
        onDead: async (tx, job) => {
          await tx.query("UPDATE jobs SET last_error = 'written by the hook' WHERE id = $1", [job.id]);
          throw new Error('hook failed');
        },
      },
    );
    const id = await queue.enqueue(t.ctx.db, 'test.hook-fails', {});
    await queue.drain();
    const row = await statusOf(id);
    assert.equal(row.status, 'dead');
    assert.equal(row.last_error, 'handler failed');
    assert.deepEqual(
      reported.map((error) => (error as Error).message),
      ['handler failed', 'hook failed'],
    );
  });
});
