import assert from 'node:assert/strict';
// Builds a fresh app for a test file: its own freshly migrated database (a clone of a migrated PGlite
// template, or a new database on the PostgreSQL server named by DATABASE_URL), listening on a real
// loopback socket. Tests talk to it over HTTP with `request`, exactly as a client would.
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type App, buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { type Database, PgliteDatabase, PostgresDatabase } from '../../src/platform/db/index.ts';
import { migrate, migrationsDir } from '../../src/platform/db/migrate.ts';
import { createLogger } from '../../src/platform/log.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

let template: Promise<Blob> | undefined;

/**
 * The migrated, empty database every PGlite test app starts from, as a dump. Migrating a new PGlite takes
 * seconds (and ten or more under a loaded CI machine), once per test process, so the dump is kept in the
 * system's temporary directory under a name that changes with the migrations and PGlite's version: the
 * suite's first file builds it and every later one loads it. Written to a temporary name and renamed, so a
 * concurrent file reads a whole dump or none.
 */
async function migratedTemplate(): Promise<Blob> {
  const pglite = join(migrationsDir, '..', 'node_modules', '@electric-sql', 'pglite', 'package.json');
  const path = join(tmpdir(), `commsplatform-test-template-${migrationsHash(readFileSync(pglite))}.tar`);
  try {
    return new Blob([await readFile(path)]);
  } catch {
    // Not built yet (or being built by another file): build it here.
  }
  const db = await PgliteDatabase.open('memory://');
  await migrate(db);
  const dump = await db.dump();
  await db.close();
  const partial = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(partial, new Uint8Array(await dump.arrayBuffer()));
  await rename(partial, path);
  return dump;
}

export interface FreshDatabase {
  db: Database;
  /** Connection string of the fresh database when on PostgreSQL (for other processes). */
  url?: string;
  /** A second, independent handle on the same database (another instance's connection pool). */
  connectAgain(): Database;
  drop(): Promise<void>;
}

/** A name for this code's migrations (and `extra`, what else the template depends on). */
function migrationsHash(extra: Uint8Array | string = ''): string {
  const hash = createHash('sha256').update(extra);
  for (const name of readdirSync(migrationsDir).sort()) {
    hash.update(name).update(readFileSync(join(migrationsDir, name)));
  }
  return hash.digest('hex').slice(0, 16);
}

/** Held while a process builds the migrated template database on a PostgreSQL server. */
const TEMPLATE_LOCK = 727_101;

/**
 * The name of a migrated, empty database on the server at `serverUrl` to create test databases from
 * (`CREATE DATABASE … TEMPLATE`: a file copy, where migrating each new database took most of a second). Built
 * once per server and set of migrations, under an advisory lock so that concurrent test files build it once;
 * it is built under another name and renamed, so it never exists half-migrated.
 */
async function templateDatabase(serverUrl: string): Promise<string> {
  const name = `test_template_${migrationsHash()}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) {
      const building = `${name}_building`;
      await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${building}`);
      const url = new URL(serverUrl);
      url.pathname = `/${building}`;
      const db = PostgresDatabase.open(url.toString());
      try {
        await migrate(db);
      } finally {
        await db.close();
      }
      await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    }
  } finally {
    await admin.end();
  }
  return name;
}
const templates = new Map<string, Promise<string>>();

/**
 * A new, migrated, empty database on the engine under test, or on the PostgreSQL server at `serverUrl` (a
 * test's private server, test/helpers/private-servers.ts). `migrated: false` leaves it without any table, for
 * tests of what a server does on its first start.
 */
