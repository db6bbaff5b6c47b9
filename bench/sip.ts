// Real SIP (issue 15's bench). The whole product in one process with its SIP listener, as `npm start` runs it
// with SIP_PORT and SIP_TRUNK_URI set; SIPp (Debian's `sip-tester`) plays the trunk and the phone.
//   1. Calls set up and torn down per second: SIPp as the trunk calls one of our numbers CALLS times, offered
//      at RATE calls/s (at most LIMIT at once); the number routes to an extension whose phone (SIPp's built-in
//      `uas`, registered) answers; the trunk hangs up at once. Each call is two dialogs back to back, an RTP
//      relay, and the call's record and events through the database. The figure: calls completed per second.
//      Baseline, same run: the same SIPp trunk scenario against a SIPp `uas` directly (a peer talking to
//      itself: what the machine and SIPp manage with no PBX between them).
//   2. Concurrent calls held: HOLD calls set up the same way, each held HOLD_SECONDS, all up at once; the live
//      calls are counted in the database while all are up, and the process's RSS is sampled against its RSS
//      before the first call. Baseline: SIPp against SIPp holding as many.
// Run: npm run bench:sip   CALLS (2000), RATE (400), LIMIT (200), HOLD (500), HOLD_SECONDS (20), DATABASE_URL
// for PostgreSQL (a scratch database is created and dropped).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { createRuntime } from '../src/runtime.ts';
import { freePort, registerScenario, trunkCall } from '../test/helpers/sipp.ts';
import { UNLIMITED_SENDER } from './fixtures.ts';
import { useScratchDatabase } from './scratch-database.ts';

const CALLS = Number(process.env.CALLS ?? 2000);
const RATE = Number(process.env.RATE ?? 400);
const LIMIT = Number(process.env.LIMIT ?? 200);
const HOLD = Number(process.env.HOLD ?? 500);
const HOLD_SECONDS = Number(process.env.HOLD_SECONDS ?? 20);

const sipPort = await freePort();
const trunkPort = await freePort();
const config = loadConfig({
  APP_ENV: 'development',
  DATA_DIR: 'memory://',
  ADMIN_TOKEN: 'bench-admin-token-0123456789',
  ...process.env,
  SIP_TRUNK_URI: `sip:127.0.0.1:${trunkPort}`,
  LOG_LEVEL: 'silent',
});
const scratch = await useScratchDatabase(config, 'bench_sip');
const db = await openDatabase(config);
await migrate(db);
const ctx = createRuntime(config, db, pino({ level: 'silent' }));
ctx.sipListener.start({ port: sipPort, host: '127.0.0.1' });
const work = mkdtempSync(join(tmpdir(), 'bench-sip-'));
const progress = (what: string) => process.stderr.write(`[${new Date().toISOString()}] ${what}\n`);
const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

// Setup (not measured): a number routed to extension 100, whose phone is SIPp registered from `phonePort`.
const org = await ctx.organizations.create({ name: 'Bench SIP', ...UNLIMITED_SENDER });
const number = await ctx.numbers.add(org.id, { number: '+18005550100', type: 'toll_free' });
await ctx.calls.setRegion('us', 1_000_000);
const extension = await ctx.extensions.create(org, {
  extension: '100',
  name: 'Bench phone',
  voicemail: { enabled: false },
} as never);
await ctx.numbers.update(org, number.id, { voiceRoute: { type: 'extension', target: extension.id } });
const phonePort = await freePort();
const registered = await sipp(`127.0.0.1:${sipPort}`, {
  scenario: registerScenario(200, true).replace('Expires: 120', 'Expires: 3600'),
  localPort: phonePort,
  extra: [
    '-s',
    extension.sip.username,
    '-au',
    extension.sip.username,
    '-ap',
    extension.sip.password!,
    '-m',
    '1',
  ],
});
if (registered.failed !== 0 || registered.successful !== 1)
  throw new Error(`the bench phone did not register: ${JSON.stringify(registered)}`);

/** Runs SIPp to the end; its successful and failed calls (from its statistics file) and the seconds it took. */
async function sipp(
  target: string,
  options: { scenario: string; localPort: number; extra: string[] },
): Promise<{ successful: number; failed: number; seconds: number }> {
  const dir = mkdtempSync(join(work, 'run-'));
  const file = join(dir, 'scenario.xml');
  writeFileSync(file, options.scenario);
  // `[field0]` of the scenarios: the SIP domain; `[field1]`: the number the trunk calls.
  writeFileSync(join(dir, 'fields.inf'), `SEQUENTIAL\n${config.sipDomain};${number.number};\n`);
  const started = performance.now();
  const child = spawn(
    'sipp',
    [
      target,
      '-sf',
      file,
      '-inf',
      join(dir, 'fields.inf'),
      '-i',
      '127.0.0.1',
      '-p',
      String(options.localPort),
      '-mp',
      String(await freePort()),
      '-nostdin',
      '-trace_stat',
      '-fd',
      '1',
      '-timeout',
      '300s',
      ...options.extra,
    ],
    { cwd: dir, stdio: 'ignore' },
  );
  await new Promise((resolve) => child.on('exit', resolve));
  const seconds = (performance.now() - started) / 1000;
  const stats = readdirSync(dir).find((name) => name.startsWith('scenario_') && name.endsWith('.csv'));
  if (!stats) throw new Error('SIPp wrote no statistics');
  const [header, ...rows] = readFileSync(join(dir, stats), 'utf8').trim().split('\n');
  const columns = header!.split(';');
  const last = rows.at(-1)!.split(';');
  const value = (name: string) => Number(last[columns.indexOf(name)]);
  return { successful: value('SuccessfulCall(C)'), failed: value('FailedCall(C)'), seconds };
}

