// The embedded database in its own thread (src/platform/db/pglite-threaded.ts), as the server opens it: the
// same answers, errors and transactions as PGlite in the test's thread, and the process free while it works.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { isUniqueViolation, openDatabase, type Queryable } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { compactParams, PgliteThreadDatabase, preopenPglite } from '../src/platform/db/pglite-threaded.ts';
import { createRuntime } from '../src/runtime.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'pglite-thread-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

describe('PGlite in its own thread', () => {
  test('rows, types, errors, transactions and notifications as in one thread', async () => {
    const db = await openDatabase({ dataDir });
    assert.ok(db instanceof PgliteThreadDatabase, 'the server opens the embedded database in a thread');
    try {
      await db.exec(`CREATE TABLE items (id int PRIMARY KEY, name text UNIQUE, at timestamptz, data bytea,
                     big int8, doc jsonb)`);
      const at = new Date('2026-11-27T10:00:00.123Z');
      await db.query('INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6)', [
        1,
        'one',
        at,
        Buffer.from([0, 1, 255]),
        9_007_199_254_740_991,
        { nested: [1, 'two'] },
      ]);
      const [row] = await db.query<Record<string, unknown>>('SELECT * FROM items');
      assert.deepEqual((row!.at as Date).toISOString(), at.toISOString());
      assert.deepEqual([...(row!.data as Uint8Array)], [0, 1, 255]);
      assert.equal(row!.big, 9_007_199_254_740_991, 'int8 read as a number, as in one thread');
      assert.deepEqual(row!.doc, { nested: [1, 'two'] });

      // PostgreSQL's error fields reach the services, which read them.
      const duplicate = await db.query("INSERT INTO items (id, name) VALUES (2, 'one')").catch((e) => e);
      assert.ok(duplicate instanceof Error);
      assert.ok(isUniqueViolation(duplicate, 'items_name_key'), JSON.stringify(duplicate));
      const syntax = await db.query('SELEC 1').catch((e) => e);
      assert.equal(syntax.code, '42601');

      // Committed when the work resolves; rolled back when it throws, or when a statement of it failed.
      await db.transaction(async (tx) => {
        await tx.query("INSERT INTO items (id, name) VALUES (2, 'two')");
        await tx.exec("INSERT INTO items (id, name) VALUES (3, 'three')");
      });
      await assert.rejects(
        db.transaction(async (tx) => {
          await tx.query("INSERT INTO items (id, name) VALUES (4, 'four')");
          throw new Error('changed my mind');
        }),
        /changed my mind/,
      );
      await assert.rejects(
        db.transaction(async (tx) => {
          await tx.query("INSERT INTO items (id, name) VALUES (5, 'five')");
          await tx.query("INSERT INTO items (id, name) VALUES (6, 'one')");
        }),
        (error: { code?: string }) => error.code === '23505',
      );
      const ids = await db.query<{ id: number }>('SELECT id FROM items ORDER BY id');
      assert.deepEqual(
        ids.map((r) => r.id),
        [1, 2, 3],
      );

      // Transactions at once are taken one after another, none losing the other's update.
      await db.exec('CREATE TABLE counter (n int); INSERT INTO counter VALUES (0)');
      await Promise.all(
        Array.from({ length: 20 }, () =>
          db.transaction(async (tx) => {
            const [{ n }] = (await tx.query<{ n: number }>('SELECT n FROM counter')) as [{ n: number }];
            await new Promise((resolve) => setImmediate(resolve));
            await tx.query('UPDATE counter SET n = $1', [n + 1]);
          }),
        ),
      );
      assert.deepEqual(await db.query('SELECT n FROM counter'), [{ n: 20 }]);

      // A notification reaches its listener when the notifying transaction commits, and not after unlisten.
      const heard: (string | undefined)[] = [];
      const stop = await db.listen!({ channel: 'news', onNotify: (payload) => heard.push(payload) });
      await db.transaction(async (tx) => {
        await tx.query("SELECT pg_notify('news', 'hello')");
        assert.deepEqual(heard, [], 'not before the commit');
      });
      for (let i = 0; i < 50 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      assert.deepEqual(heard, ['hello']);
      await stop();
      await db.query("SELECT pg_notify('news', 'gone')");
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(heard, ['hello']);
    } finally {
      await db.close();
    }
    await assert.rejects(db.query('SELECT 1'), /closed/);

    // What was committed is on disk for the next open.
    const again = await openDatabase({ dataDir });
    try {
      assert.deepEqual(await again.query('SELECT count(*)::int AS n FROM items'), [{ n: 3 }]);
    } finally {
      await again.close();
    }
  });

  test('the thread started before the modules load is the one opened; another directory gets its own', async () => {
    const early = mkdtempSync(join(tmpdir(), 'pglite-early-'));
    try {
      preopenPglite(early);
      const db = await openDatabase({ dataDir: early });
      assert.deepEqual(await migrate(db).then((applied) => applied.length > 40), true);
      await db.close();
      preopenPglite(early);
      const other = await openDatabase({ dataDir: 'memory://' });
      assert.deepEqual(
        await other.query('SELECT count(*)::int AS n FROM pg_tables WHERE tablename = $1', ['messages']),
        [{ n: 0 }],
      );
      await other.close();
    } finally {
      rmSync(early, { recursive: true, force: true });
    }
  });

  test('the event loop turns while the database works', async () => {
    const db = await openDatabase({ dataDir: 'memory://' });
    try {
      let turns = 0;
      const ticking = setInterval(() => turns++, 5);
      await db.query('SELECT count(*) FROM generate_series(1, 3000000)');
      clearInterval(ticking);
      assert.ok(turns >= 3, `timers ran ${turns} times during a long statement`);
    } finally {
      await db.close();
    }
  });

  test('the server builds its runtime and app without a statement, so the migrations may run meanwhile', async () => {
    // serve.ts starts the migrations and builds the app while they run: a statement sent while building would
    // race them on PostgreSQL (a table not made yet on a first start).
    const config = loadConfig({ DATA_DIR: 'memory://', APP_ENV: 'development' });
    const db = await openDatabase(config);
    await migrate(db);
    const sent: string[] = [];
    const { query, exec, transaction } = db;
    db.query = ((sql: string, params?: unknown[]) => {
      sent.push(sql);
      return query.call(db, sql, params);
    }) as typeof db.query;
    db.exec = (sql) => {
      sent.push(sql);
      return exec.call(db, sql);
    };
    db.transaction = ((work: Parameters<typeof db.transaction>[0]) => {
      sent.push('BEGIN');
      return transaction.call(db, work);
    }) as typeof db.transaction;
    const runtime = createRuntime(config, db, pino({ level: 'silent' }));
    await runtime.rateLimiter.store.ready();
    const app = await buildApp(runtime);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(sent, []);
    await app.close();
    await db.close();
  });

  test('a parameter viewing part of a larger buffer crosses as its own bytes, not the whole buffer', async () => {
    // A file's bytes cut out of an upload of 8 MiB: the clone of the view alone would copy all 8 MiB.
    const upload = Buffer.alloc(8 * 1024 * 1024, 7);
    upload.write('the file', 4096);
    const file = upload.subarray(4096, 4104);
    const [sent] = compactParams([file]) as Uint8Array[];
    assert.equal(sent!.buffer.byteLength, 8, 'only the viewed bytes are copied');
    assert.deepEqual(Buffer.from(sent!).toString(), 'the file');
    const untouched = [1, 'text', new Uint8Array(4)];
    assert.equal(compactParams(untouched), untouched, 'nothing to compact: the same array');

    const db = await openDatabase({ dataDir: 'memory://' });
    try {
      const [row] = await db.query<{ data: Uint8Array; length: number }>(
        'SELECT $1::bytea AS data, length($1::bytea) AS length',
        [file],
      );
      assert.equal(row!.length, 8);
      assert.equal(Buffer.from(row!.data).toString(), 'the file');
      await db.transaction(async (tx) => {
        const [inTx] = await tx.query<{ data: Uint8Array }>('SELECT $1::bytea AS data', [file]);
        assert.equal(Buffer.from(inTx!.data).toString(), 'the file');
      });
    } finally {
      await db.close();
    }
  });

  test('nothing sent waits forever: after its transaction, with a value that cannot cross, while closing', async () => {
    const db = await openDatabase({ dataDir: 'memory://' });
    let kept: Queryable | undefined;
    await db.transaction(async (tx) => {
      kept = tx;
    });
    await assert.rejects(kept!.query('SELECT 1'), /transaction has ended/);
    await assert.rejects(db.query('SELECT $1::text', [() => 'a function']), /could not be cloned/);
    const closing = db.close();
    const late = db.query('SELECT 1').then(
      () => new Error('answered'),
      (error: Error) => error,
    );
    await closing;
    assert.match((await late).message, /closed/);
  });

  test('a process started with Node options of its own (a heap limit, --input-type) opens it', () => {
    const script = `
      const { openDatabase } = await import(${JSON.stringify(new URL('../src/platform/db/index.ts', import.meta.url).href)});
      const db = await openDatabase({ dataDir: 'memory://' });
      console.log(JSON.stringify(await db.query('SELECT 41 + 1 AS n')));
      await db.close();`;
    const run = spawnSync(
      process.execPath,
      ['--max-old-space-size=512', '--import', 'tsx', '--input-type=module', '-e', script],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout.trim()), [{ n: 42 }]);
  });

  test('a thread lost after the open ends the process with the error, rather than leaving it serving', () => {
    const script = `
      const { openDatabase } = await import(${JSON.stringify(new URL('../src/platform/db/index.ts', import.meta.url).href)});
      const db = await openDatabase({ dataDir: 'memory://' });
      await db.query('SELECT 1');
      setInterval(() => {}, 1000); // a server's sockets would keep the process up
      const waiting = db.query('SELECT pg_sleep(5)').catch((error) => console.log('refused: ' + error.message));
      await new Promise((resolve) => setTimeout(resolve, 100));
      await db.worker.terminate(); // the thread dies under it (a crash of PGlite's would end it the same way)
      await waiting;`;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.match(run.stdout, /refused: the database's thread exited/, 'the waiting statement failed');
    assert.notEqual(run.status, 0, 'the process ended with an error');
    assert.match(run.stderr, /the embedded database's thread was lost/);
  });
});
