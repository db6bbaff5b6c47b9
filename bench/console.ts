// The web console (issue 17's targets): its production bundle and its first load on loopback.
//   1. Bundle: the JavaScript and CSS the first page load fetches (index.html's script, its module preloads and
//      stylesheet), gzipped at level 9 as a CDN would; and the largest page chunk loaded later.
//   2. First load of `/`, signed in, in Debian's Chromium (playwright-core), each in a fresh browser context
//      (empty cache): until the dashboard shows its figures (the app booted, asked who is signed in and counted
//      today's messages and calls). Baseline, same run: the same files from a bare node:http static server,
//      until the browser's load event (the bytes alone, with no API behind them).
// Run: npm run bench:console   LOADS (10), CHROMIUM_PATH (/usr/bin/chromium), DATABASE_URL for PostgreSQL.
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { chromium } from 'playwright-core';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { CONSOLE_DIST } from '../src/platform/http/console.ts';
import { createRuntime } from '../src/runtime.ts';
import { useScratchDatabase } from './scratch-database.ts';

const LOADS = Number(process.env.LOADS ?? 10);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ADMIN = 'bench-admin-token-0123456789';

// 1. The bundle.
const shell = readFileSync(path.join(CONSOLE_DIST, 'index.html'), 'utf8');
const initial = [...shell.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
const gz = (file: string) => gzipSync(readFileSync(path.join(CONSOLE_DIST, file)), { level: 9 }).length;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} kB`;
const initialJs = initial.filter((f) => f.endsWith('.js')).reduce((sum, f) => sum + gz(f), 0);
const initialCss = initial.filter((f) => f.endsWith('.css')).reduce((sum, f) => sum + gz(f), 0);
const chunks = readdirSync(path.join(CONSOLE_DIST, 'assets'))
  .filter((f) => f.endsWith('.js') && !initial.includes(`/assets/${f}`))
  .map((f) => ({ file: f, size: gz(`assets/${f}`) }))
  .sort((a, b) => b.size - a.size);

// 2. A server with one signed-in user, and a bare static server of the same files.
const config = loadConfig({
  APP_ENV: 'development',
  DATA_DIR: 'memory://',
  ADMIN_TOKEN: ADMIN,
  ...process.env,
  LOG_LEVEL: 'silent',
  PORT: '0',
  HOST: '127.0.0.1',
});
const scratch = await useScratchDatabase(config, 'bench_console');
const db = await openDatabase(config);
await migrate(db);
const ctx = createRuntime(config, db, pino({ level: 'silent' }));
await ctx.rateLimiter.store.ready();
const app = await buildApp(ctx);
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const admin = (p: string, body: unknown) =>
  fetch(`${base}/admin/v1${p}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then((r) => r.json() as Promise<{ data: { id: string } }>);
const org = (await admin('/organizations', { name: 'Bench console' })).data;
await admin('/users', {
  email: 'bench@example.com',
  password: 'bench password 1',
  memberships: [{ organizationId: org.id, role: 'owner' }],
});
const signedIn = await fetch(`${base}/v2/portal/auth/login`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ email: 'bench@example.com', password: 'bench password 1' }),
}).then((r) => r.json() as Promise<{ data: { token: string } }>);

const TYPES: Record<string, string> = { '.js': 'text/javascript', '.css': 'text/css', '.html': 'text/html' };
const bare = http.createServer((request, response) => {
  const file = request.url === '/' ? 'index.html' : (request.url ?? '/').slice(1);
  try {
    const body = readFileSync(path.join(CONSOLE_DIST, file));
    response.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    response.end(body);
  } catch {
    response.writeHead(404).end();
  }
});
await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
const bareBase = `http://127.0.0.1:${(bare.address() as { port: number }).port}`;

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-sync',
  ],
});
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function consoleLoad(): Promise<number> {
  const context = await browser.newContext();
  await context.addCookies([{ name: 'portal_token', value: signedIn.data.token, url: base }]);
  const page = await context.newPage();
  const started = performance.now();
  await page.goto(`${base}/`);
  await page.getByText('Messages sent').waitFor();
  await page.locator('.figure[aria-busy="false"]').first().waitFor();
  const elapsed = performance.now() - started;
  await context.close();
  return elapsed;
}
async function bareLoad(): Promise<number> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const started = performance.now();
  await page.goto(`${bareBase}/`, { waitUntil: 'load' });
  const elapsed = performance.now() - started;
  await context.close();
  return elapsed;
}

await consoleLoad(); // warm the server and the browser once
await bareLoad();
const consoleTimes: number[] = [];
const bareTimes: number[] = [];
for (let i = 0; i < LOADS; i++) {
  bareTimes.push(await bareLoad());
  consoleTimes.push(await consoleLoad());
}

await browser.close();
bare.close();
await app.close();
await ctx.jobs.stop();
await ctx.rateLimiter.store.close();
await db.close();
await scratch.drop();

console.log(
  `Console bundle (gzip -9): initial JavaScript ${kb(initialJs)} (target ≤ 250 kB), CSS ${kb(initialCss)}`,
);
console.log(`  largest page chunk loaded later: ${chunks[0]?.file} ${kb(chunks[0]?.size ?? 0)}`);
console.log(
  `First load of / signed in, until the dashboard shows its figures (${LOADS} loads, fresh cache each): ` +
    `median ${median(consoleTimes).toFixed(0)} ms, max ${Math.max(...consoleTimes).toFixed(0)} ms (target ≤ 1,000 ms)`,
);
console.log(
  `Baseline: the same files from a bare static server, to the load event: median ${median(bareTimes).toFixed(0)} ms ` +
    `(console / baseline: ${(median(consoleTimes) / median(bareTimes)).toFixed(2)}×)`,
);
