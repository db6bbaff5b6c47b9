// Issue 31, finding 9: a restart of PostgreSQL (`pg_ctl restart -m fast`, what a failover or a minor upgrade
// does) and then of Redis, while sends are accepted and the worker dispatches them. The process stays up; a
// request during an outage answers 202 or 503 with Retry-After, never a 500 or a dropped connection; the job
// queue LISTENs again and claims by itself; afterwards every accepted send is stored once (retried with its
// Idempotency-Key) and dispatched. The servers are this file's own (helpers/private-servers.ts): the shared
// ones serve other test files meanwhile. Waits are on real time because the outage is real.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { JOBS_CHANNEL } from '../src/platform/jobs/store.ts';
import { httpRequest, isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, type Sender, sender } from './helpers/messaging.ts';
import {
  type PrivatePostgres,
  type PrivateRedis,
  privatePostgresMissing,
  privateRedisMissing,
  startPrivatePostgres,
  startPrivateRedis,
} from './helpers/private-servers.ts';

const missing = privatePostgresMissing() ?? privateRedisMissing();
/** Sends per window of the 30-per-minute send limit before the test moves the clock to the next minute. */
const SENDS_PER_MINUTE = 20;
const SENDERS = 3;

interface Outcome {
  key: string;
  status: number | 'dropped';
  retryAfter: string | null;
  id?: string;
  detail: string;
}

