// Webhook throughput: events recorded in the outbox, fanned out, signed and delivered by the job queue to a
// local receiver, measured end to end in events delivered per second. Beside it, the baseline: the same
// signed POSTs sent straight through the transport at the same concurrency, with no database. The ratio says
// what the durable pipeline (outbox, delivery rows, jobs, attempt log) costs on this machine.
// The receiver runs in a process of its own, as a real one would, so its work is not done on the worker's
// event loop. The events go to ENDPOINTS endpoints (one per organization, in turn): one endpoint alone is
// bounded by its own concurrency cap (ENDPOINT_CONCURRENCY attempts in flight at first, growing while the
// receiver keeps up: src/modules/webhooks/endpoint-pace.ts), so several show what the pipeline itself can do.
// Also printed: the statements the product sent per event while delivering (the recording's own, the same
// before and after issue 38, are not counted), the connections the receiver accepted (kept alive, they are
// far fewer than the deliveries), and the CPU seconds the worker process, the receiver and the PostgreSQL
// server (when it runs on this machine) spent, which on a small machine say what bounds the figure.
// Run: npm run bench:webhooks   (BENCH_EVENTS=2000, BENCH_ENDPOINTS=8; DATABASE_URL for PostgreSQL, where a
// scratch database is created and dropped; default embedded PGlite)
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import { ContactOptedOut } from '../src/modules/contacts/events.ts';
import * as delivery from '../src/modules/webhooks/delivery.ts';
import { signedHeaders } from '../src/modules/webhooks/signature.ts';
import { WebhookTransport } from '../src/modules/webhooks/transport.ts';
import { type Database, openDatabase, type Queryable } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { createRuntime } from '../src/runtime.ts';
import { useScratchDatabase } from './scratch-database.ts';

if (process.argv[2] === '--receiver') {
  // The receiver: answers every POST with 204 once its body is read; tells its count and CPU when asked.
  let received = 0;
  let connections = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received++;
      response.writeHead(204).end();
    });
  });
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as { port: number }).port }));
  process.on('message', (message) => {
    if (message === 'report') {
      const cpu = process.cpuUsage();
      process.send!({ received, connections, cpuSeconds: (cpu.user + cpu.system) / 1e6 });
    } else if (message === 'reset') {
      received = 0;
      connections = 0;
      process.send!({ reset: true });
    } else if (message === 'stop') {
      process.exit(0);
    }
  });
} else {
  await main();
}

