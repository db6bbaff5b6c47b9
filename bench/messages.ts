import autocannon from 'autocannon';
import Fastify from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { type Database, openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { createRuntime } from '../src/runtime.ts';
import { UNLIMITED_SENDER } from './fixtures.ts';
import { useScratchDatabase } from './scratch-database.ts';

const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const SIZES = (process.env.BENCH_SIZES ?? '10000,1000000').split(',').filter(Boolean).map(Number);
// Each organization may send 30 per minute (spec), so the send run spreads over many organizations: 300 make
// 8,700 measured sends, several seconds.
const SEND_ORGS = Number(process.env.BENCH_SEND_ORGS ?? 300);
const PAGE = 100;

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  accepted: number;
}

async function measure(options: autocannon.Options): Promise<Result> {
  const started = performance.now();
  let lastAnswer = started;
  // Without a callback autocannon returns its instance, an event emitter that is also the result's promise.
  const run = autocannon({ connections: CONNECTIONS, ...options }) as ReturnType<typeof autocannon> & {
    on(event: 'response', listener: () => void): void;
  };
  run.on('response', () => {
    lastAnswer = performance.now();
  });
  const result = await run;
  return {
    // Requests over the time to the last answer: autocannon's per-second average, its duration and even the
    // moment it resolves all fall on whole seconds, so a run bounded by an amount (the sends: 30 a minute
    // per organization) read 3,000 sends in 2.1 s or in 2.9 s alike as 1,000/s.
    rps: result.requests.total / ((lastAnswer - started) / 1000),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    accepted: result['2xx'],
  };
}

const port = (server: { server: { address(): unknown } }) =>
  (server.server.address() as { port: number }).port;

// The baseline: the same JSON in and out, no work.
const samplePage = {
  success: true,
  data: Array.from({ length: PAGE }, (_, i) => ({
    id: `msg_${String(i).padStart(25, '0')}`,
    direction: 'outbound',
    status: 'delivered',
    from: '+12025550100',
    to: '+12025550199',
    body: `bench ${i}`,
    segments: 1,
    encoding: 'GSM-7',
    mediaCount: 0,
    media: { urls: [], files: [] },
    errorCode: null,
    errorMessage: null,
    sentAt: null,
    deliveredAt: null,
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
  })),
  pagination: { page: null, limit: PAGE, total: null, totalPages: null },
  next_cursor: null,
};
const baseline = Fastify();
baseline.post('/send', async (request, reply) =>
  reply
    .status(202)
    .send({ success: true, data: { id: 'msg_x', status: 'queued', ...(request.body as object) } }),
);
baseline.get('/messages', async () => samplePage);
await baseline.listen({ port: 0, host: '127.0.0.1' });
const baseUrl = `http://127.0.0.1:${port(baseline)}`;

const config = loadConfig({
  APP_ENV: 'test',
  DATA_DIR: 'memory://',
  ADMIN_TOKEN: 'bench',
  ...process.env,
  LOG_LEVEL: 'silent',
});
const scratch = await useScratchDatabase(config);
const db = countingStatements(await openDatabase(config));
await migrate(db);
const ctx = createRuntime(config, db, pino({ level: 'silent' }));
const app = await buildApp(ctx);
await app.listen({ port: 0, host: '127.0.0.1' });
const appUrl = `http://127.0.0.1:${port(app)}`;

async function organization(index: number) {
  const org = await ctx.organizations.create({
    name: `Bench ${index}`,
    ...UNLIMITED_SENDER,
  });
  const number = `+1800555${String(1000 + index).padStart(4, '0')}`;
  await ctx.numbers.add(org.id, { number, type: 'toll_free' });
  const { secret } = await ctx.apiKeys.create(org.id, { name: 'bench', scopes: ['*'] });
  return { id: org.id, key: secret, number };
}

const rows: [string, Result][] = [];
const print = (title: string, list: [string, Result][]) => {
  const base = list[0]![1];
  console.log(`\n${title}`);
  for (const [name, r] of list) {
    console.log(
      `  ${name.padEnd(44)} ${r.rps.toFixed(0).padStart(7)} req/s  ${(r.rps / base.rps).toFixed(2)}x  ` +
        `p50 ${String(r.p50).padStart(4)} ms  p99 ${String(r.p99).padStart(4)} ms  errors ${r.errors}`,
    );
  }
};

/**
 * The database with a count of the statements (round trips) the product sends it: each query, and a
 * transaction's BEGIN and COMMIT.
 */
function countingStatements(database: Database): Database & { roundTrips: number } {
  const counted = database as Database & { roundTrips: number };
  counted.roundTrips = 0;
  const query = database.query.bind(database);
  const transaction = database.transaction.bind(database);
  counted.query = (sql, params) => {
    counted.roundTrips++;
    return query(sql, params);
  };
  counted.transaction = (work) => {
    counted.roundTrips += 2;
    return transaction((tx) =>
      work({
        query: (sql, params) => {
          counted.roundTrips++;
          return tx.query(sql, params);
        },
        exec: (sql) => tx.exec(sql),
      }),
    );
  };
  return counted;
}

