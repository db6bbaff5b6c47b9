// Contact import throughput: a 100,000-row CSV posted as one multipart request to a running server (the real
// route, over loopback), reporting rows per second and the server's peak memory, each beside baselines taken
// in the same run, so the ratios mean the same on any machine:
//   - a bare Fastify that receives and discards the same upload: the transfer itself;
//   - bare multi-row INSERTs of the same rows into a table shaped like contacts (one statement per 1,000
//     rows, unnest arrays, one connection): the database's own speed at writing these rows once;
//   - the same, plus one consent event per row into a table shaped like consent_events: the least any import
//     of this file must write, since every row gives consent.
// PGlite keeps its files in a temporary directory on disk, as `npm start` does (DATA_DIR to choose another,
// `memory://` for memory). The CPU time is this process's: on PGlite it includes the database.
// Run: npm run bench:import   (ROWS=… to change the size; DATABASE_URL to run on PostgreSQL)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import Fastify from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { type Database, openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { newId } from '../src/platform/ids.ts';
import { createRuntime } from '../src/runtime.ts';

const ROWS = Number(process.env.ROWS ?? 100_000);
const BASELINE_BATCH = 1_000;

interface Row {
  phone: string;
  firstName: string;
  lastName: string;
  email: string;
  company: string;
}

function row(i: number): Row {
  const area = 201 + Math.floor(i / 10_000);
  return {
    phone: `+1${area}555${String(i % 10_000).padStart(4, '0')}`,
    firstName: `First${i}`,
    lastName: `Last${i}`,
    email: `user${i}@example.com`,
    company: `Company ${i % 100}, Inc.`,
  };
}

function csv(rows: number): string {
  const lines = ['phone,first_name,last_name,email,company,consent,consent_date'];
  for (let i = 0; i < rows; i++) {
    const r = row(i);
    lines.push(`${r.phone},${r.firstName},${r.lastName},${r.email},"${r.company}",yes,2026-01-01`);
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
  const cpu = process.cpuUsage();
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', body: form, headers });
  const text = await response.text();
  const used = process.cpuUsage(cpu);
  return {
    ms: performance.now() - started,
    cpuMs: (used.user + used.system) / 1000,
    status: response.status,
    text,
  };
}

/**
 * Bare multi-row INSERTs of the bench's rows into copies of contacts (and, with `consent`, of consent_events),
 * one statement per BASELINE_BATCH rows; returns the milliseconds taken.
 */
async function bareInserts(db: Database, organizationId: string, consent: boolean): Promise<number> {
  const now = new Date();
  const consentDate = new Date('2026-01-01T00:00:00Z');
  const started = performance.now();
  for (let from = 0; from < ROWS; from += BASELINE_BATCH) {
    const rows = Array.from({ length: Math.min(BASELINE_BATCH, ROWS - from) }, (_, i) => row(from + i));
    const ids = rows.map(() => newId('ct', now.getTime()));
    await db.query(
      `INSERT INTO bench_contacts (id, organization_id, phone, first_name, last_name, email, company,
                                   custom_fields, consent_status, consent_date, created_at, updated_at)
       SELECT id, $2, phone, first_name, last_name, email, company, '{}', 'granted', $8, $3, $3
         FROM unnest($1::text[], $4::text[], $5::text[], $6::text[], $7::text[], $9::text[])
              AS t(id, phone, first_name, last_name, email, company)`,
      [
        ids,
        organizationId,
        now,
        rows.map((r) => r.phone),
        rows.map((r) => r.firstName),
        rows.map((r) => r.lastName),
        rows.map((r) => r.email),
        consentDate,
        rows.map((r) => r.company),
      ],
    );
    if (!consent) continue;
    await db.query(
      `INSERT INTO bench_consent_events (id, organization_id, phone, contact_id, action, method, reason, actor,
                                         created_at)
       SELECT id, $2, phone, contact_id, 'consent_recorded', 'import', 'contact import', 'bench', $3
         FROM unnest($1::text[], $4::text[], $5::text[]) AS t(id, phone, contact_id)`,
      [rows.map(() => newId('cev', now.getTime())), organizationId, now, rows.map((r) => r.phone), ids],
    );
  }
  return performance.now() - started;
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

const dataDir = process.env.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'bench-import-'));
const config = loadConfig({ APP_ENV: 'test', ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
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

await db.exec(`CREATE TABLE bench_contacts (LIKE contacts INCLUDING ALL);
               CREATE TABLE bench_consent_events (LIKE consent_events INCLUDING ALL)`);
const bareContacts = await bareInserts(db, org.id, false);
await db.exec('TRUNCATE bench_contacts');
const bareWithConsent = await bareInserts(db, org.id, true);

const perSecond = (ms: number) => ROWS / (ms / 1000);
const importRate = perSecond(result.ms);
console.log(`database: ${db.engine}${db.engine === 'pglite' ? ` (${dataDir})` : ''}`);
console.log(`bare Fastify upload (discarded): ${base.ms.toFixed(0)} ms`);
console.log(`import: HTTP ${result.status} ${result.text.slice(0, 120)}`);
console.log(
  `import: ${result.ms.toFixed(0)} ms, ${importRate.toFixed(0)} rows/s ` +
    `(CPU of this process ${result.cpuMs.toFixed(0)} ms), ${(result.ms / base.ms).toFixed(1)}x the bare upload`,
);
for (const [label, ms] of [
  ['bare INSERT, contacts-shaped table:', bareContacts],
  ['bare INSERT, contacts + consent events:', bareWithConsent],
] as const) {
  console.log(
    `${label.padEnd(42)}${ms.toFixed(0).padStart(6)} ms, ${perSecond(ms).toFixed(0).padStart(6)} rows/s; ` +
      `import ${(importRate / perSecond(ms)).toFixed(2)}x`,
  );
}
console.log(
  `memory: rss before ${(rssBefore / 2 ** 20).toFixed(0)} MB, peak ${(peakRss / 2 ** 20).toFixed(0)} MB ` +
    `(+${((peakRss - rssBefore) / 2 ** 20).toFixed(0)} MB; the CSV itself is ${(body.length / 2 ** 20).toFixed(0)} MB and ` +
    'is held by this benchmark process, which also runs the server)',
);
await db.exec('DROP TABLE bench_contacts; DROP TABLE bench_consent_events');
// On a PostgreSQL server the bench's organization (and its 100,000 contacts) would otherwise stay and slow
// the next run.
await db.query('DELETE FROM organizations WHERE id = $1', [org.id]).catch(() => {});
await app.close();
await baseline.close();
await db.close();
if (!process.env.DATA_DIR) rmSync(dataDir, { recursive: true, force: true });
