// Preloaded into the server by bench/import-memory.ts (`node --import ./bench/memory-probe.ts`): samples
// process.memoryUsage() every 50 ms and writes the peak of each field, and the latest sample, to
// MEMORY_PROBE_FILE twice a second, so that the bench can tell which kind of memory an import grows (the V8
// heap, buffers, or the rest of RSS: native allocations and PGlite's WebAssembly memory).
import { writeFileSync } from 'node:fs';

const file = process.env.MEMORY_PROBE_FILE;
if (file) {
  type Usage = ReturnType<typeof process.memoryUsage>;
  const peak: Record<string, number> = {};
  let latest: Usage = process.memoryUsage();
  const sample = () => {
    latest = process.memoryUsage();
    for (const [key, value] of Object.entries(latest)) peak[key] = Math.max(peak[key] ?? 0, value);
  };
  const write = () => writeFileSync(file, JSON.stringify({ peak, latest }));
  setInterval(sample, 50).unref();
  // With MEMORY_PROBE_LIVE_HEAP=1 (LIVE_HEAP=1 in the bench), a full collection every second tells live objects from
  // garbage not yet collected: `liveHeap` is the heap in use just after one.
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect && process.env.MEMORY_PROBE_LIVE_HEAP === '1') {
    setInterval(() => {
      collect();
      const live = process.memoryUsage().heapUsed;
      latest = { ...process.memoryUsage() };
      peak.liveHeap = Math.max(peak.liveHeap ?? 0, live);
    }, 1000).unref();
  }
  setInterval(write, 500).unref();
  // The bench resets the peaks just before it uploads, so they are the import's, not the start-up's; and
  // collects first (with --expose-gc), so that garbage of the start-up (PGlite's initdb, the migrations) is
  // not counted as where the import started.
  process.on('SIGUSR2', () => {
    collect?.();
    sample();
    for (const key of Object.keys(peak)) delete peak[key];
    sample();
    write();
  });
}