// 1. Sends.
const senders: { id: string; key: string; number: string }[] = [];
for (let i = 0; i < SEND_ORGS; i++) senders.push(await organization(i));
let next = 0;
let statementsPerSend = 0;
/** measure(), counting the statements of the run per accepted request. */
async function measureStatements(options: autocannon.Options): Promise<Result> {
  const before = db.roundTrips;
  const result = await measure(options);
  statementsPerSend = result.accepted > 0 ? (db.roundTrips - before) / result.accepted : 0;
  return result;
}
const sendBody = JSON.stringify({ to: '+12025550142', message: 'Your order has shipped. Track it online.' });
/** Sends from each organization in turn, `perOrganization` each. */
const sends = (perOrganization: number): autocannon.Options => ({
  url: `${appUrl}/api/v2/messages/send`,
  amount: SEND_ORGS * perOrganization,
  requests: [
    {
      method: 'POST',
      setupRequest: (request) => {
        const who = senders[next++ % senders.length]!;
        return {
          ...request,
          headers: { 'content-type': 'application/json', 'x-api-key': who.key },
          body: sendBody,
        };
      },
    },
  ],
});
// A running server, not a cold one: one send per organization first, unmeasured, fills each one's caches (its
// key, its numbers) and warms the code; the measured run sends the other 29 of each one's minute.
await measure(sends(1));
const sendRows: [string, Result][] = [
  [
    'bare Fastify  POST /send',
    await measure({
      url: `${baseUrl}/send`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: sendBody,
      duration: DURATION,
    }),
  ],
  ['product       POST /api/v2/messages/send', await measureStatements(sends(29))],
];
print(
  `Sends (${CONNECTIONS} connections, ${SEND_ORGS} organizations x 29, after one each to warm up), database ${db.engine}`,
  sendRows,
);
console.log(`  statements per accepted send (round trips to the database): ${statementsPerSend.toFixed(1)}`);
rows.push(...sendRows);
const bare = await bareInserts();
console.log(
  `  bare INSERT   one-row transactions into a copy of messages   ${bare.toFixed(0).padStart(7)} tx/s   ` +
    `sends vs bare INSERT: ${(sendRows[1]![1].rps / bare).toFixed(2)}x`,
);

/**
 * The database's own baseline for a send: single-row INSERT transactions into a table of the same shape as
 * messages (columns, defaults, checks and indexes), from as many concurrent clients as the HTTP run had
 * connections, for the same duration, through the same driver and pool.
 */
async function bareInserts(): Promise<number> {
  await db.exec('CREATE TABLE bare_messages (LIKE messages INCLUDING ALL)');
  const [sender] = senders;
  let done = 0;
  const ends = Date.now() + DURATION * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < ends) {
        const now = new Date();
        await db.transaction((tx) =>
          tx.query(
            `INSERT INTO bare_messages (id, organization_id, direction, origin, from_number, to_number, body,
                                        segments, encoding, status, status_updated_at, created_at)
             VALUES ($1, $2, 'outbound', 'api', $3, '+12025550142', $4, 1, 'GSM-7', 'queued', $5, $5)`,
            [
              `msg_bare${done++}`,
              sender!.id,
              sender!.number,
              'Your order has shipped. Track it online.',
              now,
            ],
          ),
        );
      }
    }),
  );
  await db.exec('DROP TABLE bare_messages');
  return done / DURATION;
}

// 2. Pages.
for (const size of SIZES) {
  const reader = await organization(900 + (SIZES.indexOf(size) % 99));
  const started = Date.now();
  // Generated in chunks so a million rows do not need one huge statement.
  const now = new Date();
  for (let done = 0; done < size; done += 100_000) {
    const chunk = Math.min(100_000, size - done);
    await db.query(
      `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                             encoding, status, status_updated_at, created_at)
       SELECT 'msg_' || $6 || lpad(($4::int + g)::text, 9, '0') || substr(md5(g::text), 1, 16), $1, 'outbound', 'api',
              $2, '+12025550199', 'bench ' || g, 1, 'GSM-7', 'delivered', $3,
              $3::timestamptz - (($4::int + g) * interval '1 millisecond')
         FROM generate_series(1, $5::int) AS g`,
      [reader.id, reader.number, now, done, chunk, `s${SIZES.indexOf(size)}`],
    );
  }
  await db.query('ANALYZE messages');
  const insertSeconds = (Date.now() - started) / 1000;

  // A cursor at the deepest page, issued as the server would have after walking there.
  const lastPage = Math.ceil(size / PAGE);
  const [deep] = await db.query<{ created_at: string; id: string }>(
    `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at, id
       FROM messages WHERE organization_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1`,
    [reader.id, (lastPage - 1) * PAGE - 1],
  );
  const cursor = ctx.pagination.cursors.issue(
    { endpoint: 'api.messages.list', keyset: true, organizationId: reader.id, filters: {} },
    { createdAt: deep!.created_at, id: deep!.id },
  );
  const get = (query: string) =>
    measure({
      url: `${appUrl}/api/v2/messages?limit=${PAGE}${query}`,
      headers: { 'x-api-key': reader.key },
      duration: DURATION,
    });
  const pageRows: [string, Result][] = [
    [
      'bare Fastify  GET /messages (static page)',
      await measure({ url: `${baseUrl}/messages`, duration: DURATION }),
    ],
    ['offset  first page', await get('&page=1')],
    ['keyset  first page', await get('&cursor=')],
    [`offset  last page (${lastPage})`, await get(`&page=${lastPage}`)],
    ['keyset  last page', await get(`&cursor=${cursor}`)],
  ];
  print(
    `History at ${size.toLocaleString('en-US')} messages (${PAGE} per page; inserted in ${insertSeconds.toFixed(1)} s)`,
    pageRows,
  );
  rows.push(...pageRows);
}

await app.close();
await ctx.jobs.stop();
await ctx.rateLimiter.store.close();
await baseline.close();
await db.close();
await scratch.drop();
