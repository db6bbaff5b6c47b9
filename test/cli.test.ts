// The `comms` command, built (cli/dist, by `npm ci`'s prepare step; rebuilt here when its sources are newer),
// run in a subprocess against a real server: login keeps the key 0600, send, list and follow, a CSV import
// with a bad row and one with no good row, a campaign created, launched and counted, calls, refusals with
// their exit codes, shell completion that completes, and `webhooks listen` receiving a real event, checking
// its signature and forwarding it to a handler that can check it again.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { webhooks } from '../sdk/src/index.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { startReceiver } from './helpers/receiver.ts';
import { freePort } from './helpers/sipp.ts';

const ROOT = join(import.meta.dirname, '..');
const COMMAND = join(ROOT, 'cli/dist/comms.js');

/** The newest modification time under a directory. */
async function newest(dir: string): Promise<number> {
  let latest = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) latest = Math.max(latest, (await stat(join(entry.parentPath, entry.name))).mtimeMs);
  }
  return latest;
}

/** Builds the SDK and the CLI when their built files are missing or older than their sources. */
async function ensureBuilt(): Promise<void> {
  const built = await stat(COMMAND).then(
    (info) => info.mtimeMs,
    () => 0,
  );
  const sources = Math.max(await newest(join(ROOT, 'sdk/src')), await newest(join(ROOT, 'cli/src')));
  if (built >= sources) return;
  for (const workspace of ['sdk', 'cli']) {
    execFileSync('npm', ['run', 'build', '--workspace', workspace], { cwd: ROOT, stdio: 'ignore' });
  }
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('the comms command', () => {
  let t: TestApp;
  let who: Sender;
  let env: NodeJS.ProcessEnv;
  let configHome: string;
  before(async () => {
    await ensureBuilt();
    t = await startTestApp();
    who = await sender(t);
    configHome = await mkdtemp(join(tmpdir(), 'comms-config-'));
    env = { PATH: process.env.PATH, HOME: configHome, XDG_CONFIG_HOME: configHome, COMMS_BASE_URL: t.url };
  });
  after(() => t.close());

  const comms = (args: string[], input?: string): Promise<Run> =>
    new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        [COMMAND, ...args],
        { env, timeout: 60_000 },
        (error, stdout, stderr) =>
          resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      if (input !== undefined) child.stdin!.end(input);
      else child.stdin!.end();
    });

  /** A long-running command, and a way to wait for a line of its output. */
  function start(args: string[]): { child: ChildProcess; waitFor(pattern: RegExp): Promise<string> } {
    const child = spawn(process.execPath, [COMMAND, ...args], { env });
    let output = '';
    const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      for (const waiter of [...waiters]) {
        const match = output.match(waiter.pattern);
        if (match) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(match[0]);
        }
      }
    });
    return {
      child,
      waitFor: (pattern) =>
        new Promise((resolve, reject) => {
          const match = output.match(pattern);
          if (match) return resolve(match[0]);
          waiters.push({ pattern, resolve });
          setTimeout(() => reject(new Error(`no ${pattern} in: ${output}`)), 30_000).unref();
        }),
    };
  }

  test('login checks the key and keeps it readable by its owner only; whoami uses it', async () => {
    const wrong = await comms(['login'], 'sk_live_not_a_key\n');
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /401/);

    const login = await comms(['login'], `${who.key}\n`);
    assert.equal(login.code, 0, login.stderr);
    assert.match(login.stdout, new RegExp(who.id));
    const file = join(configHome, 'comms', 'config.json');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal((await stat(join(configHome, 'comms'))).mode & 0o777, 0o700);

    const whoami = await comms(['whoami', '--json']);
    assert.equal(whoami.code, 0, whoami.stderr);
    assert.equal(JSON.parse(whoami.stdout).organization.id, who.id);
  });

  test('send, then list and get it; a refusal exits 1 with the API’s message', async () => {
    const sent = await comms(['send', '--to', '+14155550130', '--message', 'From the terminal', '--json']);
    assert.equal(sent.code, 0, sent.stderr);
    const message = JSON.parse(sent.stdout);
    assert.match(message.id, /^msg_/);
    assert.equal(message.segments, 1);

    const table = await comms(['messages', 'list', '--limit', '5']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^ID\s+CREATEDAT\s+DIRECTION/);
    assert.match(table.stdout, new RegExp(`${message.id}.*From the terminal`));
    const listed = JSON.parse((await comms(['messages', 'list', '--json'])).stdout);
    assert.equal(listed[0].id, message.id);
    const one = JSON.parse((await comms(['messages', 'get', message.id, '--json'])).stdout);
    assert.equal(one.body, 'From the terminal');

    const tracked = await comms([
      'send',
      '--to',
      '+14155550130',
      '--message',
      'See https://example.com/x',
      '--track-links',
      '--json',
    ]);
    assert.equal(tracked.code, 0, tracked.stderr);
    assert.match(JSON.parse(tracked.stdout).body, /^See http:\/\/[^ ]+\/l\/[A-Za-z0-9_-]{16}$/);

    const refused = await comms(['send', '--to', 'not a number', '--message', 'x']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^Error: .+\(400/);
    const unreachable = await comms([
      'messages',
      'list',
      '--base-url',
      `http://127.0.0.1:${await freePort()}`,
    ]);
    assert.equal(unreachable.code, 2);
    assert.match(unreachable.stderr, /Is the server running/);
  });

  test('send --at schedules the message; messages cancel cancels it, and a second cancel exits 1', async () => {
    const at = new Date(t.ctx.clock.nowMs() + 2 * 60 * 60 * 1000).toISOString();
    const sent = await comms(['send', '--to', '+14155550131', '--message', 'Later', '--at', at, '--json']);
    assert.equal(sent.code, 0, sent.stderr);
    const message = JSON.parse(sent.stdout);
    assert.equal(message.status, 'scheduled');
    assert.equal(message.sendAt, at);
    const listed = await comms(['messages', 'list', '--status', 'scheduled', '--json']);
    assert.ok(JSON.parse(listed.stdout).some((row: { id: string }) => row.id === message.id));

    const cancelled = await comms(['messages', 'cancel', message.id]);
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.match(cancelled.stdout, /status:\s+cancelled/);
    const again = await comms(['messages', 'cancel', message.id]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /only a scheduled message can be cancelled.*\(409/);

    const soon = await comms([
      'send',
      '--to',
      '+14155550131',
      '--message',
      'x',
      '--at',
      new Date(t.ctx.clock.nowMs()).toISOString(),
    ]);
    assert.equal(soon.code, 1);
    assert.match(soon.stderr, /sendAt must be between 15 minutes and 35 days/);
    const notATime = await comms(['send', '--to', '+14155550131', '--message', 'x', '--at', 'someday']);
    assert.notEqual(notATime.code, 0);
    assert.match(notATime.stderr, /--at: not a date-time/);
  });

  test('conversations list, show a thread in time order, reply, read and close', async () => {
    const phone = '+14155550140';
    const wrote = await t.admin('POST', '/test/carrier/inbound', {
      from: phone,
      to: who.number,
      text: 'Open today?',
    });
    assert.equal(wrote.status, 201, wrote.text);
    const table = await comms(['conversations', 'list', '--unread']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^ID\s+PHONE\s+NUMBER\s+STATUS\s+UNREAD/);
    assert.match(table.stdout, new RegExp(`conv_\\w+\\s+\\${phone}.*open\\s+1 .*< Open today\\?`));
    const [thread] = JSON.parse((await comms(['conversations', 'list', '--unread', '--json'])).stdout);
    assert.equal(thread.phone, phone);

    const replied = await comms(['conversations', 'reply', thread.id, '-m', 'Until 6pm', '--json']);
    assert.equal(replied.code, 0, replied.stderr);
    assert.equal(JSON.parse(replied.stdout).to, phone);
    const shown = await comms(['conversations', 'show', thread.id]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(
      shown.stdout,
      /inbound\s+message\s+received\s+Open today\?[\s\S]*outbound\s+message\s+queued\s+Until 6pm/,
    );
    const asJson = JSON.parse((await comms(['conversations', 'show', thread.id, '--json'])).stdout);
    assert.deepEqual(
      asJson.timeline.map((item: { body: string }) => item.body),
      ['Open today?', 'Until 6pm'],
    );

    assert.match((await comms(['conversations', 'read', thread.id])).stdout, /unread:\s+0/);
    assert.match((await comms(['conversations', 'close', thread.id])).stdout, /status:\s+closed/);
    const missing = await comms(['conversations', 'show', 'conv_missing']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /\(404/);
  });

  test('messages list --follow prints new messages as they arrive', async () => {
    const follow = start(['messages', 'list', '--follow', '--interval', '1', '--limit', '1']);
    try {
      await follow.waitFor(/msg_\w+/);
      const res = await t.request('POST', '/api/v2/messages/send', {
        apiKey: who.key,
        body: { to: '+14155550131', message: 'Arrived while following' },
      });
      assert.equal(res.status, 202, res.text);
      const line = await follow.waitFor(/.*Arrived while following/);
      assert.match(line, new RegExp(res.body.data.id));
    } finally {
      follow.child.kill();
    }
  });

  test('contacts import reports a bad row by number; a file with no good row exits 1 with the report', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'comms-import-'));
    const mixed = join(dir, 'mixed.csv');
    await writeFile(mixed, 'phone,first name\n+14155550140,Ada\nnot a phone,Bad\n+14155550141,Grace\n');
    const run = await comms(['contacts', 'import', mixed]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Imported 2, updated 0, rejected 1/);
    assert.match(run.stdout, /ROW\s+REASON\n3\s+\S/);
    const json = JSON.parse((await comms(['contacts', 'import', mixed, '--json'])).stdout);
    assert.equal(json.updated, 2);

    const bad = join(dir, 'bad.csv');
    await writeFile(bad, 'phone\nnope\n');
    const refused = await comms(['contacts', 'import', bad]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /CONTACTS_IMPORT_NO_VALID_ROWS/);
    assert.match(refused.stderr, /row 2: /);
    const missing = await comms(['contacts', 'import', join(dir, 'absent.csv')]);
    assert.equal(missing.code, 2);
  });

  test('campaigns create, launch and stats; calls list', async () => {
    const contact = await t.request('POST', '/api/v2/contacts', {
      apiKey: who.key,
      body: { phone: '+14155550150' },
    });
    assert.equal(contact.status, 201, contact.text);
    const list = await t.request('POST', '/api/v2/contact-lists', { apiKey: who.key, body: { name: 'CLI' } });
    assert.equal(list.status, 201, list.text);
    await t.request('POST', `/api/v2/contact-lists/${list.body.data.id}/members`, {
      apiKey: who.key,
      body: { contactIds: [contact.body.data.id] },
    });
    const created = await comms([
      'campaigns',
      'create',
      '--name',
      'From the CLI',
      '--message',
      'Hello {{first_name}}',
      '--list',
      list.body.data.id,
      '--quiet-hours',
      'off',
      '--json',
    ]);
    assert.equal(created.code, 0, created.stderr);
    const campaign = JSON.parse(created.stdout);
    assert.equal(campaign.status, 'draft');
    assert.equal(campaign.quietHours, null);
    const launched = await comms(['campaigns', 'launch', campaign.id]);
    assert.equal(launched.code, 0, launched.stderr);
    assert.match(launched.stdout, /status:\s+(sending|scheduled|completed)/);
    // The campaign runs on the test clock: sent, then delivered (the simulated carrier's receipts come later).
    let stats: Record<string, unknown> = {};
    for (let second = 0; second < 600 && stats.status !== 'completed'; second += 5) {
      t.ctx.clock.advance(5);
      await t.ctx.jobs.drain();
      stats = JSON.parse((await comms(['campaigns', 'stats', campaign.id, '--json'])).stdout);
    }
    assert.equal(stats.status, 'completed', JSON.stringify(stats));
    assert.equal(
      await countRows(t, 'SELECT 1 FROM messages WHERE organization_id = $1 AND to_number = $2', [
        who.id,
        '+14155550150',
      ]),
      1,
    );
    assert.match((await comms(['campaigns', 'stats', campaign.id])).stdout, /status:\s+completed/);

    const placed = await t.request('POST', '/api/v2/calls', {
      apiKey: who.key,
      body: { from: who.number, to: '+14155550151' },
    });
    assert.equal(placed.status, 202, placed.text);
    const calls = await comms(['calls', 'list']);
    assert.equal(calls.code, 0, calls.stderr);
    assert.match(calls.stdout, new RegExp(placed.body.data.id));
  });

  test('completion: bash completes commands and subcommands from the real command tree', async () => {
    const script = (await comms(['completion', 'bash'])).stdout;
    const complete = (words: string[]) =>
      execFileSync(
        'bash',
        [
          '-c',
          `${script}\nCOMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _comms; echo "\${COMPREPLY[@]}"`,
        ],
        { encoding: 'utf8' },
      ).trim();
    assert.equal(complete(['comms', 'mes']), 'messages');
    assert.equal(complete(['comms', 'campaigns', 'l']), 'launch list');
    assert.match((await comms(['completion', 'zsh'])).stdout, /bashcompinit/);
  });

  test('webhooks listen verifies a real delivery, forwards it unchanged, and refuses a forged one', async () => {
    const handler = await startReceiver(() => t.ctx.clock.now().getTime());
    const handled = handler.received;
    const port = await freePort();
    await t.ctx.jobs.drain(); // earlier tests' events go out now, before this endpoint exists
    const token = await signIn(t, await createUser(t, { organizationIds: [who.id] }));
    const endpoint = await t.request('POST', '/api/webhooks', {
      token,
      body: { url: `http://127.0.0.1:${port}/`, events: ['message.sent'] },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    const secret = endpoint.body.data.secret as string;
    const forwardTo = `${handler.url}/webhooks`;
    const listener = start([
      'webhooks',
      'listen',
      '--port',
      String(port),
      '--forward-to',
      forwardTo,
      '--secret',
      secret,
    ]);
    try {
      await listener.waitFor(/Listening on/);
      const sent = await t.request('POST', '/api/v2/messages/send', {
        apiKey: who.key,
        body: { to: '+14155550160', message: 'Hook through the CLI' },
      });
      assert.equal(sent.status, 202, sent.text);
      for (let i = 0; i < 50 && handled.length === 0; i++) await t.ctx.jobs.drain();
      assert.equal(handled.length, 1, 'the handler got the event');
      const event = webhooks.verify(handled[0]!.body, handled[0]!.headers, secret);
      assert.equal(event.type, 'message.sent');
      await listener.waitFor(/message\.sent \S+ -> \S+ 200/);

      const forged = await fetch(`http://127.0.0.1:${port}/`, {
        method: 'POST',
        headers: Object.fromEntries(
          ['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
            name,
            String(handled[0]!.headers[name]),
          ]),
        ),
        body: handled[0]!.body.replace('Hook through', 'Forged through'),
      });
      assert.equal(forged.status, 400);
      await listener.waitFor(/refused: No webhook signature matches/);
      assert.equal(handled.length, 1, 'nothing forged reached the handler');
    } finally {
      listener.child.kill();
      await handler.close();
    }
  });
});
