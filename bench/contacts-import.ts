// Contact import throughput: a 100,000-row CSV posted as one multipart request to a running server (the real
// route, over loopback), reporting rows per second and the server's peak memory. A bare-Fastify server that
// receives and discards the same upload in the same run is the baseline for the transfer itself.
// Run: npm run bench:import   (ROWS=… to change the size; DATABASE_URL to run on PostgreSQL)
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import Fastify from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { createRuntime } from '../src/runtime.ts';

const ROWS = Number(process.env.ROWS ?? 100_000);

function csv(rows: number): string {
  const lines = ['phone,first_name,last_name,email,company,consent,consent_date'];
  for (let i = 0; i < rows; i++) {
    const area = 201 + Math.floor(i / 10_000);
    const number = `+1${area}555${String(i % 10_000).padStart(4, '0')}`;
    lines.push(`${number},First${i},Last${i},user${i}@example.com,"Company ${i % 100}, Inc.",yes,2026-01-01`);
  }
  return `${lines.join('\n')}\n`;
}

let peakRss = 0;
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 20);

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const form = new FormData();
  form.append('file', new Blob([body], { type: 'text/csv' }), 'contacts.csv');
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', body: form, headers });
  const text = await response.text();
  return { ms: performance.now() - started, status: response.status, text };
}

const body = csv(ROWS);
console.log(`CSV: ${ROWS} rows, ${(body.length / 1024 / 1024).toFixed(1)} MB`);

const baseline = Fastify();
await baseline.register(multipart, { limits: { fileSize: 100 * 1024 * 1024 } });
baseline.post('/upload', async (request) => {
  const file = await request.file();
  await pipeline(file!.file, new Writable({ write: (_chunk, _encoding, done) => done() }));
  return { ok: true };
});
await baseline.listen({ port: 0, host: '127.0.0.1' });
const baselinePort = (baseline.server.address() as { port: number }).port;
const base = await post(`http://127.0.0.1:${baselinePort}/upload`, body);

const config = loadConfig({ APP_ENV: 'test', DATA_DIR: 'memory://', ...process.env, LOG_LEVEL: 'silent' });
const db = await openDatabase(config);
await migrate(db);
const ctx = createRuntime(config, db, pino({ level: 'silent' }));
const app = await buildApp(ctx);
await app.listen({ port: 0, host: '127.0.0.1' });
const org = await ctx.organizations.create({ name: 'Bench' });
const { secret } = await ctx.apiKeys.create(org.id, { name: 'bench', scopes: ['*'] });
const rssBefore = process.memoryUsage().rss;
peakRss = rssBefore;
const port = (app.server.address() as { port: number }).port;
const result = await post(`http://127.0.0.1:${port}/api/v2/contacts/import`, body, { 'x-api-key': secret });
clearInterval(sampler);

console.log(`database: ${db.engine}`);
console.log(`bare Fastify upload (discarded): ${base.ms.toFixed(0)} ms`);
console.log(`import: HTTP ${result.status} ${result.text.slice(0, 120)}`);
console.log(
  `import: ${result.ms.toFixed(0)} ms, ${(ROWS / (result.ms / 1000)).toFixed(0)} rows/s, ` +
    `${(result.ms / base.ms).toFixed(1)}x the bare upload`,
);
console.log(
  `memory: rss before ${(rssBefore / 2 ** 20).toFixed(0)} MB, peak ${(peakRss / 2 ** 20).toFixed(0)} MB ` +
    `(+${((peakRss - rssBefore) / 2 ** 20).toFixed(0)} MB; the CSV itself is ${(body.length / 2 ** 20).toFixed(0)} MB and ` +
    'is held by this benchmark process, which also runs the server)',
);
await app.close();
await baseline.close();
await db.close();
