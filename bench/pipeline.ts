// Dispatch pipeline: how fast queued messages are handed to the carrier, and how soon after a message falls
// due its dispatch job runs, with the real worker loop (JobQueue.start: NOTIFY wake-ups, batched claims, busy
// slots) and the real dispatch handler (opt-out check, carrier, status and message.sent event in one
// transaction).
//   1. Backlog: MESSAGES queued messages spread over NUMBERS toll-free numbers, their paced slots already
//      passed (a worker catching up after an outage, or a campaign's first minute on many numbers), handed to
//      1 and (PostgreSQL only: PGlite is one process's database) 2 worker processes. Dispatched per second,
//      from the commit that queued them to the last `sent_at`.
//      Baseline, same run: the same number of single-row UPDATE transactions (`status = 'sent'`) on the same
//      table from the same number of connections as the workers' slots: what the database does with the
//      bare write each dispatch must make.
//   2. Latency: one worker, idle. A burst of BURST sends on one number (paced 3/s, so its slots run minutes
//      ahead), then SINGLES sends through the real send path on other numbers, one every 25 ms. Due-to-
//      dispatch is `sent_at` minus the paced slot (`run_at`); it shows an idle worker picking up a due job
//      and that the burst on one number delays no other. The burst's own messages that fell due meanwhile are
//      reported too: each left at its slot, not before (pacing exact).
// Run: npm run bench:pipeline   MESSAGES (10000), NUMBERS (1000), BURST (1000), SINGLES (200),
//   WORKER_CONCURRENCY (16), DATABASE_URL for PostgreSQL (a scratch database is created and dropped).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import { type Database, openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import { UNLIMITED_SENDER } from './fixtures.ts';
import { useScratchDatabase } from './scratch-database.ts';

const MESSAGES = Number(process.env.MESSAGES ?? 10_000);
const NUMBERS = Number(process.env.NUMBERS ?? 1000);
const BURST = Number(process.env.BURST ?? 1000);
const SINGLES = Number(process.env.SINGLES ?? 200);
const TOLL_FREE_INTERVAL_MS = 334; // 3 per second per toll-free number (src/carriers/simulated.ts)

const settings = { APP_ENV: 'test', DATA_DIR: 'memory://', ...process.env, LOG_LEVEL: 'silent' };

// A worker process: the product's worker role on the scratch database, until told to stop.
if (process.argv[2] === '--worker') {
  const config = loadConfig(settings);
  const db = await openDatabase(config);
  const ctx = createRuntime(config, db, pino({ level: 'silent' }));
  ctx.jobs.start();
  process.send?.('ready');
  process.on('message', async (message) => {
    if (message !== 'stop') return;
    await ctx.jobs.stop();
    await ctx.rateLimiter.store.close();
    await db.close();
    process.exit(0);
  });
} else {
  await main();
}

async function main() {
  const config = loadConfig(settings);
  const scratch = await useScratchDatabase(config);
  const db = await openDatabase(config);
  await migrate(db);
  const ctx = createRuntime(config, db, pino({ level: 'silent' }));
  const slots = config.workerConcurrency;
  console.log(
    `Pipeline on ${db.engine}: ${MESSAGES} messages over ${NUMBERS} numbers, ${slots} slots per worker`,
  );

  const organization = await ctx.organizations.create({
    name: 'Pipeline bench',
    ...UNLIMITED_SENDER,
  });
  const numbers: string[] = [];
  for (let i = 0; i < NUMBERS + SINGLES + 1; i++) {
    const number = `+1888${String(2_000_000 + i).padStart(7, '0')}`;
    await ctx.numbers.add(organization.id, { number, type: 'toll_free' });
    numbers.push(number);
  }

  const workerCounts = db.engine === 'postgres' ? [1, 2] : [1];
  const backlog: { workers: number; perSecond: number; seconds: number }[] = [];
  for (const workers of workerCounts) {
    const baseline = await bareUpdates(db, organization.id, slots, `b${workers}`);
    const stopWorkers = await startWorkers(ctx, db, config.databaseUrl, workers);
    const run = await dispatchBacklog(db, organization.id, numbers.slice(0, NUMBERS), `w${workers}`);
    await stopWorkers();
    backlog.push({ workers, ...run });
    console.log(
      `\nBacklog, ${workers} worker process${workers > 1 ? 'es' : ''}:\n` +
        `  bare single-row UPDATE tx (${slots} connections)  ${baseline.toFixed(0).padStart(6)}/s  1.00x\n` +
        `  dispatched (queued → sent)                 ${run.perSecond.toFixed(0).padStart(6)}/s  ` +
        `${(run.perSecond / baseline).toFixed(2)}x   (${MESSAGES} in ${run.seconds.toFixed(2)} s)`,
    );
  }
  if (backlog.length === 2) {
    console.log(
      `\nTwo worker processes vs one: ${(backlog[1]!.perSecond / backlog[0]!.perSecond).toFixed(2)}x`,
    );
  }

  await latency(ctx, db, config.databaseUrl, organization.id, numbers.slice(NUMBERS));

  await ctx.jobs.stop();
  await ctx.rateLimiter.store.close();
  await db.close();
  await scratch.drop();
}

