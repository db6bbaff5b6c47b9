// Graceful shutdown of the real process (issue 35; docs/operations.md "Shutdown"): src/main.ts in a child
// process on the embedded database in a temporary directory, real HTTP, real SIP on UDP. SIGTERM arrives during
// a burst of sends, with webhook deliveries stuck on a receiver that does not answer, and with a live SIP call
// between two registered phones. Then: a new INVITE is answered 503 with Retry-After while the call goes on;
// both phones get a BYE when the grace period ends and the call is recorded `server_shutdown`; the process
// exits by itself, in its bound; no job is left running (the stuck deliveries were handed back, not left to
// their lease); every accepted message exists once, and after a restart on the same data each is handed to the
// carrier exactly once and delivered, and the handed-back deliveries reach the receiver.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { PgliteDatabase } from '../src/platform/db/index.ts';
import { shutdownBoundMs } from '../src/shutdown.ts';
import { httpRequest } from './helpers/app.ts';
import { SipPhone, type SipText } from './helpers/sip-phone.ts';
import { freePort } from './helpers/sipp.ts';

const GRACE_SECONDS = 3;
const ADMIN_TOKEN = 'shutdown-test-admin-token';

interface Server {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<{ code: number | null; at: number }>;
}

async function startServer(dataDir: string, sipPort: number): Promise<Server> {
  // The process runs on its own embedded database in `dataDir` (the restart reads it again), also in the suite's
  // PostgreSQL pass: on the shared server its worker would take up the other test files' jobs.
  const { DATABASE_URL: _shared, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...inherited,
      APP_ENV: 'development',
      DATA_DIR: dataDir,
      ADMIN_TOKEN,
      PORT: '0',
      HOST: '127.0.0.1',
      SIP_PORT: String(sipPort),
      SIP_HOST: '127.0.0.1',
      SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (chunk) => {
    out += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    out += chunk;
  });
  const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
    child.on('exit', (code) => resolve({ code, at: Date.now() })),
  );
  const url = await waitFor(
    () => out.match(/Server listening at (http:\/\/127\.0\.0\.1:\d+)/)?.[1],
    exited,
    () => `server start:\n${out}`,
    // A first start migrates a new database: slow on a busy machine.
    180_000,
  );
  await waitFor(
    () => out.includes('SIP listener started') || undefined,
    exited,
    () => `SIP listener:\n${out}`,
  );
  return { child, url, output: () => out, exited };
}