async function main() {
  const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);
  const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS ?? 8);
  const config = loadConfig({ APP_ENV: 'test', DATA_DIR: 'memory://', ...process.env, LOG_LEVEL: 'silent' });
  // Deliveries in flight at once in the worker: their own slots (WEBHOOK_CONCURRENCY), which drain() fills.
  const CONCURRENCY = config.webhookConcurrency;

  const receiver = fork(new URL(import.meta.url).pathname, ['--receiver'], { execArgv: process.execArgv });
  const [{ port }] = (await once(receiver, 'message')) as [{ port: number }];
  const receiverUrl = `http://127.0.0.1:${port}/hooks`;

  // Baseline: signed POSTs straight to the receiver.
  const transport = new WebhookTransport({ guarded: false });
  const secret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
  const body = JSON.stringify({
    type: 'contact.opted_out',
    timestamp: new Date().toISOString(),
    data: { n: 1 },
  });
  let next = 0;
  const baselineStart = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < EVENTS) {
        // Signed by the product's own signer, so the two differ only in the pipeline.
        await transport.post(receiverUrl, signedHeaders(`evt_${next++}`, new Date(), body, [secret]), body);
      }
    }),
  );
  const baselineRate = EVENTS / ((performance.now() - baselineStart) / 1000);

  // The product: outbox → fan-out → delivery jobs → receiver.
  const scratch = await useScratchDatabase(config, 'bench_webhooks');
  const db = await openDatabase(config);
  await migrate(db);
  const statements = countStatements(db);
  // Warnings shown: a job that fails (and is retried later, past the end of the run) says why.
  const ctx = createRuntime(config, db, pino({ level: 'warn' }, pino.destination(2)));
  const organizations: string[] = [];
  for (let i = 0; i < ENDPOINTS; i++) {
    const organization = await ctx.organizations.create({ name: `Bench ${i}` });
    await ctx.webhooks.create(organization.id, { url: receiverUrl, events: ['contact.opted_out'] });
    organizations.push(organization.id);
  }
  for (let i = 0; i < EVENTS; i++) {
    await db.transaction((tx) =>
      ctx.events.record(tx, ContactOptedOut, {
        organizationId: organizations[i % ENDPOINTS]!,
        data: {
          contactId: null,
          phone: `+1202555${String(i).padStart(4, '0')}`,
          method: 'api',
          reason: null,
          optedOutAt: new Date().toISOString(),
        },
      }),
    );
  }
  receiver.send('reset');
  await once(receiver, 'message');
  const before = {
    receiver: await report(receiver),
    worker: process.cpuUsage(),
    postgres: scratch.name ? postgresCpuSeconds(scratch.name) : undefined,
    statements: statements.count,
  };
  const start = performance.now();
  await ctx.jobs.drain(100_000);
  const seconds = (performance.now() - start) / 1000;
  const after = {
    receiver: await report(receiver),
    worker: process.cpuUsage(before.worker),
    postgres: scratch.name ? postgresCpuSeconds(scratch.name) : undefined,
    statements: statements.count,
  };
  const [{ succeeded }] = await db.query<{ succeeded: number }>(
    "SELECT count(*) AS succeeded FROM webhook_deliveries WHERE status = 'succeeded'",
  );

  const cap = (delivery as Record<string, unknown>).ENDPOINT_CONCURRENCY ?? 'none';
  const maxCap = (delivery as Record<string, unknown>).MAX_ENDPOINT_CONCURRENCY ?? cap;
  const caps = await db.query<{ cap: number }>('SELECT cap FROM job_key_caps ORDER BY cap');
  console.log(
    `\n${EVENTS} events to ${ENDPOINTS} endpoint(s), deliveries in flight at most ${CONCURRENCY} ` +
      `(worker slots ${config.workerConcurrency}), ` +
      `per-endpoint cap ${cap} at first, up to ${maxCap} (at the end: ${caps.map((row) => row.cap).join(', ') || cap}), ` +
      `database: ${db.engine}\n`,
  );
  console.log(`baseline  signed POSTs straight to the receiver   ${baselineRate.toFixed(0).padStart(6)} /s`);
  console.log(
    `product   outbox → fan-out → jobs → receiver       ${(succeeded / seconds).toFixed(0).padStart(6)} events delivered/s` +
      `  (${(succeeded / seconds / baselineRate).toFixed(2)}x baseline; ${succeeded}/${EVENTS} succeeded, ` +
      `${after.receiver.received} received over ${after.receiver.connections} connections)`,
  );
  const cpu = (value: number) => `${value.toFixed(1)} s (${((value / seconds) * 100).toFixed(0)}%)`;
  console.log(
    `          ${((after.statements - before.statements) / EVENTS).toFixed(1)} statements per event; ` +
      `${seconds.toFixed(1)} s: CPU worker ${cpu((after.worker.user + after.worker.system) / 1e6)}, ` +
      `receiver ${cpu(after.receiver.cpuSeconds - before.receiver.cpuSeconds)}` +
      (before.postgres !== undefined && after.postgres !== undefined
        ? `, PostgreSQL ${cpu(after.postgres - before.postgres)}`
        : ''),
  );

  const unfinished = await db.query(
    "SELECT status, last_error, attempts FROM webhook_deliveries WHERE status <> 'succeeded' LIMIT 5",
  );
  if (unfinished.length > 0) console.log('not delivered (first 5):', unfinished);
  await ctx.jobs.stop();
  await ctx.rateLimiter.store.close();
  await db.close();
  await scratch.drop();
  receiver.send('stop');
  process.exit(0);
}

interface ReceiverReport {
  received: number;
  connections: number;
  cpuSeconds: number;
}

async function report(receiver: ChildProcess): Promise<ReceiverReport> {
  receiver.send('report');
  const [message] = (await once(receiver, 'message')) as [ReceiverReport];
  return message;
}

/** Counts the statements the product sends (a transaction's BEGIN and COMMIT included). */
function countStatements(db: Database): { count: number } {
  const counter = { count: 0 };
  const query = db.query.bind(db);
  const transaction = db.transaction.bind(db);
  db.query = (sql, params) => {
    counter.count++;
    return query(sql, params);
  };
  db.transaction = (work) => {
    counter.count += 2;
    return transaction((tx) =>
      work({
        query: (sql, params) => {
          counter.count++;
          return tx.query(sql, params);
        },
        exec: (sql) => tx.exec(sql),
      } satisfies Queryable),
    );
  };
  return counter;
}

/**
 * CPU seconds spent so far by the PostgreSQL server's backends serving `database` (their command line names
 * it: `postgres: user database address state`), found through /proc when the server runs on this machine;
 * undefined when none is found. Other databases' work on a shared server is not counted.
 */
function postgresCpuSeconds(database: string): number | undefined {
  const ticksPerSecond = 100; // USER_HZ on Linux
  let total: number | undefined;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!command.startsWith('postgres: ') || !command.split(' ').includes(database)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // utime and stime are fields 14 and 15 of stat (here counted from field 3, after the command name).
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total = (total ?? 0) + (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
    } catch {
      // A process that ended meanwhile, or one we may not read.
    }
  }
  return total;
}
