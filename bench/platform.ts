// Platform overhead: the product's GET /api/version and GET /health (one database round trip) against a
// bare Fastify answering the same JSON, in the same run, on loopback. Results are ratios to the baseline,
// so they mean the same on any machine. Run: npm run bench:platform
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { CHANGELOG, CURRENT_VERSION } from '../src/platform/version.ts';
import { createRuntime } from '../src/runtime.ts';

const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

async function measure(url: string) {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION });
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx };
}

const baseline = Fastify();
baseline.get('/api/version', async () => ({
  success: true,
  data: { version: CURRENT_VERSION, changelog: CHANGELOG },
}));
await baseline.listen({ port: 0, host: '127.0.0.1' });

const config = loadConfig({ APP_ENV: 'test', DATA_DIR: 'memory://', ...process.env, LOG_LEVEL: 'silent' });
const db = await openDatabase(config);
await migrate(db);
const app = await buildApp(createRuntime(config, db, pino({ level: 'silent' })));
await app.listen({ port: 0, host: '127.0.0.1' });

const port = (server: { server: { address(): unknown } }) =>
  (server.server.address() as { port: number }).port;
const rows = [
  ['bare Fastify  GET /api/version', await measure(`http://127.0.0.1:${port(baseline)}/api/version`)],
  ['product       GET /api/version', await measure(`http://127.0.0.1:${port(app)}/api/version`)],
  ['product       GET /health (db)', await measure(`http://127.0.0.1:${port(app)}/health`)],
] as const;

const base = rows[0][1].rps;
console.log(`\n${CONNECTIONS} connections, ${DURATION}s each, database: ${db.engine}\n`);
for (const [name, r] of rows) {
  console.log(
    `${name}  ${r.rps.toFixed(0).padStart(7)} req/s  ${(r.rps / base).toFixed(2)}x baseline  p99 ${r.p99} ms  errors ${r.errors}`,
  );
}
await app.close();
await baseline.close();
await db.close();
