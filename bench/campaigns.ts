// A large campaign (issue 13's targets): RECIPIENTS recipients, enterprise pacing (100/s per organization), SENDERS
// toll-free numbers (3/s each: 150/s with 50), so the plan is the bound. The whole product in one process, as
// `npm start` runs it (API and worker, real clock, the simulated carrier reporting receipts by itself).
//   1. Launch: POST /campaigns/{id}/launch (snapshot of every recipient, the limit check, the first run
//      enqueued). Baseline, same run: one INSERT … SELECT of as many rows into a table of the recipients' shape.
//   2. Sustained send rate: messages handed to the carrier per second over WINDOW seconds after a warm-up,
//      against the bound (the lower of plan speed and the numbers' carrier speed).
//   3. Memory: the process's RSS through the run, against its RSS after the launch.
//   4. Statistics: GET /campaigns/{id} mid-campaign under load (autocannon, 10 connections), against bare
//      Fastify serving the same JSON.
// Run: npm run bench:campaigns   RECIPIENTS (100000), SENDERS (50), WARMUP (10 s), WINDOW (60 s),
//   DATABASE_URL for PostgreSQL (a scratch database is created and dropped).
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { PLAN_MESSAGES_PER_SECOND } from '../src/modules/campaigns/index.ts';
import { openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { createRuntime } from '../src/runtime.ts';
import { UNLIMITED_SENDER } from './fixtures.ts';
import { useScratchDatabase } from './scratch-database.ts';

const RECIPIENTS = Number(process.env.RECIPIENTS ?? 100_000);
const SENDERS = Number(process.env.SENDERS ?? 50);
const WARMUP = Number(process.env.WARMUP ?? 10);
const WINDOW = Number(process.env.WINDOW ?? 60);
const TOLL_FREE_PER_SECOND = 3;

const config = loadConfig({
  APP_ENV: 'development',
  DATA_DIR: 'memory://',
  ADMIN_TOKEN: 'bench-admin-token-0123456789',
  ...process.env,
  LOG_LEVEL: 'silent',
});
const scratch = await useScratchDatabase(config, 'bench_campaigns');
const db = await openDatabase(config);
await migrate(db);
const ctx = createRuntime(config, db, pino({ level: 'silent' }));
const app = await buildApp(ctx);
await app.listen({ port: 0, host: '127.0.0.1' });
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

const progress = (what: string) => process.stderr.write(`[${new Date().toISOString()}] ${what}\n`);

// Setup (not measured): the organization, its numbers and key, RECIPIENTS contacts in one list.
const org = await ctx.organizations.create({ name: 'Bench campaigns', ...UNLIMITED_SENDER });
const senders: string[] = [];
for (let i = 0; i < SENDERS; i++) {
  const number = `+1800555${String(2000 + i).padStart(4, '0')}`;
  await ctx.numbers.add(org.id, { number, type: 'toll_free' });
  senders.push(number);
}
const { secret } = await ctx.apiKeys.create(org.id, { name: 'bench', scopes: ['*'] });
const api = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${url}/api/v2${path}`, {
    method,
    headers: { 'x-api-key': secret, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await response.json()) as { data: Record<string, unknown> };
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json.data;
};
const list = (await api('POST', '/contact-lists', { name: 'Everyone' })).id as string;
await db.query(
  `INSERT INTO contacts (id, organization_id, phone, first_name, created_at, updated_at)
   SELECT 'ct_bench' || n, $1, '+1202' || lpad(n::text, 7, '0'), 'Ann' || n, now(), now()
     FROM generate_series(1, $2::int) AS n`,
  [org.id, RECIPIENTS],
);
await db.query(
  `INSERT INTO contact_list_members (list_id, contact_id, added_at)
   SELECT $1, id, now() FROM contacts WHERE organization_id = $2`,
  [list, org.id],
);
const campaign = (await api('POST', '/campaigns', {
  name: 'Bench',
  message: 'Hi {{first_name}}, our spring sale starts today.',
  contactListIds: [list],
  senders,
  quietHours: null,
})) as { id: string };

progress('setup done');

const measure = async (target: string, headers: Record<string, string> = {}) => {
  const result = await autocannon({ url: target, connections: 10, duration: 5, headers });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
  };
};
// The same statistics on the idle product, before the launch: what a request costs with nothing else running.
const idleStats = await measure(`${url}/api/v2/campaigns/${campaign.id}`, { 'x-api-key': secret });

// 1. Launch, beside the bare INSERT … SELECT of as many rows.
await db.exec(
  `CREATE TEMP TABLE IF NOT EXISTS bench_recipients (LIKE campaign_recipients INCLUDING DEFAULTS)`,
);
let started = performance.now();
await db.query(
  `INSERT INTO bench_recipients (campaign_id, position, phone, contact_id, sender, status)
   SELECT 'x', row_number() OVER (), phone, id, '+18005552000', 'pending' FROM contacts WHERE organization_id = $1`,
  [org.id],
);
const bareMs = performance.now() - started;
await db.exec('DROP TABLE bench_recipients');

const rssBefore = process.memoryUsage().rss;
ctx.jobs.start();
started = performance.now();
await api('POST', `/campaigns/${campaign.id}/launch`);
const launchMs = performance.now() - started;
console.log(
  `Campaign on ${db.engine}: ${RECIPIENTS} recipients, ${SENDERS} toll-free senders, enterprise plan`,
);
console.log(
  `  launch                                  ${(launchMs / 1000).toFixed(2)} s   ` +
    `(bare INSERT … SELECT of ${RECIPIENTS} rows: ${(bareMs / 1000).toFixed(2)} s, ${(launchMs / bareMs).toFixed(1)}x)`,
);

progress('launched');

// 2 and 3. The rate over the window, and RSS throughout.
const handed = async () =>
  (
    await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM messages WHERE campaign_id = $1 AND status <> 'queued'`,
      [campaign.id],
    )
  )[0]!.n;
