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
import { spawn } from 'node:child_process';
import {
  createReadStream,
  createWriteStream,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { useScratchDatabase } from './scratch-database.ts';

const ROWS = Number(process.env.ROWS ?? 1_000_000);
const CONSENT = process.env.CONSENT === '1';
const IMPORTS = Number(process.env.IMPORTS ?? 1);
// biome-ignore format: a table
const AREA_CODES = [
  201, 202, 203, 205, 206, 207, 208, 209, 210, 212, 213, 214, 215, 216, 217, 218, 219, 224, 225, 228,
  229, 231, 234, 239, 240, 248, 251, 252, 253, 254, 256, 260, 262, 267, 269, 270, 276, 281, 301, 302,
  303, 304, 305, 307, 308, 309, 310, 312, 313, 314, 315, 316, 317, 318, 319, 320, 321, 323, 325, 330,
  334, 336, 337, 339, 347, 351, 352, 360, 361, 385, 386, 401, 402, 404, 405, 406, 407, 408, 409, 410,
  412, 413, 414, 415, 417, 419, 423, 424, 425, 432, 434, 435, 440, 443, 469, 470, 475, 478, 479, 480,
];
const MB = 2 ** 20;
const dir = mkdtempSync(join(tmpdir(), 'import-memory-'));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

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

// Three columns (four with CONSENT) keep a million rows under the 50 MB upload limit.
const csvPath = join(dir, 'contacts.csv');
const out = createWriteStream(csvPath);
out.write(CONSENT ? 'phone,first_name,last_name,consent\n' : 'phone,first_name,last_name\n');
for (let i = 0; i < ROWS; i++) {
  const area = AREA_CODES[Math.floor(i / 10_000) % AREA_CODES.length];
  const line = `+1${area}555${String(i % 10_000).padStart(4, '0')},First${i},Last${i}${CONSENT ? ',yes' : ''}\n`;
  if (!out.write(line)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
}
out.end();
await finished(out);
const size = statSync(csvPath).size;

const config = { databaseUrl: process.env.DATABASE_URL || undefined };
const scratchDb = await useScratchDatabase(config, 'bench_memory');
const probeFile = join(dir, 'probe.json');
const dataDir = process.env.DATA_DIR || join(dir, 'data');
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server = spawn(
  process.execPath,
  ['--expose-gc', '--import', 'tsx', '--import', './bench/memory-probe.ts', 'src/main.ts'],
  {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      APP_ENV: 'development',
      LOG_LEVEL: 'warn',
      DATABASE_URL: config.databaseUrl ?? '',
      MEMORY_PROBE_FILE: probeFile,
      MEMORY_PROBE_LIVE_HEAP: process.env.LIVE_HEAP ?? '',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
let output = '';
server.stdout.on('data', (chunk) => {
  output += chunk.toString();
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
  let apiKey: string | undefined;
  for (let i = 0; i < 600 && !apiKey; i++) {
    apiKey = /API key\s+(sk_test_\w+)/.exec(output)?.[1];
    if (!apiKey) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (!apiKey) throw new Error(`the server did not start:\n${output}`);
  // Let start-up settle, then reset the kernel's high-water mark and the probe's peaks before each import.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  console.log(
    `database: ${config.databaseUrl ? 'postgres' : `pglite (${dataDir})`}; CSV: ${ROWS} rows, ` +
      `${(size / MB).toFixed(1)} MB${CONSENT ? ', with consent' : ''}`,
  );
  for (let run = 1; run <= IMPORTS; run++) await measureImport(run, apiKey);
} finally {
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  await scratchDb.drop();
  rmSync(dir, { recursive: true, force: true });
}

/** One import of the file, with the server's memory before, at its peak during it, and after. */
async function measureImport(run: number, apiKey: string): Promise<void> {
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

  const boundary = 'memory';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="contacts.csv"\r\nContent-Type: text/csv\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const started = performance.now();
  const upload = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      `${base}/api/v2/contacts/import`,
      {
        method: 'POST',
        headers: {
          'x-api-key': apiKey,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': String(Buffer.byteLength(head) + size + Buffer.byteLength(tail)),
        },
      },
      (response) => {
        let body = '';
        response.on('data', (chunk) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.write(head);
    const file = createReadStream(csvPath);
    file.pipe(req, { end: false });
    file.on('end', () => req.end(tail));
  });
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
