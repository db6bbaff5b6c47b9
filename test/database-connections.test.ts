// The connections we hold to PostgreSQL survive their loss (issue 31, finding 9), one at a time: the job
// queue's LISTEN connection and a pooled connection lent to a transaction, each ended by the server
// (pg_terminate_backend, as a restart ends every session) while no statement runs on it. Neither may
// surface as an unhandled 'error' event (which ends the process); the LISTEN connection is made again and
// LISTENs again; the transaction fails with an error that answers 503. Then which errors mean "unreachable".
// On DATABASE_URL when set (only this file's own sessions are ended), else on a private cluster.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { PostgresDatabase } from '../src/platform/db/index.ts';
import { isDatabaseUnavailable } from '../src/platform/db/unavailable.ts';
import { renderError } from '../src/platform/errors.ts';
import {
  type PrivatePostgres,
  privatePostgresMissing,
  startPrivatePostgres,
} from './helpers/private-servers.ts';

const shared = process.env.DATABASE_URL;
const missing = shared ? undefined : privatePostgresMissing();

describe('a lost connection', { skip: missing && `${missing} and DATABASE_URL is not set` }, () => {
  let server: PrivatePostgres | undefined;
  let db: PostgresDatabase;
  let admin: pg.Client;
  const uncaught: unknown[] = [];
  const monitor = (error: unknown) => void uncaught.push(error);

  before(async () => {
    process.on('uncaughtExceptionMonitor', monitor);
    if (!shared) server = await startPrivatePostgres();
    const url = shared ?? server!.url;
    db = PostgresDatabase.open(url);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });
  after(async () => {
    process.off('uncaughtExceptionMonitor', monitor);
    await admin?.end();
    await db?.close();
    await server?.destroy();
  });

  const terminate = (pid: number) => admin.query('SELECT pg_terminate_backend($1)', [pid]);

  async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
    for (let waited = 0; waited < 10_000; waited += 20) {
      if (await done()) return;
      await sleep(20);
    }
    assert.fail(`timed out waiting until ${what}`);
  }

  test('the LISTEN connection, ended by the server, is made again and LISTENs again', async () => {
    const channel = `lost_listener_${process.pid}`;
    const payloads: (string | undefined)[] = [];
    const errors: unknown[] = [];
    const stop = await db.listen({
      channel,
      onNotify: (payload) => void payloads.push(payload),
      onError: (error) => void errors.push(error),
    });
    try {
      const backends = async () =>
        (
          await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE query = $1', [
            `LISTEN "${channel}"`,
          ])
        ).rows.map((row) => row.pid);
      const [first] = await backends();
      assert.ok(first, 'listening');
      await terminate(first);
      // Made again (after a pause of 1 s): the listener is told, without a payload, to look for itself.
      await until(() => payloads.includes(undefined), 'the listener hears it is listening again');
      const [second] = await backends();
      assert.ok(second !== undefined && second !== first, 'a new session LISTENs');
      assert.ok(errors.some(isDatabaseUnavailable), 'the loss was reported to onError');
      await admin.query('SELECT pg_notify($1, $2)', [channel, 'after']);
      await until(() => payloads.includes('after'), 'a NOTIFY arrives on the new connection');
      assert.deepEqual(uncaught, []);
    } finally {
      await stop();
    }
  });

  test('a transaction whose connection the server ends between statements fails with a 503 error', async () => {
    const failure = await db
      .transaction(async (tx) => {
        const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await terminate(row!.pid);
        // The server's FATAL arrives while no statement runs on the connection.
        await sleep(200);
        await tx.query('SELECT 1');
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    assert.ok(isDatabaseUnavailable(failure), `not a loss of the database: ${String(failure)}`);
    assert.equal(renderError(failure, 'B').status, 503);
    assert.deepEqual(uncaught, [], 'an unhandled error event would have ended the process');
    // The broken connection was thrown away: the pool lends working ones.
    for (let i = 0; i < 12; i++) {
      assert.deepEqual(await db.transaction((tx) => tx.query('SELECT 1 AS one')), [{ one: 1 }]);
    }
  });
});

describe('which errors mean the database cannot be reached', () => {
  const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  const refused = withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432');

  test('lost, refused, restarting or full: 503 with Retry-After in both shapes, no driver text', () => {
    for (const error of [
      withCode('57P01', 'terminating connection due to administrator command'),
      withCode('57P03', 'the database system is starting up'),
      withCode('08006'),
      withCode('53300'),
      refused,
      withCode('ECONNRESET'),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new AggregateError([refused, withCode('ECONNREFUSED')], 'connect failed'),
    ]) {
      assert.equal(isDatabaseUnavailable(error), true, String(error));
      for (const shape of ['A', 'B'] as const) {
        const rendered = renderError(error, shape);
        assert.equal(rendered.status, 503, `${shape} ${String(error)}`);
        assert.equal(rendered.headers['Retry-After'], '5');
        assert.equal(JSON.stringify(rendered.body).includes(error.message), false);
      }
      assert.equal(renderError(error, 'B').body.code, 'SERVICE_UNAVAILABLE');
    }
  });

  test('a fault of ours stays a 500: a bad statement, a protocol violation, a closed database', () => {
    for (const error of [
      withCode('23505', 'duplicate key'),
      withCode('42601', 'syntax error'),
      withCode('08P01', 'protocol violation'),
      new Error('PGlite is closed'),
      new Error('Cannot use a pool after calling end on the pool'),
      new TypeError('undefined is not a function'),
      'a string',
      undefined,
    ]) {
      assert.equal(isDatabaseUnavailable(error), false, String(error));
      assert.equal(renderError(error, 'B').status, 500);
    }
  });
});