/** Worker processes on PostgreSQL; on PGlite the bench's own runtime works (its database is in-process). */
async function startWorkers(
  ctx: Runtime,
  db: Database,
  databaseUrl: string | undefined,
  count: number,
): Promise<() => Promise<void>> {
  if (db.engine !== 'postgres') {
    ctx.jobs.start();
    return async () => {
      await ctx.jobs.stop();
    };
  }
  const children: ChildProcess[] = [];
  for (let i = 0; i < count; i++) {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', new URL(import.meta.url).pathname, '--worker'],
      {
        env: { ...process.env, DATABASE_URL: databaseUrl },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    );
    await once(child, 'message');
    children.push(child);
  }
  return async () => {
    await Promise.all(
      children.map(async (child) => {
        const exited = once(child, 'exit');
        child.send('stop');
        await exited;
      }),
    );
  };
}

/**
 * Queues MESSAGES messages and their dispatch jobs in one transaction, each at its number's paced slot in the
 * recent past, and waits until none is queued.
 */
async function dispatchBacklog(db: Database, organizationId: string, numbers: string[], tag: string) {
  const perNumber = Math.ceil(MESSAGES / numbers.length);
  const startedAt = new Date();
  await db.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                             encoding, status, status_updated_at, created_at)
       SELECT 'msg_' || $3 || lpad(g::text, 9, '0'), $1, 'outbound', 'api', ($4::text[])[1 + g % $5],
              '+12025550142', 'Your order has shipped', 1, 'GSM-7', 'queued', $2, $2
         FROM generate_series(0, $6::int - 1) AS g`,
      [organizationId, startedAt, tag, numbers, numbers.length, MESSAGES],
    );
    // Slot k of a number: k paced intervals after a start far enough back that every slot has passed.
    await tx.query(
      `INSERT INTO jobs (id, queue, payload, run_at, max_attempts, dedupe_key, created_at)
       SELECT 'job_' || $2 || lpad(g::text, 9, '0'), 'messages.dispatch',
              jsonb_build_object('messageId', 'msg_' || $2 || lpad(g::text, 9, '0')),
              $1::timestamptz - make_interval(secs => ($5::int - g / $4) * $6::float8 / 1000), 8,
              'dispatch:msg_' || $2 || lpad(g::text, 9, '0'), $1
         FROM generate_series(0, $3::int - 1) AS g`,
      [startedAt, tag, MESSAGES, numbers.length, perNumber + 1, TOLL_FREE_INTERVAL_MS],
    );
    await tx.query(`SELECT pg_notify('jobs', 'messages.dispatch')`);
  });
  const committedAt = Date.now();
  for (;;) {
    const [left] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM messages WHERE organization_id = $1 AND status = 'queued' AND id LIKE $2`,
      [organizationId, `msg_${tag}%`],
    );
    if (left!.n === 0) break;
    await sleep(50);
  }
  // Whatever the dispatches enqueued in turn (event fan-out, when someone subscribed) finishes before the
  // next run, so that no run inherits another's work.
  for (;;) {
    const [open] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE status IN ('pending', 'running') AND run_at <= $1`,
      [new Date()],
    );
    if (open!.n === 0) break;
    await sleep(50);
  }
  const [last] = await db.query<{ at: Date }>(
    `SELECT max(sent_at) AS at FROM messages WHERE organization_id = $1 AND id LIKE $2`,
    [organizationId, `msg_${tag}%`],
  );
  // From the commit (measured here) to the last hand-off (recorded by the worker, same machine clock).
  const seconds = (last!.at.getTime() - committedAt) / 1000;
  return { perSecond: MESSAGES / seconds, seconds };
}

/** The baseline: MESSAGES single-row UPDATE transactions over `connections` connections. */
async function bareUpdates(db: Database, organizationId: string, connections: number, tag: string) {
  await db.query(
    `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                           encoding, status, status_updated_at, created_at)
     SELECT 'msg_' || $2 || lpad(g::text, 9, '0'), $1, 'outbound', 'api', '+18880000000', '+12025550142',
            'baseline', 1, 'GSM-7', 'queued', now(), now()
       FROM generate_series(0, $3::int - 1) AS g`,
    [organizationId, tag, MESSAGES],
  );
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < MESSAGES) {
        const id = `msg_${tag}${String(next++).padStart(9, '0')}`;
        await db.transaction((tx) =>
          tx.query(
            `UPDATE messages SET status = 'sent', sent_at = now(), status_updated_at = now() WHERE id = $1`,
            [id],
          ),
        );
      }
    }),
  );
  return MESSAGES / ((performance.now() - started) / 1000);
}

async function latency(
  ctx: Runtime,
  db: Database,
  databaseUrl: string | undefined,
  organizationId: string,
  numbers: string[],
) {
  const organization = await ctx.organizations.get(organizationId);
  const stopWorkers = await startWorkers(ctx, db, databaseUrl, 1);
  const burstNumber = numbers[0]!;
  const burstStarted = new Date();
  const burst: string[] = [];
  for (let i = 0; i < BURST; i++) {
    const { result } = await ctx.messages.send(
      organization,
      { from: burstNumber, to: '+12025550143', message: `burst ${i}` },
      'api',
    );
    burst.push(result.id);
  }
  const singles: string[] = [];
  for (let i = 0; i < SINGLES; i++) {
    const { result } = await ctx.messages.send(
      organization,
      { from: numbers[1 + (i % (numbers.length - 1))]!, to: '+12025550144', message: `single ${i}` },
      'api',
    );
    singles.push(result.id);
    await sleep(25);
  }
  await sleep(500);
  const singleLatency = await dispatchDelays(db, singles);
  const burstSeconds = (Date.now() - burstStarted.getTime()) / 1000;
  const burstDue = await dispatchDelays(db, burst);
  await stopWorkers();

  console.log(
    `\nDue to dispatch, one idle worker (${SINGLES} sends on other numbers, one every 25 ms, during a burst of ` +
      `${BURST} on one number):`,
  );
  console.log(`  other numbers: ${describe(singleLatency.delays)}${notSent(singleLatency.unsent)}`);
  console.log(
    `    slowest (n-th send): ${singleLatency.slowest.map(([at, ms]) => `#${at} ${ms.toFixed(0)} ms`).join(', ')}`,
  );
  const early = burstDue.delays.filter((delay) => delay < 0).length;
  console.log(
    `  the burst's number, ${burstDue.delays.length} of ${BURST} due in ${burstSeconds.toFixed(1)} s ` +
      `(3/s): ${describe(burstDue.delays)}; sent before their slot: ${early}`,
  );
}

