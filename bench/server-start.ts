// Starting a built server (`node dist/main.js` or another way) and timing it to ready, for the start-up benches
// (startup.ts, startup-ab.ts): from spawn to the first 200 of GET /health, on a DATA_DIR of the caller's.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** CPU time (user + system) the process has used, in ms: less bent than wall time by other work on the machine. */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime, fields 14 and 15 of stat (11 and 12 after the command), in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Spawns `node args` (in `cwd`) and waits for its /health to answer 200: the child, the ms it took, its CPU. */
export async function startUntilReady(options: {
  node: string;
  args: string[];
  dataDir: string;
  port: number;
  cwd?: string;
}): Promise<{ child: ChildProcess; ms: number; cpu: number }> {
  const { node, args, dataDir, port, cwd } = options;
  const started = performance.now();
  const child = spawn(node, args, {
    cwd,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, ms: Math.round(performance.now() - started), cpu: cpuMs(child.pid!) };
    await sleep(5);
  }
}

export async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
