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
//   3. Overload (issue 38): OVERLOAD_RATE calls/s (1000) offered for OVERLOAD_SECONDS (10) with no cap on calls
//      at once, so SIPp offers what it says; the trunk takes a 503 as a refusal (it ACKs and ends the call).
//      Calls completed per second beside those at RATE in the same run (the target: at least 0.9 of them), the
//      calls refused with 503 (Retry-After) and those that failed (SIPp's timeouts). With SHED_COMPARE=1 the same
//      offer again with the listener's shedding switched off, for the before.
// Run: npm run bench:sip   CALLS (2000), RATE (400), LIMIT (200), HOLD (500; 0 skips it), HOLD_SECONDS (20),
// OVERLOAD_RATE (1000; 0 skips it), OVERLOAD_SECONDS (10), DATABASE_URL for PostgreSQL (a scratch database is
// created and dropped).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import { ADMISSION_WAIT_BUDGET_MS } from '../src/modules/voice/sip/admission-load.ts';
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
const OVERLOAD_RATE = Number(process.env.OVERLOAD_RATE ?? 1000);
const OVERLOAD_SECONDS = Number(process.env.OVERLOAD_SECONDS ?? 10);
const SHED_COMPARE = process.env.SHED_COMPARE === '1';

/** The calls' records: completed and not, and the seconds from the first start to the last completed end. */
const COUNT_CALLS = `SELECT count(*) FILTER (WHERE status = 'completed')::int AS completed,
         count(*) FILTER (WHERE status <> 'completed')::int AS other,
         COALESCE(EXTRACT(EPOCH FROM max(ended_at) FILTER (WHERE status = 'completed') - min(started_at)), 0)::float8
           AS seconds
    FROM calls`;
interface CallCounts {
  completed: number;
  other: number;
  seconds: number;
}

/**
 * The trunk's call, which may be refused: a 503 (our overload shedding) is ACKed and ends the call, which SIPp
 * then counts as successful; the calls completed are read from the database. The ACK carries the 503's Via, so
 * the INVITE's branch (section 17.1.1.3): SIPp's `[branch-N]` counts scenario elements, and an ACK that matched
 * no transaction left each 503 resent for 32 s, ten times the cost of the refusal.
 */