/** `sent_at - run_at` of the dispatch jobs of `ids` that have been sent, in ms, sorted. */
async function dispatchDelays(db: Database, ids: string[]) {
  const rows = await db.query<{ id: string; delay_ms: number | null }>(
    `SELECT m.id, (extract(epoch FROM m.sent_at - j.run_at) * 1000)::float8 AS delay_ms
       FROM messages m JOIN jobs j ON j.dedupe_key = 'dispatch:' || m.id
      WHERE m.id = ANY($1::text[]) AND (m.sent_at IS NOT NULL OR j.run_at <= now())`,
    [ids],
  );
  const delays = rows.flatMap((row) => (row.delay_ms === null ? [] : [row.delay_ms])).sort((a, b) => a - b);
  // Which sends were slowest, by their place in `ids`: a first use of a pooled connection shows up early.
  const slowest = rows
    .flatMap((row): [number, number][] =>
      row.delay_ms === null ? [] : [[ids.indexOf(row.id) + 1, row.delay_ms]],
    )
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5);
  return { delays, unsent: rows.length - delays.length, slowest };
}

function describe(delays: number[]): string {
  if (delays.length === 0) return 'none';
  const at = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))]!.toFixed(1);
  return `n=${delays.length} p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`;
}

function notSent(count: number): string {
  return count > 0 ? `; due but not sent: ${count}` : '';
}
