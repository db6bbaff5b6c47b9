// Exactly once under a crash and a restart (CONTRACT 8: "a crash, restart, pause or resume never sends a
// recipient twice and never skips one"): on PostgreSQL, a worker process is SIGKILLed in the middle of a
// campaign, two other worker processes finish it, and every recipient has exactly one message, counted once
// against the plan; on both engines, a server stopped mid-campaign and a new one started on the same database.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { freshDatabase, startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, sender } from './helpers/messaging.ts';

const RECIPIENTS = 600;
const SENDERS = 20;

function startWorker(url: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/campaign-worker.ts', url], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('started')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`worker exited early: ${code}`)));
  });
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string) {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('a campaign whose worker is killed mid-batch', {
  skip: !process.env.DATABASE_URL && 'needs PostgreSQL (DATABASE_URL): workers are separate processes',
}, () => {
  let t: TestApp;
  const workers: ChildProcess[] = [];
  before(async () => {
    t = await startTestApp();
  });
  after(async () => {
    for (const worker of workers) worker.kill('SIGKILL');
    await t.close();
  });

  test('every recipient gets exactly one message, counted once, when two other workers finish it', async () => {
    const acme = await sender(t, {}, { type: 'toll_free' });
    const senders = [acme.number];
    for (let i = 1; i < SENDERS; i++) {
      const number = freshNumber('800');
      await t.admin('POST', `/organizations/${acme.id}/numbers`, { number, type: 'toll_free' });
      senders.push(number);
    }
    const api = (method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: acme.key, body });
    const phones = Array.from({ length: RECIPIENTS }, () => freshNumber());
    const imported = await api('POST', '/contacts/import', {
      contacts: phones.map((phone, i) => ({ phone, firstName: `P${i}` })),
    });
    assert.equal(imported.body.data.imported, RECIPIENTS, imported.text);
    const list = (await api('POST', '/contact-lists', { name: 'everyone' })).body.data.id;
    const ids = await t.ctx.db.query<{ id: string }>('SELECT id FROM contacts WHERE organization_id = $1', [
      acme.id,
    ]);
    await api('POST', `/contact-lists/${list}/members`, { contactIds: ids.map((row) => row.id) });
    const created = await api('POST', '/campaigns', {
      name: 'Crash',
      message: 'Hello {{first_name}}',
      contactListIds: [list],
      senders,
      quietHours: null,
    });
    const id = created.body.data.id;
    assert.equal((await api('POST', `/campaigns/${id}/launch`)).status, 200);

    const made = async () =>
      (
        await t.ctx.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM messages WHERE campaign_id = $1',
          [id],
        )
      )[0]!.n;
    const doomed = await startWorker(t.database.url!);
    workers.push(doomed);
    await waitFor(async () => (await made()) > 0, 60_000, 'the first messages');
    doomed.kill('SIGKILL');
    const atKill = await made();
    assert.ok(atKill < RECIPIENTS, `killed mid-campaign (${atKill} made)`);

    workers.push(await startWorker(t.database.url!), await startWorker(t.database.url!));
    await waitFor(
      async () =>
        (await t.ctx.db.query<{ status: string }>('SELECT status FROM campaigns WHERE id = $1', [id]))[0]!
          .status === 'completed',
      120_000,
      'the campaign to complete',
    );

    const perPhone = await t.ctx.db.query<{ to_number: string; n: number }>(
      'SELECT to_number, count(*)::int AS n FROM messages WHERE campaign_id = $1 GROUP BY to_number',
      [id],
    );
    assert.equal(perPhone.length, RECIPIENTS);
    assert.ok(perPhone.every((row) => row.n === 1));
    const recipients = await t.ctx.db.query<{ status: string; n: number }>(
      `SELECT r.status, count(*)::int AS n FROM campaign_recipients r JOIN messages m ON m.id = r.message_id
        WHERE r.campaign_id = $1 GROUP BY r.status`,
      [id],
    );
    assert.deepEqual(recipients, [{ status: 'queued', n: RECIPIENTS }]);
    const [usage] = await t.ctx.db.query<{ messages: number }>(
      "SELECT messages FROM send_usage WHERE organization_id = $1 AND period = 'month'",
      [acme.id],
    );
    assert.equal(usage!.messages, RECIPIENTS, 'each message counted once against the plan');
    const detail = (await api('GET', `/campaigns/${id}`)).body.data;
    assert.equal(detail.message_count, RECIPIENTS);
  });
});

describe('a campaign across a server restart', () => {
  test('the server started after the stop finishes it: every recipient once', async () => {
    const database = await freshDatabase();
    const first = await startTestApp({ database });
    const acme = await sender(first, {}, { type: 'toll_free' });
    const api = (t: TestApp, method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: acme.key, body });
    const phones = Array.from({ length: 30 }, () => freshNumber());
    await api(first, 'POST', '/contacts/import', { contacts: phones.map((phone) => ({ phone })) });
    const list = (await api(first, 'POST', '/contact-lists', { name: 'everyone' })).body.data.id;
    const ids = await first.ctx.db.query<{ id: string }>(
      'SELECT id FROM contacts WHERE organization_id = $1',
      [acme.id],
    );
    await api(first, 'POST', `/contact-lists/${list}/members`, { contactIds: ids.map((row) => row.id) });
    const created = await api(first, 'POST', '/campaigns', {
      name: 'Restart',
      message: 'Hello',
      contactListIds: [list],
      quietHours: null,
    });
    const id = created.body.data.id;
    await api(first, 'POST', `/campaigns/${id}/launch`);
    // A few seconds of sending (3/s on one toll-free number), then the server stops.
    for (let i = 0; i < 4; i++) {
      first.ctx.clock.advance(1);
      await first.ctx.jobs.drain();
    }
    const made = async (t: TestApp) =>
      (
        await t.ctx.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM messages WHERE campaign_id = $1',
          [id],
        )
      )[0]!.n;
    const beforeStop = await made(first);
    assert.ok(beforeStop > 0 && beforeStop < 30, `stopped mid-campaign (${beforeStop} made)`);
    await first.close();

    const second = await startTestApp({ database });
    try {
      for (
        let i = 0;
        i < 40 && (await api(second, 'GET', `/campaigns/${id}`)).body.data.status !== 'completed';
        i++
      ) {
        second.ctx.clock.advance(1 + i);
        await second.ctx.jobs.drain();
      }
      const detail = (await api(second, 'GET', `/campaigns/${id}`)).body.data;
      assert.equal(detail.status, 'completed');
      const perPhone = await second.ctx.db.query<{ to_number: string; n: number }>(
        'SELECT to_number, count(*)::int AS n FROM messages WHERE campaign_id = $1 GROUP BY to_number',
        [id],
      );
      assert.equal(perPhone.length, 30);
      assert.ok(perPhone.every((row) => row.n === 1));
      assert.equal(detail.message_count, 30);
      assert.equal(detail.messages_sent, 30);
    } finally {
      await second.close();
      await database.drop();
    }
  });
});
