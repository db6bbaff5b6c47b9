// A plain send in one statement (docs/messaging.md, "A plain send in one statement"): a send due now, without
// merge variables, media, tracked links or an idempotency key, from a paid organization past its first 72
// hours, is checked, counted and written by one statement and no transaction; it writes what the full path
// writes; and whatever it cannot judge (an opted-out recipient, a limit reached, an organization changed since
// the request read it, a counter filled while it waited) leaves nothing behind and gets the full path's answer.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { Queryable } from '../src/platform/db/index.ts';
import { isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, type Sender, send, sender } from './helpers/messaging.ts';

const onPostgres = Boolean(process.env.DATABASE_URL);

describe('a plain send in one statement', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const at = (iso: string) => t.ctx.clock.set(new Date(iso));
  const old = { createdAt: '2026-01-01T00:00:00.000Z' };

  /**
   * Runs `work`, counting the statements (but the workers' wake-ups) and transactions it starts on the database,
   * and the errors they end with.
   */
  async function counting<T>(work: () => Promise<T>) {
    const db = t.ctx.db as unknown as Queryable & { transaction: (...args: unknown[]) => Promise<unknown> };
    const query = db.query;
    const transaction = db.transaction;
    const seen = { statements: 0, transactions: 0, errors: [] as string[] };
    db.query = (async (...args: Parameters<Queryable['query']>) => {
      // The workers' wake-up after an enqueue is its own statement, sent beside the send (jobs/announcer.ts).
      if (!args[0].startsWith('SELECT pg_notify(')) seen.statements += 1;
      try {
        return await query.apply(db, args);
      } catch (error) {
        seen.errors.push(String((error as { code?: string }).code));
        throw error;
      }
    }) as Queryable['query'];
    db.transaction = (...args: unknown[]) => {
      seen.transactions += 1;
      return transaction.apply(db, args);
    };
    try {
      return { result: await work(), ...seen };
    } finally {
      db.query = query;
      db.transaction = transaction;
    }
  }

  async function usage(who: Sender) {
    const rows = await t.ctx.db.query<{ period: string; segments: number; messages: number }>(
      'SELECT period, segments, messages FROM send_usage WHERE organization_id = $1 ORDER BY period',
      [who.id],
    );
    return Object.fromEntries(
      rows.map((row) => [row.period, { segments: row.segments, messages: row.messages }]),
    );
  }

  /** A message's row as a send leaves it, with its dispatch job, without what differs from send to send. */
  async function written(id: string) {
    const [row] = await t.ctx.db.query<Record<string, unknown>>(
      `SELECT m.organization_id, m.direction, m.origin, m.from_number, m.body, m.segments, m.encoding, m.media_urls,
              m.media_files, m.media_count, m.status, m.idempotency_key IS NULL AS unkeyed, m.send_at, m.quiet_start,
              m.quiet_end, m.status_updated_at = m.created_at AS status_at_creation,
              j.queue, j.payload->>'messageId' = m.id AS job_for_message, j.dedupe_key = 'dispatch:' || m.id AS job_key
         FROM messages m LEFT JOIN jobs j ON j.payload->>'messageId' = m.id WHERE m.id = $1`,
      [id],
    );
    return row;
  }

  test('is one statement without a transaction, and writes what the full path writes', async () => {
    at('2026-11-10T12:00:00.000Z');
    const org = await sender(t, old);
    const known = await t.ctx.organizations.get(org.id);
    const sendAs = (body: Record<string, unknown>, key?: string) =>
      t.ctx.messages.send(known, { to: freshNumber(), ...body } as never, 'api', key);
    await sendAs({ message: 'warms the caches' });

    const plain = await counting(() => sendAs({ message: 'plain' }));
    assert.equal(plain.statements, 1, 'one statement');
    assert.equal(plain.transactions, 0, 'no transaction');
    assert.equal(plain.result.result.status, 'queued');

    // The same text through the full path (an idempotency key takes it): a transaction of several statements.
    const full = await counting(() => sendAs({ message: 'plain' }, 'key-1'));
    assert.equal(full.transactions, 1);
    const merged = await counting(() => sendAs({ message: 'Hi {{first_name|there}}' }));
    assert.equal(merged.transactions, 1, 'merge variables take the full path');

    assert.deepEqual(
      { ...(await written(plain.result.result.id)) },
      { ...(await written(full.result.result.id)), unkeyed: true },
    );
    const { createdAt: _a, id: _b, to: _c, ...plainAnswer } = plain.result.result;
    const { createdAt: _d, id: _e, to: _f, ...fullAnswer } = full.result.result;
    assert.deepEqual(plainAnswer, fullAnswer);
    // Four sends of one segment, each counted in the day and the month.
    assert.deepEqual(await usage(org), {
      day: { segments: 4, messages: 4 },
      month: { segments: 4, messages: 4 },
    });
    // Each booked the number's next slot: four slots a pacing interval apart, in the order sent.
    const slots = await t.ctx.db.query<{ run_at: Date }>(
      `SELECT j.run_at FROM jobs j JOIN messages m ON m.id = j.payload->>'messageId'
        WHERE m.organization_id = $1 ORDER BY j.run_at`,
      [org.id],
    );
    assert.equal(new Set(slots.map((slot) => new Date(slot.run_at).getTime())).size, 4);
  });

  test('a trial, or an organization in its first 72 hours, takes the full path', async () => {
    at('2026-11-10T12:00:00.000Z');
    for (const fields of [{ subscriptionState: 'trial' }, { createdAt: '2026-11-09T12:00:00.000Z' }]) {
      const org = await sender(t, fields);
      const known = await t.ctx.organizations.get(org.id);
      const sent = await counting(() =>
        t.ctx.messages.send(known, { to: freshNumber(), message: 'hi' }, 'api'),
      );
      assert.equal(sent.transactions, 1, JSON.stringify(fields));
    }
  });

  test('an opted-out recipient: 403 RECIPIENT_OPTED_OUT from the full checks, nothing written or counted', async () => {
    at('2026-11-10T12:00:00.000Z');
    const org = await sender(t, old);
    const to = freshNumber();
    const contact = await t.request('POST', '/api/v2/contacts', { apiKey: org.key, body: { phone: to } });
    await t.request('POST', `/api/v2/contacts/${contact.body.data.id}/opt-out`, { apiKey: org.key });
    assert.equal((await send(t, org, { to: freshNumber(), message: 'first' })).status, 202);
    const before = await usage(org);
    const res = await counting(() => send(t, org, { to, message: 'hi' }));
    assert.equal(res.result.status, 403);
    assert.equal(res.result.body.code, 'RECIPIENT_OPTED_OUT');
    assert.equal(res.transactions, 1, 'judged again by the full path');
    assert.deepEqual(await usage(org), before);
  });

  test('a limit reached: the full checks answer, in their order, and nothing is counted', async () => {
    at('2026-11-10T12:00:00.000Z');
    const daily = await sender(t, { ...old, dailyLimitSegments: 2 });
    assert.equal((await send(t, daily, { to: freshNumber(), message: 'x'.repeat(200) })).status, 202);
    const before = await usage(daily);
    const res = await send(t, daily, { to: freshNumber(), message: 'one more' });
    assert.equal(res.status, 429);
    assert.ok(isShapeB(res.body));
    assert.equal(res.body.reason, 'daily');
    assert.deepEqual(await usage(daily), before);

    // Beyond the allowance without a card: the month's limit of a plain send is the allowance.
    const noCard = await sender(t, { ...old, monthlyAllowanceSegments: 1, cardVerified: false });
    assert.equal((await send(t, noCard, { to: freshNumber(), message: 'fits' })).status, 202);
    const refused = await send(t, noCard, { to: freshNumber(), message: 'beyond' });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'CARD_NOT_VERIFIED');
    assert.deepEqual(await usage(noCard), {
      day: { segments: 1, messages: 1 },
      month: { segments: 1, messages: 1 },
    });
  });

  test('an organization changed since the request read it: the statement writes nothing, the full checks judge', async () => {
    at('2026-11-10T12:00:00.000Z');
    const org = await sender(t, { ...old, dailyLimitSegments: 100 });
    const known = await t.ctx.organizations.get(org.id);
    const sendAs = () => t.ctx.messages.send(known, { to: freshNumber(), message: 'hi' }, 'api');
    await sendAs();
    // The caller's copy still allows 100 a day.
    await t.ctx.organizations.update(org.id, { dailyLimitSegments: 1 });
    const refused = await counting(() => sendAs().catch((error: unknown) => error));
    assert.equal((refused.result as { reason?: string }).reason, 'daily');
    assert.equal(refused.transactions, 1);
    assert.deepEqual((await usage(org)).day, { segments: 1, messages: 1 });
  });

  test('a counter filled while the statement waited for the account: it undoes itself and the full checks answer', {
    skip: onPostgres
      ? false
      : 'PGlite is one connection: no other transaction can hold the account while a send waits',
  }, async () => {
    at('2026-11-10T12:00:00.000Z');
    const org = await sender(t, { ...old, monthlyAllowanceSegments: 10 });
    assert.equal((await send(t, org, { to: freshNumber(), message: 'first' })).status, 202);
    const holder = new pg.Client({ connectionString: t.database.url });
    await holder.connect();
    try {
      // Another send of the organization, as it were: it holds the account and fills the month (ceiling 30).
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM send_limit_accounts WHERE organization_id = $1 FOR UPDATE', [org.id]);
      await holder.query(
        "UPDATE send_usage SET segments = 30, messages = 30 WHERE organization_id = $1 AND period = 'month'",
        [org.id],
      );
      const pending = counting(() => send(t, org, { to: freshNumber(), message: 'waits' }));
      // The send's statement has its snapshot (the month with room) once it waits for the account row.
      for (let waited = 0; ; waited += 20) {
        // Read from outside the holder's transaction, which would keep reading its first snapshot of the view.
        const [waiting] = await t.ctx.db.query(
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%plain_bounds%'",
        );
        if (waiting) break;
        assert.ok(waited < 5000, 'the send never waited for the account');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await holder.query('COMMIT');
      const res = await pending;
      assert.ok(
        res.errors.includes('CPS01'),
        `the statement counted the day alone and failed: ${res.errors}`,
      );
      assert.equal(res.result.status, 429, res.result.text);
      assert.equal(res.result.body.reason, 'monthly_absolute');
      assert.deepEqual(await usage(org), {
        day: { segments: 1, messages: 1 },
        month: { segments: 30, messages: 30 },
      });
    } finally {
      await holder.end();
    }
  });
});