const rssAfterLaunch = process.memoryUsage().rss;
let rssMax = rssAfterLaunch;
const sampler = setInterval(() => {
  rssMax = Math.max(rssMax, process.memoryUsage().rss);
}, 250);
await sleep(WARMUP * 1000);
const from = { at: performance.now(), n: await handed() };
progress(`window starts: ${from.n} handed over`);
await sleep(WINDOW * 1000);
const to = { at: performance.now(), n: await handed() };
const rate = (to.n - from.n) / ((to.at - from.at) / 1000);
const bound = Math.min(PLAN_MESSAGES_PER_SECOND.enterprise, SENDERS * TOLL_FREE_PER_SECOND);
console.log(
  `  sustained send rate                     ${rate.toFixed(1)}/s   bound ${bound}/s   ` +
    `${((rate / bound) * 100).toFixed(1)}% of the bound (over ${WINDOW} s after ${WARMUP} s)`,
);

progress('rate measured');

// 4. Statistics mid-campaign, beside bare Fastify serving the same JSON.
const sample = await api('GET', `/campaigns/${campaign.id}`);
const bare = Fastify();
bare.get('/campaign', async () => ({ success: true, data: sample }));
await bare.listen({ port: 0, host: '127.0.0.1' });
const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}/campaign`;
const bareStats = await measure(bareUrl);
const productStats = await measure(`${url}/api/v2/campaigns/${campaign.id}`, { 'x-api-key': secret });
for (const [name, r] of [
  ['bare Fastify  GET /campaign (static)', bareStats],
  ['product       GET /api/v2/campaigns/{id}', productStats],
  ['  the same, idle product before the launch', idleStats],
] as const) {
  console.log(
    `  ${name.padEnd(42)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  errors ${r.errors}`,
  );
}
clearInterval(sampler);
progress('statistics measured');
const made = (await api('GET', `/campaigns/${campaign.id}`)) as { message_count: number };
console.log(
  `  RSS                                     ${(rssBefore / 2 ** 20).toFixed(0)} MB before launch, ` +
    `${(rssAfterLaunch / 2 ** 20).toFixed(0)} MB after, max ${(rssMax / 2 ** 20).toFixed(0)} MB ` +
    `(+${((rssMax - rssAfterLaunch) / 2 ** 20).toFixed(0)} MB) with ${made.message_count} messages made`,
);

await bare.close();
await app.close();
await ctx.jobs.stop();
await ctx.rateLimiter.store.close();
await db.close();
await scratch.drop();