export async function freshDatabase(
  serverUrl = process.env.DATABASE_URL,
  { migrated = true }: { migrated?: boolean } = {},
): Promise<FreshDatabase> {
  if (!serverUrl) {
    template ??= migratedTemplate();
    const db = migrated
      ? await PgliteDatabase.fromDump(await template)
      : await PgliteDatabase.open('memory://');
    return {
      db,
      // PGlite is in-process: a second instance shares the same handle, as two apps in one process would.
      connectAgain: () => db,
      drop: () => db.close(),
    };
  }
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  let source = templates.get(serverUrl);
  if (migrated && !source) {
    source = templateDatabase(serverUrl);
    templates.set(serverUrl, source);
  }
  await admin.query(`CREATE DATABASE ${name}${migrated ? ` TEMPLATE ${await source}` : ''}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = PostgresDatabase.open(url.toString());
  const handles: Database[] = [db];
  return {
    db,
    url: url.toString(),
    connectAgain: () => {
      const again = PostgresDatabase.open(url.toString());
      handles.push(again);
      return again;
    },
    drop: async () => {
      for (const handle of handles) await handle.close().catch(() => {});
      const dropper = new pg.Client({ connectionString: serverUrl });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await dropper.end();
    },
  };
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...loadConfig({ APP_ENV: 'test', DATA_DIR: 'memory://', ADMIN_TOKEN, PORT: '0', HOST: '127.0.0.1' }),
    ...overrides,
  };
}

export interface Response<Body = any> {
  status: number;
  headers: Headers;
  body: Body;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Raw body sent as is (with the given content type header, if any). */
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
  /** Session token sent as `Authorization: Bearer`. */
  token?: string;
  /** API key sent as `x-api-key`. */
  apiKey?: string;
}

export interface TestApp {
  app: App;
  ctx: Runtime;
  url: string;
  database: FreshDatabase;
  request<Body = any>(method: string, path: string, options?: RequestOptions): Promise<Response<Body>>;
  /** The log lines written so far (with `captureLog`). */
  logs(): string[];
  /** A request to the operator API with the admin token. */
  admin<Body = any>(method: string, path: string, body?: unknown): Promise<Response<Body>>;
  close(): Promise<void>;
}

export interface StartOptions {
  config?: Partial<Config>;
  /** Use this database instead of a fresh one (a second instance on the same data). */
  database?: FreshDatabase;
  /** Make the fresh database on this PostgreSQL server (postgres://…) instead of the engine under test. */
  databaseServerUrl?: string;
  /** Keep every log line (level debug) for the test to read with `logs()`. */
  captureLog?: boolean;
  /** Extra routes a test needs (e.g. one that throws), added before the app starts. */
  extend?: (app: App, ctx: Runtime) => unknown;
}

export async function startTestApp(options: StartOptions = {}): Promise<TestApp> {
  const config = testConfig(options.config);
  const database = options.database ?? (await freshDatabase(options.databaseServerUrl));
  const db = options.database ? database.connectAgain() : database.db;
  const captured: string[] = [];
  const log = options.captureLog
    ? createLogger('debug', { write: (line: string) => void captured.push(line) })
    : createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const ctx = createRuntime(config, db, log);
  await ctx.rateLimiter.store.ready();
  const app = await buildApp(ctx);
  await options.extend?.(app, ctx);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  const request = <Body>(method: string, path: string, opts: RequestOptions = {}) =>
    httpRequest<Body>(url, method, path, opts);

  return {
    app,
    ctx,
    url,
    database,
    request,
    logs: () => [...captured],
    admin: (method, path, body) =>
      request(method, `/admin/v1${path}`, { body, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }),
    close: async () => {
      await app.close();
      await ctx.jobs.stop();
      await ctx.carrier.stop?.();
      await ctx.rateLimiter.store.close();
      if (!options.database) await database.drop();
      // Every SIP message the app sent was checked by a strict phone's rules (APP_ENV=test): the file that
      // started the app fails on any breach, even when the lenient SIPp played along (issue 32).
      const refused = ctx.sipListener.strictViolations;
      if (refused.length > 0) {
        throw new Error(`SIP messages a strict phone would refuse:\n${refused.slice(0, 20).join('\n')}`);
      }
    },
  };
}

export async function httpRequest<Body = any>(
  baseUrl: string,
  method: string,
  path: string,
  opts: RequestOptions = {},
): Promise<Response<Body>> {
  const headers: Record<string, string> = { ...opts.headers };
  let payload: string | Uint8Array | undefined;
  if (opts.rawBody !== undefined) payload = opts.rawBody;
  else if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.apiKey) headers['x-api-key'] = opts.apiKey;
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    body: payload as BodyInit | undefined,
    redirect: 'manual',
  });
  const text = await response.text();
  let body: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('json') && text) body = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: body as Body, text };
}

/** Creates an organization through the operator API and returns it. */
export async function createOrganization(t: TestApp, fields: Record<string, unknown> = {}) {
  const res = await t.admin('POST', '/organizations', {
    name: `Org ${randomBytes(3).toString('hex')}`,
    ...fields,
  });
  if (res.status !== 201) throw new Error(`createOrganization failed: ${res.status} ${res.text}`);
  return res.body.data as { id: string; name: string; plan: string; subscriptionState: string };
}

/** Asserts the body is exactly Shape A: message and error equal, only the allowed keys. */
export function isShapeA(body: Record<string, unknown>): boolean {
  const keys = Object.keys(body);
  return (
    typeof body.message === 'string' &&
    body.error === body.message &&
    keys.every((k) => ['message', 'error', 'code', 'data'].includes(k))
  );
}

/** Asserts the body is Shape B: success false, an error string, only the allowed keys. */
export function isShapeB(body: Record<string, unknown>): boolean {
  const keys = Object.keys(body);
  return (
    body.success === false &&
    typeof body.error === 'string' &&
    keys.every((k) => ['success', 'error', 'code', 'reason', 'data'].includes(k))
  );
}

/** Asserts a refusal: its status, Shape A and nothing else, and its code (undefined: none). */
export function assertRefusedA(res: Response, status: number, code: string | undefined): void {
  assert.equal(res.status, status, res.text);
  assert.ok(isShapeA(res.body), `not Shape A: ${res.text}`);
  assert.equal(res.body.code, code, res.text);
}

/** Asserts a refusal of the developer API: its status, Shape B, and its code (undefined: none). */
export function assertRefusedB(res: Response, status: number, code: string | undefined): void {
  assert.equal(res.status, status, res.text);
  assert.ok(isShapeB(res.body), `not Shape B: ${res.text}`);
  assert.equal(res.body.code, code, res.text);
}
