// The compiled server (dist/, what `npm start` runs) on whichever Node runs this file: CI runs it again with the
// current LTS fetched from the npm registry (.ci/run). It starts on a fresh embedded database (or a fresh
// PostgreSQL database with DATABASE_URL), must apply every migration, serve the console and the API reference from
// the repository's folders, and answer one product of each module through HTTP, the worker doing its part
// (a message delivered, an export completed). dist/ is rebuilt first when any source file is newer.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { migrationsDir } from '../src/platform/db/migrate.ts';
import { freshDatabase, httpRequest } from './helpers/app.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ENTRY = join(ROOT, 'dist', 'main.js');

/** The newest modification time of the files under `dir`. */
function newest(dir: string): number {
  let latest = 0;
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    latest = Math.max(latest, statSync(join(dir, name)).mtimeMs);
  }
  return latest;
}

function buildIfStale(): void {
  if (existsSync(ENTRY) && statSync(ENTRY).mtimeMs >= newest(join(ROOT, 'src'))) return;
  // The build as `npm ci` and `npm run build` run it, with the node_modules/.bin that npm puts on PATH.
  execFileSync(process.execPath, ['scripts/build-server.mjs'], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}` },
  });
}

/** Waits for `probe` to answer; the bound is generous because CI machines are shared (no timing is asserted). */
async function until<T>(what: string, probe: () => Promise<T | undefined>, seconds = 180): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test(`the compiled server starts, migrates and answers each module on Node ${process.version}`, async () => {
  buildIfStale();
  const dataDir = mkdtempSync(join(tmpdir(), 'comms-smoke-'));
  const database = process.env.DATABASE_URL ? await freshDatabase(undefined, { migrated: false }) : undefined;
  let child: ChildProcess | undefined;
  try {
    child = spawn(process.execPath, [ENTRY], {
      cwd: tmpdir(), // Files are found from the compiled modules' own location, not the working directory.
      env: {
        ...process.env,
        ...(database ? { DATABASE_URL: database.url! } : {}),
        DATA_DIR: dataDir,
        APP_ENV: 'development',
        ADMIN_TOKEN: 'smoke-admin-token',
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
    });
    child.stderr!.on('data', (chunk) => {
      out += chunk;
    });
    const running = child;
    const url = await until('the server to listen', async () => {
      if (running.exitCode !== null) throw new Error(`server exited ${running.exitCode}:\n${out}`);
      return out.match(/Server listening at (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
    });
    const apiKey = await until('the demo credentials', async () => out.match(/API key\s+(sk_test_\w+)/)?.[1]);

    // Not a line on a terminal: stdout is a pipe, so JSON lines, each migration file of the repository applied.
    const migrated = out
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg?: string; migrations?: string[] })
      .find((line) => line.msg === 'migrations applied');
    const files = readdirSync(migrationsDir).filter((name) => name.endsWith('.sql'));
    assert.ok(files.length >= 40, 'the repository has its migrations');
    assert.deepEqual(migrated?.migrations, [...files].sort());

    // system
    assert.equal((await httpRequest(url, 'GET', '/health')).status, 200);
    assert.equal((await httpRequest(url, 'GET', '/api/version')).body.data.version, '2026-09-01');
    const openapi = await httpRequest(url, 'GET', '/openapi.json');
    assert.equal(openapi.body.openapi, '3.1.0');
    const reference = await httpRequest(url, 'GET', '/docs/');
    assert.equal(reference.status, 200);
    assert.match(reference.text, /Scalar API Reference/);
    // The console is served from the repository's console/dist, however far dist/ is from it.
    const consolePage = await httpRequest(url, 'GET', '/');
    if (existsSync(join(ROOT, 'console', 'dist', 'index.html'))) {
      assert.equal(consolePage.status, 200);
      assert.match(consolePage.headers.get('content-type') ?? '', /text\/html/);
    } else assert.match(consolePage.text, /console is not built/);

    // identity and api-keys: the demo key, every scope
    const me = await httpRequest(url, 'GET', '/api/v2/me', { apiKey });
    assert.equal(me.status, 200);
    assert.deepEqual(me.body.data.key.scopes, ['*']);
    // organizations: the operator API
    const org = await httpRequest(url, 'GET', `/admin/v1/organizations/${me.body.data.organization.id}`, {
      headers: { authorization: 'Bearer smoke-admin-token' },
    });
    assert.equal(org.body.data.name, 'Demo Organization');
    // numbers: the demo number
    const numbers = await httpRequest(url, 'GET', '/api/v2/numbers', { apiKey });
    assert.equal(numbers.body.data.length, 1);
    const from = numbers.body.data[0].number as string;
    // contacts
    const contact = await httpRequest(url, 'POST', '/api/v2/contacts', {
      apiKey,
      body: { phone: '+14155550123', firstName: 'Ada' },
    });
    assert.equal(contact.status, 201);
    assert.equal(contact.body.data.phone, '+14155550123');
    // messaging: sent through the worker's dispatch to the simulated carrier, which reports it delivered
    const sent = await httpRequest(url, 'POST', '/api/v2/messages/send', {
      apiKey,
      body: { from, to: '+14155550123', message: 'Smoke test' },
    });
    assert.equal(sent.status, 202);
    await until('the message to be delivered', async () => {
      const message = await httpRequest(url, 'GET', `/api/v2/messages/${sent.body.data.id}`, { apiKey });
      return message.body.data.status === 'delivered' ? true : undefined;
    });
    // campaigns: a draft for a list
    const list = await httpRequest(url, 'POST', '/api/v2/contact-lists', { apiKey, body: { name: 'Smoke' } });
    const campaign = await httpRequest(url, 'POST', '/api/v2/campaigns', {
      apiKey,
      body: { name: 'Smoke', message: 'Hello', contactListIds: [list.body.data.id] },
    });
    assert.equal(campaign.status, 201);
    assert.equal(campaign.body.data.status, 'draft');
    // exports: completed by the worker
    const exported = await httpRequest(url, 'POST', '/api/v2/exports', {
      apiKey,
      body: { resource: 'contacts', format: 'csv' },
    });
    assert.equal(exported.status, 202);
    await until('the export to complete', async () => {
      const job = await httpRequest(url, 'GET', `/api/v2/exports/${exported.body.data.id}`, { apiKey });
      return job.body.data.status === 'completed' ? job.body.data : undefined;
    });
    // voice: an extension, and a call placed and hung up
    const extension = await httpRequest(url, 'POST', '/api/v2/extensions', {
      apiKey,
      body: { extension: '201', name: 'Front desk' },
    });
    assert.equal(extension.status, 201);
    const call = await httpRequest(url, 'POST', '/api/v2/calls', {
      apiKey,
      body: { from, to: '+14155550123' },
    });
    assert.equal(call.status, 202);
    const hungUp = await httpRequest(url, 'POST', `/api/v2/calls/${call.body.data.id}/hangup`, { apiKey });
    assert.equal(hungUp.status, 200);
    assert.equal(hungUp.body.data.hangupCause, 'hangup_requested');
    // agents
    const agent = await httpRequest(url, 'POST', '/api/v2/agents', { apiKey, body: { name: 'Smoke agent' } });
    assert.equal(agent.status, 201);
    // webhooks
    const webhooks = await httpRequest(url, 'GET', '/api/v2/webhooks', { apiKey });
    assert.equal(webhooks.status, 200);
    assert.deepEqual(webhooks.body.data, []);
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
