// Webhook throughput: events recorded in the outbox, fanned out, signed and delivered by the job queue to a
// local receiver, measured end to end in events delivered per second. Beside it, the baseline: the same
// signed POSTs sent straight through the transport at the same concurrency, with no database. The ratio says
// what the durable pipeline (outbox, delivery rows, jobs, attempt log) costs on this machine.
// Run: npm run bench:webhooks   (BENCH_EVENTS=2000; DATABASE_URL for PostgreSQL, where a scratch database is
// created and dropped; default embedded PGlite)
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../src/config.ts';
import { ContactOptedOut } from '../src/modules/contacts/events.ts';
import { WebhookTransport } from '../src/modules/webhooks/transport.ts';
import { openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { createRuntime } from '../src/runtime.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);
const config = loadConfig({ APP_ENV: 'test', DATA_DIR: 'memory://', ...process.env, LOG_LEVEL: 'silent' });
const CONCURRENCY = config.workerConcurrency; // the worker's slots (WORKER_CONCURRENCY), which drain() uses

let received = 0;
const receiver = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    received++;
    response.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;

// Baseline: signed POSTs straight to the receiver.
const transport = new WebhookTransport({ guarded: false });
const signer = new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`);
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
      const id = `evt_${next++}`;
      const now = new Date();
      await transport.post(
        receiverUrl,
        {
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': signer.sign(id, now, body),
        },
        body,
      );
    }
  }),
);
const baselineRate = EVENTS / ((performance.now() - baselineStart) / 1000);

// The product: outbox → fan-out → delivery jobs → receiver.
// On a PostgreSQL server the bench works in a database of its own, dropped at the end, never in the one named.
const server = config.databaseUrl;
const scratch = `bench_webhooks_${randomBytes(4).toString('hex')}`;
if (server) {
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${scratch}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${scratch}`;
  config.databaseUrl = url.toString();
}
const db = await openDatabase(config);
await migrate(db);
const ctx = createRuntime(config, db, pino({ level: 'silent' }));
const organization = await ctx.organizations.create({ name: 'Bench' });
await ctx.webhooks.create(organization.id, { url: receiverUrl, events: ['contact.opted_out'] });
for (let i = 0; i < EVENTS; i++) {
  await db.transaction((tx) =>
    ctx.events.record(tx, ContactOptedOut, {
      organizationId: organization.id,
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
received = 0;
const start = performance.now();
await ctx.jobs.drain(100_000);
const seconds = (performance.now() - start) / 1000;
const [{ succeeded }] = await db.query<{ succeeded: number }>(
  "SELECT count(*) AS succeeded FROM webhook_deliveries WHERE status = 'succeeded'",
);

console.log(`\n${EVENTS} events, concurrency ${CONCURRENCY}, database: ${db.engine}\n`);
console.log(`baseline  signed POSTs straight to the receiver   ${baselineRate.toFixed(0).padStart(6)} /s`);
console.log(
  `product   outbox → fan-out → jobs → receiver       ${(succeeded / seconds).toFixed(0).padStart(6)} events delivered/s` +
    `  (${(succeeded / seconds / baselineRate).toFixed(2)}x baseline; ${succeeded}/${EVENTS} succeeded, ${received} received)`,
);

const unfinished = await db.query(
  "SELECT status, last_error, attempts FROM webhook_deliveries WHERE status <> 'succeeded' LIMIT 5",
);
if (unfinished.length > 0) console.log('not delivered (first 5):', unfinished);
await ctx.jobs.stop();
await ctx.rateLimiter.store.close();
await db.close();
if (server) {
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${scratch} WITH (FORCE)`);
  await admin.end();
}
receiver.close();
process.exit(0);
