// A PostgreSQL cluster and a Redis server of a test's own, on free ports, for tests that stop and restart
// them: the shared servers of CI (DATABASE_URL, TEST_REDIS_URL) serve other test files at the same time and
// must never be restarted. Both are thrown away at the end. PostgreSQL runs as the `postgres` user when the
// test runs as root (initdb refuses root), as the current user otherwise.
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort } from './sipp.ts';

const run = promisify(execFile);

/** The newest PostgreSQL binaries directory installed the Debian way, if any. */
function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((version) => existsSync(join(root, version, 'bin', 'initdb')))
    .sort((a, b) => Number(a) - Number(b));
  return versions.length > 0 ? join(root, versions.at(-1)!, 'bin') : undefined;
}

const PG_BIN = postgresBin();
const asRoot = process.getuid?.() === 0;
const postgresUid = asRoot
  ? Number(spawnSync('id', ['-u', 'postgres']).stdout?.toString().trim())
  : undefined;
const redisInstalled = spawnSync('redis-server', ['--version']).error === undefined;

/** Why a private PostgreSQL cluster cannot run here, or undefined when it can. */
export function privatePostgresMissing(): string | undefined {
  if (!PG_BIN) return 'PostgreSQL binaries (/usr/lib/postgresql/*/bin/initdb) are not installed';
  if (asRoot && !Number.isInteger(postgresUid)) return 'running as root without a postgres user';
  return undefined;
}

/** Why a private Redis server cannot run here, or undefined when it can. */
export function privateRedisMissing(): string | undefined {
  return redisInstalled ? undefined : 'redis-server is not installed';
}

/** Runs a PostgreSQL binary, as the postgres user when we are root. */
function pgCommand(binary: string, args: string[]) {
  const path = join(PG_BIN!, binary);
  return asRoot ? run('runuser', ['-u', 'postgres', '--', path, ...args]) : run(path, args);
}

export interface PrivatePostgres {
  /** postgres://… of the cluster's `postgres` database (trust authentication). */
  url: string;
  /** `pg_ctl restart -m fast`: what a failover or a minor upgrade does. Resolves when it accepts again. */
  restart(): Promise<void>;
  /** Stops it (`-m fast`), for a test to look at the outage; `start` brings it back. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its files. */
  destroy(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'private-pg-'));
  if (asRoot) chownSync(dir, postgresUid!, -1);
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  const port = await freePort();
  await pgCommand('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '-N']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  const start = () => pgCommand('pg_ctl', ['-D', data, '-l', log, '-w', '-o', options, 'start']);
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: async () => {
      await pgCommand('pg_ctl', ['-D', data, '-l', log, '-w', '-m', 'fast', 'restart']);
    },
    stop: async () => {
      await pgCommand('pg_ctl', ['-D', data, '-w', '-m', 'fast', 'stop']);
    },
    start: async () => {
      await start();
    },
    destroy: async () => {
      await pgCommand('pg_ctl', ['-D', data, '-w', '-m', 'immediate', 'stop']).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  url: string;
  /** Ends the server (a SIGTERM, as a service manager does) and starts a new one on the same port. */
  restart(): Promise<void>;
  /** Ends it, for a test to look at the outage; `start` brings a new one up on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let server: ChildProcess | undefined;
  const start = async () => {
    server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    for (let waited = 0; !(await accepts(port)); waited += 50) {
      if (waited > 10_000) throw new Error(`redis-server did not listen on ${port} within 10 s`);
      await sleep(50);
    }
  };
  const stop = async () => {
    const current = server;
    server = undefined;
    if (!current || current.exitCode !== null) return;
    const exited = new Promise((resolve) => current.once('exit', resolve));
    current.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    restart: async () => {
      await stop();
      await start();
    },
    stop,
    start,
    destroy: stop,
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
