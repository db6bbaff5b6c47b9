// The product as a newcomer starts it: the real entry point (src/main.ts, what `npm start` runs) in its own
// process. The first start of an empty development database creates the demo organization and prints how to
// sign in, once; a second start keeps the data and prints nothing secret.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freshDatabase, httpRequest } from './helpers/app.ts';

interface Running {
  child: ChildProcess;
  url: string;
  stdout: () => string;
}

async function startServer(env: Record<string, string>): Promise<Running> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, ...env, APP_ENV: 'development', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (chunk) => {
    out += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    out += chunk;
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 60_000);
    const check = () => {
      const match = out.match(/Server listening at (http:\/\/127\.0\.0\.1:\d+)/);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', check);
    child.on('exit', () => reject(new Error(`server exited:\n${out}`)));
  });
  // The credentials are printed right after listening; wait for the process to settle.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { child, url, stdout: () => out };
}

async function stopServer(server: Running): Promise<void> {
  const exited = new Promise((resolve) => server.child.on('exit', resolve));
  server.child.kill('SIGTERM');
  await exited;
}

test('first start seeds and prints the demo sign-in once; a second start keeps the data', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'comms-first-run-'));
  // On PostgreSQL the server gets its own fresh database; on PGlite, files under a fresh DATA_DIR.
  const database = process.env.DATABASE_URL ? await freshDatabase(undefined, { migrated: false }) : undefined;
  const env: Record<string, string> = { DATA_DIR: dataDir, ADMIN_TOKEN: 'first-run-admin-token' };
  if (database) env.DATABASE_URL = database.url!;
  try {
    const first = await startServer(env);
    let organizationId: string;
    try {
      const version = await httpRequest(first.url, 'GET', '/api/version');
      assert.equal(version.status, 200);
      assert.equal(version.body.data.version, '2026-09-01');
      const out = first.stdout();
      assert.match(out, /First start: a demo organization was created/);
      assert.match(out, /E-mail\s+owner@demo\.example/);
      assert.match(out, /Password\s+\S{12,}/);
      organizationId = out.match(/Organization\s+(org_\w+)/)![1]!;
      // The printed key works against the developer API.
      const apiKey = out.match(/API key\s+(sk_test_\w+)/)![1]!;
      const me = await httpRequest(first.url, 'GET', '/api/v2/me', { apiKey });
      assert.equal(me.status, 200);
      assert.equal(me.body.data.organization.id, organizationId);
      assert.deepEqual(me.body.data.key.scopes, ['*']);
      const org = await httpRequest(first.url, 'GET', `/admin/v1/organizations/${organizationId}`, {
        headers: { authorization: 'Bearer first-run-admin-token' },
      });
      assert.equal(org.status, 200);
      assert.equal(org.body.data.name, 'Demo Organization');
    } finally {
      await stopServer(first);
    }

    const second = await startServer(env);
    try {
      assert.doesNotMatch(second.stdout(), /First start|Password|sk_test_/);
      const org = await httpRequest(second.url, 'GET', `/admin/v1/organizations/${organizationId}`, {
        headers: { authorization: 'Bearer first-run-admin-token' },
      });
      assert.equal(org.status, 200, 'the organization survived the restart');
    } finally {
      await stopServer(second);
    }
  } finally {
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('production without JWT_SECRET refuses to start and says why', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, APP_ENV: 'production', JWT_SECRET: '', PORT: '0', DATA_DIR: 'memory://' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (chunk) => {
    err += chunk;
  });
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 1);
  assert.match(err, /JWT_SECRET is required in production/);
});