/** SIPp answering every call on `port` (its built-in uas scenario) until stopped. */
async function answeringPeer(port: number): Promise<ChildProcess> {
  const child = spawn(
    'sipp',
    ['-sn', 'uas', '-i', '127.0.0.1', '-p', String(port), '-mp', String(await freePort()), '-nostdin'],
    { cwd: work, stdio: 'ignore' },
  );
  await sleep(300); // It binds its port.
  return child;
}

async function liveCalls(): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM calls WHERE ended_at IS NULL AND status = 'in_progress'",
  );
  return row!.n;
}

async function waitForNoLiveCalls(): Promise<void> {
  for (let i = 0; i < 120; i++) {
    const [row] = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM calls WHERE ended_at IS NULL',
    );
    if (row!.n === 0) return;
    await sleep(500);
  }
}

const rate = (calls: number, offered: number, limit: number) => [
  '-m',
  String(calls),
  '-r',
  String(offered),
  '-l',
  String(limit),
];
const phone = await answeringPeer(phonePort);

// 2. HOLD concurrent calls, first: the process as it is after start.
global.gc?.();
await sleep(1000);
const rssBefore = process.memoryUsage().rss;
progress(`holding ${HOLD} calls for ${HOLD_SECONDS} s`);
let peakLive = 0;
let peakRss = 0;
let sampling = true;
const sampler = (async () => {
  while (sampling) {
    peakLive = Math.max(peakLive, await liveCalls());
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    await sleep(1000);
  }
})();
const held = await sipp(`127.0.0.1:${sipPort}`, {
  scenario: trunkCall({ waitMs: HOLD_SECONDS * 1000 }),
  localPort: trunkPort,
  extra: rate(HOLD, 100, HOLD),
});
sampling = false;
await sampler;
await waitForNoLiveCalls();

// 1. Calls set up and torn down per second.
progress(`${CALLS} calls offered at ${RATE}/s through the PBX`);
await db.query('DELETE FROM calls');
const through = await sipp(`127.0.0.1:${sipPort}`, {
  scenario: trunkCall({}),
  localPort: trunkPort,
  extra: rate(CALLS, RATE, LIMIT),
});
await waitForNoLiveCalls();
const [recorded] = await db.query<{ completed: number; other: number }>(
  `SELECT count(*) FILTER (WHERE status = 'completed')::int AS completed,
          count(*) FILTER (WHERE status <> 'completed')::int AS other FROM calls`,
);
phone.kill();
ctx.sipListener.stop();

// The baselines: SIPp against SIPp, the same scenarios.
const peerPort = await freePort();
const peer = await answeringPeer(peerPort);
progress(`${CALLS} calls offered at ${RATE}/s SIPp to SIPp`);
const direct = await sipp(`127.0.0.1:${peerPort}`, {
  scenario: trunkCall({}),
  localPort: await freePort(),
  extra: rate(CALLS, RATE, LIMIT),
});
progress(`holding ${HOLD} calls SIPp to SIPp`);
const directHeld = await sipp(`127.0.0.1:${peerPort}`, {
  scenario: trunkCall({ waitMs: HOLD_SECONDS * 1000 }),
  localPort: await freePort(),
  extra: rate(HOLD, 100, HOLD),
});
peer.kill();

const perSecond = (run: { successful: number; seconds: number }) => run.successful / run.seconds;
console.log(`engine: ${db.engine}`);
console.log(
  `calls set up and torn down: ${perSecond(through).toFixed(0)}/s through the PBX (${through.successful} ok, ` +
    `${through.failed} failed; records: ${recorded!.completed} completed, ${recorded!.other} other) vs ` +
    `${perSecond(direct).toFixed(0)}/s SIPp to SIPp (${direct.successful} ok, ${direct.failed} failed): ` +
    `${(perSecond(through) / perSecond(direct)).toFixed(2)}x`,
);
console.log(
  `concurrent calls held: ${peakLive} live at once of ${HOLD} (${held.successful} ok, ${held.failed} failed), ` +
    `RSS ${mb(rssBefore)} MB -> ${mb(peakRss)} MB (+${mb(peakRss - rssBefore)} MB, ` +
    `${Math.round((peakRss - rssBefore) / 1024 / Math.max(1, peakLive))} KB a call); SIPp to SIPp: ` +
    `${directHeld.successful} ok, ${directHeld.failed} failed`,
);
await db.close();
await scratch.drop();
process.exit(0);
