// Memory under a large import (issue 31, finding 10). Starts the real server (`src/main.ts`) as its own
// process, on embedded PGlite (files in a temporary DATA_DIR, as `npm start` keeps them, or DATA_DIR=memory://)
// or, with DATABASE_URL, on a scratch database of that PostgreSQL server; uploads a 1,000,000-row CSV (written
// to disk first and streamed, so the client's memory is not what is measured) as one multipart request, and
// reports the server process's RSS: before, its peak during the import (the kernel's high-water mark, VmHWM,
// reset just before the upload, and 50 ms samples), and after. "Before" follows a full garbage collection (the
// server runs with --expose-gc), so that start-up's garbage (PGlite's initdb) is not counted as where the
// import started. A probe preloaded into the server (bench/memory-probe.ts) says which kind of memory grew:
// the V8 heap, array buffers (with memory://, PGlite's files), or the rest of RSS (native allocations, PGlite's
// WebAssembly memory). On PGlite on disk it also reports the data directory's size and its WAL.
// Run: npm run bench:import-memory   (ROWS=… to change the size; IMPORTS=2 imports the file twice, the second
// updating every contact; DATA_DIR=memory:// for PGlite in memory; CONSENT=1 adds a consent column, so that
// every row also records a consent event; LIVE_HEAP=1 collects every second to tell live heap from garbage;
// DATABASE_URL=postgres://… for PostgreSQL)
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startImportServer, uploadCsv, writeContactsCsv } from './import-server.ts';
import { useScratchDatabase } from './scratch-database.ts';

const ROWS = Number(process.env.ROWS ?? 1_000_000);
const CONSENT = process.env.CONSENT === '1';
const IMPORTS = Number(process.env.IMPORTS ?? 1);
const MB = 2 ** 20;
const dir = mkdtempSync(join(tmpdir(), 'import-memory-'));

/** Bytes of the files under `path` (PGlite's data directory on disk: its WAL and tables). */
function directoryBytes(path: string): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    total += entry.isDirectory() ? directoryBytes(child) : statSync(child).size;
  }
  return total;
}

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  return (Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)![1]) * 1024) / MB;
}

const csvPath = join(dir, 'contacts.csv');
const size = await writeContactsCsv(csvPath, ROWS, { consent: CONSENT });

const config = { databaseUrl: process.env.DATABASE_URL || undefined };
const scratchDb = await useScratchDatabase(config, 'bench_memory');
const probeFile = join(dir, 'probe.json');
const dataDir = process.env.DATA_DIR || join(dir, 'data');
const { server, base, apiKey, stop } = await startImportServer(
  {
    DATA_DIR: dataDir,
    DATABASE_URL: config.databaseUrl ?? '',
    MEMORY_PROBE_FILE: probeFile,
    MEMORY_PROBE_LIVE_HEAP: process.env.LIVE_HEAP ?? '',
  },
  ['--expose-gc', '--import', 'tsx', '--import', './bench/memory-probe.ts'],
).catch(async (error) => {
  await scratchDb.drop();
  throw error;
});
const probe = () =>
  JSON.parse(readFileSync(probeFile, 'utf8')) as {
    peak: Record<string, number>;
    latest: Record<string, number>;
  };
const fields = (usage: Record<string, number>) =>
  ['rss', 'heapUsed', 'liveHeap', 'external', 'arrayBuffers']
    .filter((key) => usage[key] !== undefined)
    .map((key) => `${key} ${((usage[key] ?? 0) / MB).toFixed(0)}`)
    .join(', ');

try {
  // Let start-up settle, then reset the kernel's high-water mark and the probe's peaks before each import.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  console.log(
    `database: ${config.databaseUrl ? 'postgres' : `pglite (${dataDir})`}; CSV: ${ROWS} rows, ` +
      `${(size / MB).toFixed(1)} MB${CONSENT ? ', with consent' : ''}`,
  );
  for (let run = 1; run <= IMPORTS; run++) await measureImport(run);
} finally {
  await stop();
  await scratchDb.drop();
  rmSync(dir, { recursive: true, force: true });
}

/** One import of the file, with the server's memory before, at its peak during it, and after. */
async function measureImport(run: number): Promise<void> {
  // The probe collects garbage and resets its peaks, then the kernel's high-water mark is reset.
  server.kill('SIGUSR2');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const before = probe().latest;
  const hwmAtStart = status(server.pid!, 'VmHWM');
  let hwmReset = true;
  try {
    writeFileSync(`/proc/${server.pid}/clear_refs`, '5');
  } catch {
    hwmReset = false; // then VmHWM also covers what came before, reported beside it
  }
  const rssBefore = status(server.pid!, 'VmRSS');

  const started = performance.now();
  const upload = uploadCsv(base, apiKey, csvPath);
  let done = false;
  let sampledPeak = rssBefore;
  void upload.finally(() => {
    done = true;
  });
  while (!done) {
    sampledPeak = Math.max(sampledPeak, status(server.pid!, 'VmRSS'));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const result = await upload;
  const seconds = (performance.now() - started) / 1000;
  const hwm = status(server.pid!, 'VmHWM');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const during = probe().peak;
  await new Promise((resolve) => setTimeout(resolve, 4000));
  const rssAfter = status(server.pid!, 'VmRSS');

  console.log(
    `import ${run}: HTTP ${result.status} in ${seconds.toFixed(1)} s: ${result.body.slice(0, 110)}`,
  );
  console.log(
    `  server RSS: ${rssBefore.toFixed(0)} MB before, peak ${Math.max(hwm, sampledPeak).toFixed(0)} MB ` +
      `(VmHWM ${hwm.toFixed(0)}${hwmReset ? '' : `, not reset: ${hwmAtStart.toFixed(0)} before`}; ` +
      `sampled ${sampledPeak.toFixed(0)}), ${rssAfter.toFixed(0)} MB 5 s after`,
  );
  if (!config.databaseUrl && !dataDir.startsWith('memory://')) {
    const wal = directoryBytes(join(dataDir, 'pg_wal')) / MB;
    console.log(
      `  on disk: ${(directoryBytes(dataDir) / MB).toFixed(0)} MB, of which WAL ${wal.toFixed(0)} MB`,
    );
  }
  console.log(`  before (MB):       ${fields(before)}`);
  console.log(`  peaks during (MB): ${fields(during)}`);
}
