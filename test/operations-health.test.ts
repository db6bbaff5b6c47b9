// The health probes (CONTRACT section 15, docs/operations.md "Health") over a real socket: liveness answers
// while the process runs; readiness says each part (database, Redis when configured, the worker when this
// process runs one) and is 503 with the failing part when the database cannot be reached, when it lacks a
// migration of this code, or when the configured Redis does not answer.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { PostgresDatabase } from '../src/platform/db/index.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('health probes on a healthy instance', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('live: 200 while the process runs', async () => {
    const res = await t.request('GET', '/health/live');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'ok' });
  });

  test('ready: 200 with the database ok; no worker part where this process runs no worker', async () => {
    const res = await t.request('GET', '/health/ready');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { database: 'ok' });
    // /health is as it was.
    const health = await t.request('GET', '/health');
    assert.deepEqual(health.body, { status: 'ok', database: t.ctx.db.engine, databaseState: 'reachable' });
  });

  test("ready: the worker's claim loop is reported while this process runs it", async () => {
    t.ctx.jobs.start();
    try {
      const res = await t.request('GET', '/health/ready');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { database: 'ok', worker: 'ok' });
    } finally {
      await t.ctx.jobs.stop();
    }
    assert.deepEqual((await t.request('GET', '/health/ready')).body, { database: 'ok' });
  });

  test('ready: 503 while the database lacks a migration of this code, 200 again once it has it', async () => {
    const [last] = await t.ctx.db.query<{ name: string; applied_at: Date }>(
      'SELECT name, applied_at FROM schema_migrations ORDER BY name DESC LIMIT 1',
    );
    await t.ctx.db.query('DELETE FROM schema_migrations WHERE name = $1', [last!.name]);
    try {
      const res = await t.request('GET', '/health/ready');
      assert.equal(res.status, 503);
      assert.deepEqual(res.body, { database: 'migrations_pending' });
      assert.ok(Number(res.headers.get('retry-after')) > 0);
      // Liveness is not readiness: the process still answers.
      assert.equal((await t.request('GET', '/health/live')).status, 200);
    } finally {
      await t.ctx.db.query('INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)', [
        last!.name,
        last!.applied_at,
      ]);
    }
    assert.equal((await t.request('GET', '/health/ready')).status, 200);
  });
});

test('ready: 503 with the database unreachable (nothing listens where DATABASE_URL points)', async () => {
  const db = PostgresDatabase.open(`postgres://nobody:secret@127.0.0.1:${await closedPort()}/none`);
  const t = await startTestApp({
    database: { db, connectAgain: () => db, drop: () => db.close() },
  });
  try {
    const res = await t.request('GET', '/health/ready');
    assert.equal(res.status, 503);
    assert.deepEqual(res.body, { database: 'unreachable' });
    assert.ok(Number(res.headers.get('retry-after')) > 0);
    assert.equal((await t.request('GET', '/health/live')).status, 200);
  } finally {
    await t.close();
    await db.close();
  }
});

test('ready: 503 with Redis configured and not answering; the database part is still ok', async () => {
  const t = await startTestApp({ config: { redisUrl: `redis://127.0.0.1:${await closedPort()}` } });
  try {
    const res = await t.request('GET', '/health/ready');
    assert.equal(res.status, 503);
    assert.deepEqual(res.body, { database: 'ok', redis: 'unreachable' });
  } finally {
    await t.close();
  }
});