describe('PostgreSQL and Redis restart under load', {
  skip: missing && `${missing} (CI installs it)`,
}, () => {
  let postgres: PrivatePostgres;
  let redis: PrivateRedis;
  let t: TestApp;
  let acme: Sender;
  /** Every send the server accepted, by its Idempotency-Key. */
  const accepted = new Map<string, string>();
  /** The keys of sends answered 503, to be sent again once the outage is over. */
  const refused = new Map<string, unknown>();
  const uncaught: unknown[] = [];
  const monitor = (error: unknown) => void uncaught.push(error);
  let sends = 0;

  before(async () => {
    process.on('uncaughtExceptionMonitor', monitor);
    [postgres, redis] = await Promise.all([startPrivatePostgres(), startPrivateRedis()]);
    t = await startTestApp({ databaseServerUrl: postgres.url, config: { redisUrl: redis.url } });
    acme = await sender(t);
    t.ctx.jobs.start();
  });
  after(async () => {
    process.off('uncaughtExceptionMonitor', monitor);
    await t?.close().catch(() => {});
    await postgres?.destroy();
    await redis?.destroy();
  });

  /** One send with an Idempotency-Key, as a client would make it; a dropped connection is an outcome too. */
  async function sendOnce(key: string, body: unknown): Promise<Outcome> {
    // The 30 sends a minute limit is not under test: the clock moves to the next minute in good time.
    if (++sends % SENDS_PER_MINUTE === 0) t.ctx.clock.advance(61);
    try {
      const res = await httpRequest(t.url, 'POST', '/api/v2/messages/send', {
        apiKey: acme.key,
        body,
        headers: { 'idempotency-key': key },
      });
      const outcome = {
        key,
        status: res.status,
        retryAfter: res.headers.get('retry-after'),
        detail: res.text,
      };
      if (res.status === 202) {
        accepted.set(key, res.body.data.id);
        refused.delete(key);
      } else if (res.status === 503) refused.set(key, body);
      return res.status === 202 ? { ...outcome, id: res.body.data.id } : outcome;
    } catch (error) {
      return { key, status: 'dropped', retryAfter: null, detail: String(error) };
    }
  }

  /** Sends from SENDERS clients in a loop while `during` runs, and for `settleMs` after it. */
  async function burst(during: () => Promise<void>, settleMs = 1000): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    let sending = true;
    const clients = Array.from({ length: SENDERS }, async () => {
      while (sending) {
        outcomes.push(await sendOnce(randomUUID(), { to: freshNumber(), message: `burst ${sends}` }));
      }
    });
    await sleep(300);
    await during();
    await sleep(settleMs);
    sending = false;
    await Promise.all(clients);
    return outcomes;
  }

  /** Only 202, or 503 with Retry-After in the developer API's shape; never a 500 or a dropped connection. */
  function assertAnsweredWell(outcomes: Outcome[]): void {
    assert.ok(outcomes.length > 0);
    for (const outcome of outcomes) {
      assert.ok(outcome.status === 202 || outcome.status === 503, `${outcome.status}: ${outcome.detail}`);
      if (outcome.status === 503) {
        assert.match(outcome.retryAfter ?? '', /^[1-9][0-9]*$/, `503 without Retry-After: ${outcome.detail}`);
        assert.ok(isShapeB(JSON.parse(outcome.detail)), outcome.detail);
      }
    }
    assert.deepEqual(uncaught, [], 'an uncaught exception would have ended the process');
  }

  async function until(done: () => Promise<boolean>, what: string, limitMs = 20_000): Promise<void> {
    for (let waited = 0; waited < limitMs; waited += 100) {
      if (await done().catch(() => false)) return;
      await sleep(100);
    }
    assert.fail(`timed out after ${limitMs} ms waiting until ${what}`);
  }

  /** The worker's LISTEN connection, seen from the server: one backend whose last statement was LISTEN. */
  async function listening(): Promise<boolean> {
    const client = new pg.Client({ connectionString: t.database.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT 1 FROM pg_stat_activity WHERE query = $1 AND datname = current_database()`,
        [`LISTEN "${JOBS_CHANNEL}"`],
      );
      return rows.length > 0;
    } finally {
      await client.end();
    }
  }

  test('a fast restart of PostgreSQL mid-burst: every answer is 202 or 503 with Retry-After', async () => {
    const outcomes = await burst(() => postgres.restart(), 1500);
    assertAnsweredWell(outcomes);
    assert.ok(outcomes.some((outcome) => outcome.status === 202));
  });

  test('while PostgreSQL is down: 503 with Retry-After in each shape, and /health says unreachable', async () => {
    await postgres.stop();
    try {
      const sent = await sendOnce(randomUUID(), { to: freshNumber(), message: 'during the outage' });
      assert.equal(sent.status, 503, sent.detail);
      assert.match(sent.retryAfter ?? '', /^[1-9][0-9]*$/);
      assert.ok(isShapeB(JSON.parse(sent.detail)), sent.detail);
      const operator = await t.admin('GET', `/organizations/${acme.id}`);
      assert.equal(operator.status, 503, operator.text);
      assert.ok(isShapeA(operator.body), operator.text);
      assert.match(operator.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
      const health = await t.request('GET', '/health');
      assert.equal(health.status, 503, health.text);
      assert.deepEqual(health.body, {
        status: 'unavailable',
        database: 'postgres',
        databaseState: 'unreachable',
      });
      assert.match(health.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
    } finally {
      await postgres.start();
    }
    await until(async () => (await t.request('GET', '/health')).status === 200, '/health answers 200 again');
    const health = await t.request('GET', '/health');
    assert.deepEqual(health.body, { status: 'ok', database: 'postgres', databaseState: 'reachable' });
    assert.deepEqual(uncaught, []);
  });

  test('afterwards the job queue LISTENs again and a new send is dispatched without a restart', async () => {
    await until(listening, 'the worker LISTENs again');
    // Another organization's number: its first slot is now, not behind the burst's paced slots.
    const other = await sender(t);
    const res = await httpRequest(t.url, 'POST', '/api/v2/messages/send', {
      apiKey: other.key,
      body: { to: freshNumber(), message: 'after the restart' },
    });
    assert.equal(res.status, 202, res.text);
    await until(
      async () =>
        (
          await t.ctx.db.query<{ status: string }>('SELECT status FROM messages WHERE id = $1', [
            res.body.data.id,
          ])
        )[0]?.status === 'sent',
      'the message sent after the restart is dispatched',
      10_000,
    );
  });

  test('a restart of Redis mid-burst: every answer is 202 or 503 with Retry-After, and counting returns to Redis', async () => {
    const outcomes = await burst(() => redis.restart(), 1500);
    assertAnsweredWell(outcomes);
    // Down for longer: sends count in this instance's own counters meanwhile (docs/rate-limits.md).
    await redis.stop();
    try {
      const sent = await sendOnce(randomUUID(), { to: freshNumber(), message: 'while Redis is down' });
      assert.equal(sent.status, 202, sent.detail);
      assert.equal((await t.request('GET', '/health')).status, 200);
    } finally {
      await redis.start();
    }
    // The restarted Redis kept nothing (no persistence): counters in it now were written after the restart.
    const client = new Redis(redis.url, { lazyConnect: true });
    try {
      await client.connect();
      await until(async () => {
        await sendOnce(randomUUID(), { to: freshNumber(), message: 'counted in Redis again' });
        return (await client.keys('rl:api-sends:*')).length > 0;
      }, 'a send is counted in the restarted Redis');
    } finally {
      client.disconnect();
    }
  });

  test('every accepted send is stored once and dispatched; a 503 retried with its key is stored once', async () => {
    for (const [key, body] of [...refused]) {
      const again = await sendOnce(key, body);
      assert.equal(again.status, 202, again.detail);
    }
    assert.equal(refused.size, 0);
    const ids = [...accepted.values()];
    assert.equal(new Set(ids).size, accepted.size, 'one message per Idempotency-Key');
    const stored = await t.ctx.db.query<{ id: string }>(
      'SELECT id FROM messages WHERE organization_id = $1',
      [acme.id],
    );
    assert.deepEqual(stored.map((row) => row.id).sort(), [...ids].sort(), 'exactly the accepted messages');
    // Every paced slot and every retry of a dispatch that met the outage falls due.
    t.ctx.clock.advance(4 * 3600);
    const pending = async () =>
      (
        await t.ctx.db.query<{ id: string; status: string }>(
          `SELECT id, status FROM messages WHERE organization_id = $1 AND status NOT IN ('sent', 'delivered')`,
          [acme.id],
        )
      ).length;
    await until(async () => (await pending()) === 0, 'every accepted message is dispatched', 30_000);
    assert.deepEqual(uncaught, []);
  });
});