const refusableTrunkCall = trunkCall({})
  .replace(
    '<recv response="200" rrs="true"/>',
    '<recv response="503" optional="true" next="refused"/>\n  <recv response="200" rrs="true"/>',
  )
  .replace(
    '</scenario>',
    `<nop next="done"/>
  <label id="refused"/>
  <send><![CDATA[
      ACK sip:[field1]@[remote_ip]:[remote_port] SIP/2.0
      [last_Via:]
      From: <sip:+14155550123@[local_ip]>;tag=[pid]SIPpTag[call_number]
      To: <sip:[field1]@[remote_ip]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Max-Forwards: 70
      Content-Length: 0

    ]]></send>
  <label id="done"/>
</scenario>`,
  );

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
): Promise<{ successful: number; failed: number; timedOut: number; seconds: number }> {
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
  return {
    successful: value('SuccessfulCall(C)'),
    failed: value('FailedCall(C)'),
    // Calls SIPp gave up on: a request resent to its limit with no answer, or an answer never received.
    timedOut: value('FailedMaxUDPRetrans(C)') + value('FailedTimeoutOnRecv(C)'),
    seconds,
  };
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
const held =
  HOLD > 0
    ? await sipp(`127.0.0.1:${sipPort}`, {
        scenario: trunkCall({ waitMs: HOLD_SECONDS * 1000 }),
        localPort: trunkPort,
        extra: rate(HOLD, 100, HOLD),
      })
    : { successful: 0, failed: 0, timedOut: 0, seconds: 0 };
sampling = false;
await sampler;
await waitForNoLiveCalls();

// 1. Calls set up and torn down per second.
progress(`${CALLS} calls offered at ${RATE}/s through the PBX`);
await db.query('DELETE FROM calls');
const refusedBeforeThrough = ctx.sipListener.admissions.refused;
const through = await sipp(`127.0.0.1:${sipPort}`, {
  scenario: refusableTrunkCall,
  localPort: trunkPort,
  extra: rate(CALLS, RATE, LIMIT),
});
await waitForNoLiveCalls();
const [recorded] = await db.query<CallCounts>(COUNT_CALLS);
const refusedThrough = ctx.sipListener.admissions.refused - refusedBeforeThrough;
/**
 * Calls completed per second: completed records over SIPp's run time, which ends when its last call has
 * ended, a failed one included (so a call that times out lengthens it). The time from the first call's start
 * to the last completed one's end is printed too.
 */
const completedRate = recorded!.completed / through.seconds;
const throughOutcomes = await outcomes();

/** The calls that did not complete, by status and cause. */
async function outcomes(): Promise<string> {
  const rows = await db.query<{ status: string; hangup_cause: string | null; n: number }>(
    `SELECT status, hangup_cause, count(*)::int AS n FROM calls WHERE status <> 'completed'
      GROUP BY 1, 2 ORDER BY 3 DESC`,
  );
  return rows.map((row) => `${row.status}/${row.hangup_cause} ${row.n}`).join(', ') || 'none';
}

/** OVERLOAD_RATE offered for OVERLOAD_SECONDS, nothing capping the calls at once; shedding on or off. */
async function overload(shedding: boolean) {
  await db.query('DELETE FROM calls');
  const admissions = ctx.sipListener.admissions;
  admissions.budgetMs = shedding ? ADMISSION_WAIT_BUDGET_MS : Number.POSITIVE_INFINITY;
  const refusedBefore = admissions.refused;
  const calls = OVERLOAD_RATE * OVERLOAD_SECONDS;
  progress(
    `${calls} calls offered at ${OVERLOAD_RATE}/s through the PBX, shedding ${shedding ? 'on' : 'off'}`,
  );
  const run = await sipp(`127.0.0.1:${sipPort}`, {
    scenario: refusableTrunkCall,
    localPort: trunkPort,
    extra: rate(calls, OVERLOAD_RATE, calls),
  });
  await waitForNoLiveCalls();
  const [row] = await db.query<CallCounts>(COUNT_CALLS);
  admissions.budgetMs = ADMISSION_WAIT_BUDGET_MS;
  return {
    ...row!,
    outcomes: await outcomes(),
    failed: run.failed,
    timedOut: run.timedOut,
    sippSeconds: run.seconds,
    refused: admissions.refused - refusedBefore,
  };
}
const overloaded = OVERLOAD_RATE > 0 ? await overload(true) : undefined;
const unshed = OVERLOAD_RATE > 0 && SHED_COMPARE ? await overload(false) : undefined;
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
  `calls set up and torn down: ${completedRate.toFixed(0)}/s through the PBX (${recorded!.completed} completed, ` +
    `${refusedThrough} refused 503; not completed: ${throughOutcomes}; SIPp ${through.failed} failed, ` +
    `${through.timedOut} timed out; SIPp ran ${through.seconds.toFixed(1)} s, the completed calls took ` +
    `${recorded!.seconds.toFixed(1)} s from the first start to the last end) vs ` +
    `${perSecond(direct).toFixed(0)}/s SIPp to SIPp (${direct.successful} ok, ${direct.failed} failed): ` +
    `${(completedRate / perSecond(direct)).toFixed(2)}x`,
);
if (HOLD > 0)
  console.log(
    `concurrent calls held: ${peakLive} live at once of ${HOLD} (${held.successful} ok, ${held.failed} failed), ` +
      `RSS ${mb(rssBefore)} MB -> ${mb(peakRss)} MB (+${mb(peakRss - rssBefore)} MB, ` +
      `${Math.round((peakRss - rssBefore) / 1024 / Math.max(1, peakLive))} KB a call); SIPp to SIPp: ` +
      `${directHeld.successful} ok, ${directHeld.failed} failed`,
  );
for (const [label, run] of [
  ['shedding', overloaded],
  ['without shedding', unshed],
] as const) {
  if (!run) continue;
  const completedPerSecond = run.completed / run.sippSeconds;
  console.log(
    `overload, ${OVERLOAD_RATE}/s offered for ${OVERLOAD_SECONDS} s (${label}): ` +
      `${completedPerSecond.toFixed(0)}/s completed (${run.completed} completed, ${run.refused} refused 503; ` +
      `not completed: ${run.outcomes}; SIPp ${run.failed} failed, ${run.timedOut} timed out; SIPp ran ` +
      `${run.sippSeconds.toFixed(1)} s, the completed calls took ${run.seconds.toFixed(1)} s from the first ` +
      'start to the last completed end) = ' +
      `${(completedPerSecond / completedRate).toFixed(2)}x the rate at ${RATE}/s offered`,
  );
}
await db.close();
await scratch.drop();
process.exit(0);
