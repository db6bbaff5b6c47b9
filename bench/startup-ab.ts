// Start-up time of two or more builds, started alternately in one run so that the host's load bends them alike:
// each build (a checkout with `npm run build` done) gets a DATA_DIR of its own, one first start to create it,
// then ROUNDS rounds of one restart each, timed from spawn to the first 200 from GET /health (bench/startup.ts's
// method). Use it to tell a change in the code from a change in the machine.
// Run: node --import tsx bench/startup-ab.ts /path/to/old/checkout /path/to/new/checkout
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startUntilReady, stop } from './server-start.ts';

const NODE = process.env.BENCH_NODE || process.execPath;
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const PORT = Number(process.env.PORT ?? 3918);
const builds = process.argv.slice(2);
if (builds.length < 2) throw new Error('name two or more checkouts, each built');

const dataDirs = builds.map(() => mkdtempSync(join(tmpdir(), 'bench-startup-ab-')));

async function startOnce(index: number): Promise<number> {
  const { child, ms } = await startUntilReady({
    node: NODE,
    args: ['dist/main.js'],
    dataDir: dataDirs[index]!,
    port: PORT,
    cwd: builds[index],
  });
  await stop(child);
  return ms;
}

try {
  for (let i = 0; i < builds.length; i++) await startOnce(i);
  const times: number[][] = builds.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < builds.length; i++) times[i]!.push(await startOnce(i));
  }
  console.log(`node ${process.version}, ${ROUNDS} rounds, wall time to the first 200 from /health`);
  builds.forEach((build, i) => {
    const sorted = [...times[i]!].sort((a, b) => a - b);
    console.log(`${build}: median ${sorted[sorted.length >> 1]} ms (${times[i]!.join(', ')})`);
  });
} finally {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
}