/** Polls `check` until it gives a value; fails if the process exits first or after a minute. */
async function waitFor<T>(
  check: () => T | undefined | Promise<T | undefined>,
  exited: Promise<unknown>,
  what: () => string,
  timeoutMs = 60_000,
): Promise<T> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (gone || Date.now() > until) throw new Error(`gave up waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The server's JSON log lines with `msg`. */
function logLines(output: string, msg: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === msg);
}

/** A webhook receiver that holds every request unanswered until `answering` is set, then answers 200. */
async function heldReceiver() {
  const held: http.ServerResponse[] = [];
  const receiver = {
    url: '',
    arrived: [] as { type: string; id: string }[],
    answering: false,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      const event = JSON.parse(body) as { type: string; data: { id: string } };
      receiver.arrived.push({ type: event.type, id: event.data.id });
      if (receiver.answering) response.end('ok');
      else held.push(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}

const dataDir = mkdtempSync(join(tmpdir(), 'comms-shutdown-'));
const servers: Server[] = [];
after(() => {
  for (const server of servers) server.child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

test('SIGTERM during a burst of sends and a live SIP call loses nothing, sends nothing twice, and hangs up with a BYE', async () => {
  const sipPort = await freePort();
  const first = await startServer(dataDir, sipPort);
  servers.push(first);
  // The first start of an empty development database prints the demo organization's key and password.
  const apiKey = await waitFor(
    () => first.output().match(/API key\s+(sk_\S+)/)?.[1],
    first.exited,
    () => `the demo credentials:\n${first.output()}`,
  );
  const password = first.output().match(/Password\s+(\S+)/)?.[1];
  assert.ok(password, first.output());
  const api = (method: string, path: string, body?: unknown) =>
    httpRequest(first.url, method, `/api/v2${path}`, { apiKey, body });

  // Every message.sent is delivered to a receiver that does not answer (yet): deliveries stay running.
  const receiver = await heldReceiver();
  const login = await httpRequest(first.url, 'POST', '/v2/portal/auth/login', {
    body: { email: 'owner@demo.example', password },
  });
  assert.equal(login.status, 200, login.text);
  const hook = await httpRequest(first.url, 'POST', '/api/webhooks', {
    token: login.body.data.token,
    body: { url: receiver.url, events: ['message.sent'] },
  });
  assert.equal(hook.status, 201, hook.text);

  // Two extensions with phones: 102 registered and answering, 101 calling it; the call stays up.
  const extensions: Record<string, { id: string; sip: { username: string; password: string } }> = {};
  for (const extension of ['101', '102', '103']) {
    const created = await api('POST', '/extensions', { extension, name: extension });
    assert.equal(created.status, 201, created.text);
    extensions[extension] = created.body.data;
  }
  const phone = (extension: string) => SipPhone.open(sipPort, { extension, sip: extensions[extension]!.sip });
  const callee = await phone('102');
  const caller = await phone('101');
  const latecomer = await phone('103');
  try {
    assert.equal(await callee.register(), 200);
    await caller.call('102');
    await callee.next('ACK');

    // The burst: four clients sending one after another until the server stops taking requests.
    const accepted: string[] = [];
    const refused: (number | string)[] = [];
    let sigtermAt = 0;
    let lateCall: Promise<SipText> | undefined;
    let line = 0;
    const client = async () => {
      while (accepted.length + refused.length < 200) {
        line += 1;
        const to = `+1202555${String(1000 + line).padStart(4, '0')}`;
        try {
          const res = await api('POST', '/messages/send', {
            from: '+12025550143',
            to,
            message: `Hello ${line}`,
          });
          if (res.status === 202) accepted.push(res.body.data.id);
          else {
            refused.push(res.status);
            return;
          }
        } catch (error) {
          refused.push((error as Error).message);
          return;
        }
        if (accepted.length >= 12 && !sigtermAt) {
          sigtermAt = Date.now();
          first.child.kill('SIGTERM');
          // During the grace period, once new calls are refused, a new call (while the burst goes on).
          lateCall = (async () => {
            await waitFor(
              () =>
                logLines(first.output(), 'shutdown phase done').some(
                  (each) => each.phase === 'refuse new calls',
                ) || undefined,
              first.exited,
              () => `the first phase:\n${first.output()}`,
            );
            return (await latecomer.offer('102')).answer;
          })();
        }
      }
    };
    await Promise.all([client(), client(), client(), client()]);
    assert.ok(sigtermAt > 0, `SIGTERM was sent (${accepted.length} accepted, refused ${refused.join(', ')})`);
    assert.ok(refused.length > 0, 'the server stopped taking requests');

    // The new call was refused 503 with Retry-After; the live call went on.
    const refusal = await lateCall!;
    assert.equal(refusal.status, 503, refusal.text);
    assert.match(refusal.headers['retry-after']?.[0] ?? '', /^\d+$/);
    assert.equal(callee.received.filter((message) => message.method === 'INVITE').length, 1);

    // The grace period ends with the call still up: both phones get a BYE, and the process exits by itself.
    const [calleeBye, callerBye] = await Promise.all([callee.next('BYE'), caller.next('BYE')]);
    assert.equal(calleeBye.method, 'BYE');
    assert.equal(callerBye.method, 'BYE');
    const exit = await first.exited;
    const tookMs = exit.at - sigtermAt;
    assert.equal(exit.code, 0, first.output());
    assert.ok(tookMs < shutdownBoundMs(GRACE_SECONDS), `exited in its bound (${tookMs} ms)`);
    process.stdout.write(
      `# SIGTERM to exit: ${tookMs} ms (grace ${GRACE_SECONDS} s); ${accepted.length} sends accepted, ` +
        `${receiver.arrived.length} deliveries held\n`,
    );
    const phases = logLines(first.output(), 'shutdown phase done');
    assert.deepEqual(
      phases.map((each) => each.phase),
      [
        'refuse new calls',
        'stop taking requests',
        'finish or hand back jobs',
        'wait for live calls',
        'end remaining calls',
        'close SIP',
        'release connections',
      ],
    );
    const jobsPhase = phases.find((each) => each.phase === 'finish or hand back jobs')!;
    assert.ok(
      (jobsPhase.handedBack as number) >= 1,
      `the stuck deliveries were handed back: ${first.output()}`,
    );
    assert.equal(phases.find((each) => each.phase === 'end remaining calls')!.ended, 1);

    // What the stopped process left: nothing running, every accepted message once, the call's cause.
    let db = await PgliteDatabase.open(dataDir);
    try {
      const running = await db.query('SELECT id, queue FROM jobs WHERE status = $1', ['running']);
      assert.deepEqual(running, [], 'no job left to its lease');
      const messages = await db.query<{ id: string; status: string }>('SELECT id, status FROM messages');
      assert.deepEqual(messages.map((row) => row.id).sort(), [...accepted].sort());
      const [call] = await db.query<{ status: string; hangup_cause: string }>(
        'SELECT status, hangup_cause FROM calls',
      );
      assert.deepEqual(call, { status: 'completed', hangup_cause: 'server_shutdown' });
    } finally {
      await db.close();
    }

    // A restart on the same data finishes the rest: each message is dispatched and delivered once, and the
    // handed-back deliveries reach the receiver, which answers now.
    receiver.answering = true;
    const second = await startServer(dataDir, sipPort);
    servers.push(second);
    const finalStatuses = new Set(['delivered']);
    await waitFor(
      () => (new Set(receiver.arrived.map((each) => each.id)).size === accepted.length ? true : undefined),
      second.exited,
      () =>
        `every message.sent delivered (${receiver.arrived.length} of ${accepted.length}):\n${second.output()}`,
    );
    let statuses: string[] = [];
    await waitFor(
      async () => {
        const page = await httpRequest(second.url, 'GET', '/api/v2/messages?limit=100', { apiKey });
        statuses = (page.body.data as { status: string }[]).map((row) => row.status);
        return statuses.length === accepted.length && statuses.every((status) => finalStatuses.has(status))
          ? true
          : undefined;
      },
      second.exited,
      () => `every message delivered (${statuses.join(', ')}):\n${second.output()}`,
    );
    second.child.kill('SIGTERM');
    assert.equal((await second.exited).code, 0, second.output());

    db = await PgliteDatabase.open(dataDir);
    try {
      const sentEvents = await db.query<{ id: string; n: number }>(
        `SELECT data->>'id' AS id, count(*)::int AS n FROM events WHERE type = 'message.sent' GROUP BY 1`,
      );
      assert.deepEqual(
        sentEvents.map((row) => row.id).sort(),
        [...accepted].sort(),
        'each accepted message was handed to the carrier',
      );
      assert.ok(
        sentEvents.every((row) => row.n === 1),
        'and exactly once',
      );
      const dispatches = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobs WHERE queue = 'messages.dispatch' AND status = 'completed'
          GROUP BY payload->>'messageId'`,
      );
      assert.equal(dispatches.length, accepted.length);
      assert.ok(dispatches.every((row) => row.n === 1));
      const deliveredIds = new Set(receiver.arrived.map((each) => each.id));
      assert.equal(deliveredIds.size, accepted.length, 'every message.sent reached the receiver');
    } finally {
      await db.close();
    }
  } finally {
    callee.close();
    caller.close();
    latecomer.close();
    await receiver.close();
  }
});
