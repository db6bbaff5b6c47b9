// One import must not stall every tenant (issue 11, finding 2). Starts the real server as its own process on
// embedded PGlite (files in a temporary DATA_DIR, as `npm start` keeps them), uploads a 1,000,000-row CSV as one
// multipart request, and meanwhile asks GET /health every 100 ms. Reports the health check's latency during the
// import beside its latency on the idle server (the baseline, same run), and the server's RSS before, at its
// peak, and after the import.
// Run: npm run bench:import-isolation   (ROWS=… to change the size)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startImportServer, uploadCsv, writeContactsCsv } from './import-server.ts';

const ROWS = Number(process.env.ROWS ?? 1_000_000);
const dir = mkdtempSync(join(tmpdir(), 'import-isolation-'));

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
const csvBytes = await writeContactsCsv(csvPath, ROWS);
console.log(`CSV: ${ROWS} rows, ${(csvBytes / 1024 / 1024).toFixed(1)} MB`);

const { server, base, apiKey, stop } = await startImportServer({
  DATA_DIR: join(dir, 'data'),
  DATABASE_URL: '',
});
try {
  for (let i = 0; i < 50; i++) await health(base);

  const idle: number[] = [];
  for (let i = 0; i < 100; i++) {
    idle.push(await health(base));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const rssBefore = rssMb(server.pid!);

  const started = performance.now();
  const upload = uploadCsv(base, apiKey, csvPath);

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
  await stop();
  rmSync(dir, { recursive: true, force: true });
}
