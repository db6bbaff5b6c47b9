// Start-up time and idle memory of the server as `npm start` runs it, against the way it ran before (tsx
// compiling TypeScript on the fly). For each way of starting, a fresh DATA_DIR: one first start (initdb, every
// migration, the demo seed) and then RESTARTS starts on that existing database, each timed from spawn to the
// first 200 from GET /health; after the last, the server idles IDLE_SECONDS and its RSS is read from /proc.
// The embedded database's share is PGlite opened and migrated alone in a process of its own (its RSS minus that
// of the same process before). BENCH_NODE=/path/to/node measures another Node binary (npm run sets NODE itself).
// Run: npm run bench:startup (needs `npm run build` first).
import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startUntilReady as startServer, stop } from './server-start.ts';

const NODE = process.env.BENCH_NODE || process.execPath;
const RESTARTS = Number(process.env.RESTARTS ?? 5);
const IDLE_SECONDS = Number(process.env.IDLE_SECONDS ?? 10);
const PORT = Number(process.env.PORT ?? 3917);
const WAYS: Record<string, string[]> = {
  'tsx (before)': ['--import', 'tsx', 'src/main.ts'],
  'compiled (npm start)': ['dist/main.js'],
};

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return Math.round(Number(line![1]) / 1024);
}

/** One start of `args` on `dataDir`, by this bench's Node and port. */
const startUntilReady = (args: string[], dataDir: string) =>
  startServer({ node: NODE, args, dataDir, port: PORT });

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const version = execFileSync(NODE, ['--version'], { encoding: 'utf8' }).trim();
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`node ${version}, ${RESTARTS} restarts, RSS after ${IDLE_SECONDS} s idle; load average ${load}`);
for (const [name, args] of Object.entries(WAYS)) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-startup-'));
  try {
    const first = await startUntilReady(args, dataDir);
    await stop(first.child);
    const times: number[] = [];
    const cpu: number[] = [];
    let last: ChildProcess | undefined;
    for (let i = 0; i < RESTARTS; i++) {
      const run = await startUntilReady(args, dataDir);
      times.push(run.ms);
      cpu.push(run.cpu);
      if (i < RESTARTS - 1) await stop(run.child);
      else last = run.child;
    }
    await sleep(IDLE_SECONDS * 1000);
    const rss = rssMb(last!.pid!);
    await stop(last!);
    console.log(
      `${name.padEnd(22)} first start ${first.ms} ms (CPU ${first.cpu} ms); existing database median ` +
        `${median(times)} ms (${times.join(', ')}), CPU median ${median(cpu)} ms; idle RSS ${rss} MB`,
    );
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// PGlite alone: a process that opens and migrates the embedded database, as the server does, and reports what
// that added to its RSS.
const probe = `
  const rss = () => Math.round(process.memoryUsage().rss / 1048576);
  const before = rss();
  const { openDatabase } = await import('./dist/platform/db/index.js');
  const { migrate } = await import('./dist/platform/db/migrate.js');
  const loaded = rss();
  const db = await openDatabase({ dataDir: process.env.DATA_DIR });
  await migrate(db);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  console.log(JSON.stringify({ before, loaded, open: rss() }));
  await db.close();
`;
const dataDir = mkdtempSync(join(tmpdir(), 'bench-startup-'));
try {
  const run = (label: string) => {
    const out = execFileSync(NODE, ['--input-type=module', '-e', probe], {
      env: { ...process.env, DATA_DIR: dataDir },
      encoding: 'utf8',
    });
    const { before, loaded, open } = JSON.parse(out.trim().split('\n').at(-1)!);
    console.log(
      `PGlite alone, ${label}: RSS ${before} MB bare, ${loaded} MB with the module loaded, ${open} MB open and ` +
        `migrated (its share: ${open - before} MB)`,
    );
  };
  run('new database');
  run('existing database');
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
