// One import must not stall every tenant (issue 11, finding 2). Starts the real server as its own process on
// embedded PGlite (files in a temporary DATA_DIR, as `npm start` keeps them), uploads a 1,000,000-row CSV as one
// multipart request, and meanwhile asks GET /health every 100 ms. Reports the health check's latency during the
// import beside its latency on the idle server (the baseline, same run), and the server's RSS before, at its
// peak, and after the import.
// Run: npm run bench:import-isolation   (ROWS=… to change the size)
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';

const ROWS = Number(process.env.ROWS ?? 1_000_000);
// 100 area codes in service, × 10,000 lines: a million distinct, valid numbers.
// biome-ignore format: a table
const AREA_CODES = [
  201, 202, 203, 205, 206, 207, 208, 209, 210, 212, 213, 214, 215, 216, 217, 218, 219, 224, 225, 228,
  229, 231, 234, 239, 240, 248, 251, 252, 253, 254, 256, 260, 262, 267, 269, 270, 276, 281, 301, 302,
  303, 304, 305, 307, 308, 309, 310, 312, 313, 314, 315, 316, 317, 318, 319, 320, 321, 323, 325, 330,
  334, 336, 337, 339, 347, 351, 352, 360, 361, 385, 386, 401, 402, 404, 405, 406, 407, 408, 409, 410,
  412, 413, 414, 415, 417, 419, 423, 424, 425, 432, 434, 435, 440, 443, 469, 470, 475, 478, 479, 480,
];
const dir = mkdtempSync(join(tmpdir(), 'import-isolation-'));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

async function health(base: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${base}/health`);
  await response.text();
  if (response.status !== 200) throw new Error(`/health answered ${response.status}`);
  return performance.now() - started;
}

const summary = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { count: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1]! };
};

// The file: written to disk and streamed, so the client's memory is not what is measured.
const csvPath = join(dir, 'contacts.csv');
const out = createWriteStream(csvPath);
// Three columns keep a million rows under the 50 MB upload limit.
out.write('phone,first_name,last_name\n');
for (let i = 0; i < ROWS; i++) {
  const area = AREA_CODES[Math.floor(i / 10_000) % AREA_CODES.length];
  const line = `+1${area}555${String(i % 10_000).padStart(4, '0')},First${i},Last${i}\n`;
  if (!out.write(line)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
}
out.end();
await finished(out);
console.log(`CSV: ${ROWS} rows, ${(statSync(csvPath).size / 1024 / 1024).toFixed(1)} MB`);

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
  env: {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: join(dir, 'data'),
    APP_ENV: 'development',
    LOG_LEVEL: 'warn',
    DATABASE_URL: '',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let output = '';
server.stdout.on('data', (chunk) => {
  output += chunk.toString();
});
try {
  let apiKey: string | undefined;
  for (let i = 0; i < 600 && !apiKey; i++) {
    apiKey = /API key\s+(sk_test_\w+)/.exec(output)?.[1];
    if (!apiKey) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (!apiKey) throw new Error(`the server did not start:\n${output}`);
  for (let i = 0; i < 50; i++) await health(base);

  const idle: number[] = [];
  for (let i = 0; i < 100; i++) {
    idle.push(await health(base));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const rssBefore = rssMb(server.pid!);

  const boundary = 'isolation';
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
          'content-length': String(
            Buffer.byteLength(head) + statSync(csvPath).size + Buffer.byteLength(tail),
          ),
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
  let peakRss = rssBefore;
  const during: number[] = [];
  void upload.finally(() => {
    done = true;
  });
  while (!done) {
    during.push(await health(base));
    peakRss = Math.max(peakRss, rssMb(server.pid!));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const result = await upload;
  const seconds = (performance.now() - started) / 1000;
  // Give the server's allocator a few seconds to return what it freed.
  await new Promise((resolve) => setTimeout(resolve, 5000));
  const rssAfter = rssMb(server.pid!);

  console.log(`import: ${result.status} in ${seconds.toFixed(1)} s (${Math.round(ROWS / seconds)} rows/s)`);
  console.log(`        ${result.body.slice(0, 120)}`);
  const fmt = (s: ReturnType<typeof summary>) =>
    `n=${s.count} p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`;
  console.log(`/health, idle server (baseline): ${fmt(summary(idle))}`);
  console.log(`/health, during the import:      ${fmt(summary(during))}`);
  console.log(
    `server RSS: ${rssBefore.toFixed(0)} MB before, ${peakRss.toFixed(0)} MB peak, ${rssAfter.toFixed(0)} MB ` +
      `after (${(rssAfter - rssBefore).toFixed(0)} MB above the start)`,
  );
} finally {
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
}
