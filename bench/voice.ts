// Voice (issue 14's targets). The whole product in one process, as `npm start` runs it (APP_ENV=development:
// the simulated PBX plays every call out by itself, on timers).
//   1. Calls started per second: POST /api/v2/calls under load (autocannon, CONNECTIONS connections, RATE_SECONDS
//      seconds), each answered 202 once the call is admitted against the region's capacity and recorded.
//      Baseline, same run: bare Fastify answering the same route with one INSERT of a call-shaped row.
//   2. Concurrent calls held: HOLD calls placed through the API and held at once (each rings for 4 s, then
//      talks for 30 s); the live calls are counted in the database while all are up, and the process's RSS is
//      sampled against its RSS before the first call.
// Run: npm run bench:voice   HOLD (1000), CONNECTIONS (20), RATE_SECONDS (5), DATABASE_URL for PostgreSQL
// (a scratch database is created and dropped).
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { createRuntime } from '../src/runtime.ts';
import { UNLIMITED_SENDER } from './fixtures.ts';
import { useScratchDatabase } from './scratch-database.ts';

const HOLD = Number(process.env.HOLD ?? 1000);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 20);
const RATE_SECONDS = Number(process.env.RATE_SECONDS ?? 5);
/** The developer API allows a key 100 requests a minute on voice routes: the bench spreads over many keys. */
const CALLS_PER_KEY = 90;

const config = loadConfig({
  APP_ENV: 'development',
  DATA_DIR: 'memory://',
  ADMIN_TOKEN: 'bench-admin-token-0123456789',
  ...process.env,
  LOG_LEVEL: 'silent',
});
const scratch = await useScratchDatabase(config, 'bench_voice');
const db = await openDatabase(config);
await migrate(db);
const ctx = createRuntime(config, db, pino({ level: 'silent' }));
const app = await buildApp(ctx);
await app.listen({ port: 0, host: '127.0.0.1' });
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const progress = (what: string) => process.stderr.write(`[${new Date().toISOString()}] ${what}\n`);
const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

// Setup (not measured): an organization with a number and enough keys, and room in the region for every call.
const org = await ctx.organizations.create({ name: 'Bench voice', ...UNLIMITED_SENDER });
const from = '+18005550100';
await ctx.numbers.add(org.id, { number: from, type: 'toll_free' });
await ctx.calls.setRegion('us', 1_000_000);
const keys: string[] = [];
const expectedCalls = HOLD + 2000 * RATE_SECONDS;
for (let i = 0; i < Math.ceil(expectedCalls / CALLS_PER_KEY); i++) {
  keys.push((await ctx.apiKeys.create(org.id, { name: `bench ${i}`, scopes: ['calls:write'] })).secret);
}
let nextKey = 0;
let nextCallee = 0;
const callRequest = () => ({
  method: 'POST' as const,
  path: '/api/v2/calls',
  headers: {
    'content-type': 'application/json',
    'x-api-key': keys[Math.floor(nextKey++ / CALLS_PER_KEY) % keys.length]!,
  },
  body: JSON.stringify({ from, to: `+1415555${String(1000 + (nextCallee++ % 8000)).padStart(4, '0')}` }),
});

async function load(target: string, options: { duration?: number; amount?: number; requests: () => object }) {
  const result = await autocannon({
    url: target,
    connections: CONNECTIONS,
    ...(options.amount ? { amount: options.amount } : { duration: options.duration }),
    requests: [{ setupRequest: (request: object) => ({ ...request, ...options.requests() }) }],
  });
  const ok = result['2xx'];
  return {
    ok,
    other: result.non2xx + result.errors,
    perSecond: ok / (result.duration || 1),
    p50: result.latency.p50,
  };
}

async function liveCalls(): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM calls WHERE ended_at IS NULL AND status IN ('ringing', 'in_progress')",
  );
  return row!.n;
}

async function waitForNoLiveCalls(): Promise<void> {
  for (;;) {
    const [row] = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM calls WHERE ended_at IS NULL',
    );
    if (row!.n === 0) return;
    await sleep(1000);
  }
}

// 2. HOLD concurrent calls, first: the process as it is after start, not after the load of part 1.
global.gc?.();
await sleep(2000);
const rssBefore = process.memoryUsage().rss;
progress(`placing ${HOLD} calls`);
const placedAt = Date.now();
const placed = await load(url, { amount: HOLD, requests: callRequest });
const placingSeconds = (Date.now() - placedAt) / 1000;
let peakLive = 0;
let peakRss = 0;
// Every call is up from 4 s after it was placed until 34 s after: sample through that window.
for (let i = 0; i < 12; i++) {
  await sleep(2000);
  peakLive = Math.max(peakLive, await liveCalls());
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}
await waitForNoLiveCalls();
const [ended] = await db.query<{ completed: number; other: number }>(
  `SELECT count(*) FILTER (WHERE status = 'completed')::int AS completed,
          count(*) FILTER (WHERE status <> 'completed')::int AS other FROM calls`,
);

// 1. Calls started per second, beside bare Fastify doing one INSERT per request.
await db.query(
  `CREATE TABLE bench_calls (id text PRIMARY KEY, organization_id text, direction text, from_number text,
                              to_number text, status text, created_at timestamptz)`,
);
const bare = Fastify();
let bareId = 0;
bare.post('/api/v2/calls', async (request, reply) => {
  const body = request.body as { from: string; to: string };
  const id = `call_${++bareId}`;
  await db.query(
    `INSERT INTO bench_calls (id, organization_id, direction, from_number, to_number, status, created_at)
     VALUES ($1, $2, 'outbound', $3, $4, 'queued', now())`,
    [id, org.id, body.from, body.to],
  );
  return reply.status(202).send({ success: true, data: { id, status: 'queued' } });
});
await bare.listen({ port: 0, host: '127.0.0.1' });
const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}`;

progress(`calls started per second: ${RATE_SECONDS} s each, ${CONNECTIONS} connections`);
const baseline = await load(bareUrl, { duration: RATE_SECONDS, requests: callRequest });
const started = await load(url, { duration: RATE_SECONDS, requests: callRequest });
await bare.close();
progress('waiting for those calls to end');
await waitForNoLiveCalls();

const lines = [
  `Voice bench, ${new Date().toISOString()}, engine ${db.engine}, Node ${process.version}`,
  '',
  `1. Calls started per second (POST /api/v2/calls, ${CONNECTIONS} connections, ${RATE_SECONDS} s)`,
  `   bare Fastify + one INSERT : ${baseline.perSecond.toFixed(0)}/s (p50 ${baseline.p50} ms, ${baseline.other} not 2xx)`,
  `   the product               : ${started.perSecond.toFixed(0)}/s (p50 ${started.p50} ms, ${started.other} not 2xx)` +
    `  ratio ${(started.perSecond / baseline.perSecond).toFixed(2)}`,
  '',
  `2. Concurrent calls held (${HOLD} placed in ${placingSeconds.toFixed(1)} s, ${placed.other} refused)`,
  `   live at once (ringing or talking, counted in the database): ${peakLive}`,
  `   RSS before ${mb(rssBefore)} MB, at peak ${mb(peakRss)} MB (+${mb(peakRss - rssBefore)} MB, ` +
    `${((peakRss - rssBefore) / 1024 / Math.max(1, peakLive)).toFixed(1)} KB a call)`,
  `   ended: ${ended!.completed} completed, ${ended!.other} otherwise`,
];
process.stdout.write(`${lines.join('\n')}\n`);

await app.close();
await ctx.rateLimiter.store.close();
await db.close();
await scratch.drop();
