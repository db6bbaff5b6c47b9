// SMS plan limits on POST /api/v2/messages/send (spec "SMS plan limits", CONTRACT section 6), over a real
// socket: every code and reason with its status and Retry-After checked against the test clock, the
// CONTRACT order, "a refused send sends and counts nothing", 50 concurrent sends at a limit of 10, and a
// real database fault (a lock timeout) answering 503.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, freshNumber, messagesOf, type Sender, send, sender } from './helpers/messaging.ts';

const onPostgres = Boolean(process.env.DATABASE_URL);

describe('SMS plan limits', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const at = (iso: string) => t.ctx.clock.set(new Date(iso));
  const nextMinute = () => t.ctx.clock.advance(61);
  const text = (segments: number) => 'x'.repeat(segments === 1 ? 10 : 153 * segments);

  async function sendMany(who: Sender, count: number, message = 'hi') {
    for (let i = 0; i < count; i++) {
      if (i > 0 && i % 25 === 0) nextMinute();
      const res = await send(t, who, { to: freshNumber(), message });
      assert.equal(res.status, 202, `send ${i + 1}: ${res.text}`);
    }
  }

  /** Everything a send leaves behind for an organization: messages, counted segments, dispatch jobs. */
  async function footprint(who: Sender) {
    const [usage] = await t.ctx.db.query<{ segments: number }>(
      'SELECT coalesce(sum(segments), 0)::int AS segments FROM send_usage WHERE organization_id = $1',
      [who.id],
    );
    const [account] = await t.ctx.db.query<{ trial: number; velocity: number }>(
      `SELECT coalesce(sum(trial_messages), 0)::int AS trial, coalesce(sum(first_72h_segments), 0)::int AS velocity
         FROM send_limit_accounts WHERE organization_id = $1`,
      [who.id],
    );
    return {
      messages: await messagesOf(t, who.id),
      segments: usage!.segments,
      trial: account!.trial,
      velocity: account!.velocity,
      jobs: await countRows(
        t,
        "SELECT 1 FROM jobs j JOIN messages m ON m.id = j.payload->>'messageId' WHERE m.organization_id = $1",
        [who.id],
      ),
    };
  }

  /** Sends once more, expects the refusal, and checks that it left nothing behind. */
  async function refused(who: Sender, status: number, code: string | undefined, reason?: string) {
    const before = await footprint(who);
    const res = await send(t, who, { to: freshNumber(), message: 'one more' });
    assert.equal(res.status, status, res.text);
    assert.ok(isShapeB(res.body));
    assert.equal(res.body.code, code);
    assert.equal(res.body.reason, reason);
    assert.deepEqual(await footprint(who), before, 'a refused send sends and counts nothing');
    return res;
  }

  const retryAfter = (res: { headers: Headers }) => Number(res.headers.get('retry-after'));
  const secondsUntil = (iso: string) => (new Date(iso).getTime() - t.ctx.clock.nowMs()) / 1000;
  /** Retry-After is the whole seconds until `iso`, rounded up, by the server's clock. */
  function assertRetryAfter(res: { headers: Headers }, iso: string) {
    const expected = secondsUntil(iso);
    const actual = retryAfter(res);
    assert.ok(Number.isInteger(actual), `Retry-After ${res.headers.get('retry-after')}`);
    assert.ok(
      actual >= expected && actual - expected < 2,
      `Retry-After ${actual}, expected about ${expected}`,
    );
  }

  test('trial lifetime: 429 TRIAL_LIMIT_REACHED lifetime without Retry-After; retrying later does not help', async () => {
    at('2026-11-10T12:00:00.000Z');
    const trial = await sender(t, { subscriptionState: 'trial', cardVerified: false, trialMessageLimit: 3 });
    await sendMany(trial, 3);
    const res = await refused(trial, 429, 'TRIAL_LIMIT_REACHED', 'lifetime');
    assert.equal(res.headers.get('retry-after'), null);
    t.ctx.clock.advance(40 * 86400);
    await refused(trial, 429, 'TRIAL_LIMIT_REACHED', 'lifetime');
  });

  test('trial burst: the 51st message in 10 minutes is 429 TRIAL_LIMIT_REACHED burst, without Retry-After', async () => {
    at('2026-11-10T12:00:00.000Z');
    const trial = await sender(t, { subscriptionState: 'trial', trialMessageLimit: 1000 });
    await sendMany(trial, 50);
    const res = await refused(trial, 429, 'TRIAL_LIMIT_REACHED', 'burst');
    assert.equal(res.headers.get('retry-after'), null);
    // The window slides: ten minutes after the first burst, sending works again.
    t.ctx.clock.advance(10 * 60);
    assert.equal((await send(t, trial, { to: freshNumber(), message: 'later' })).status, 202);
  });

  test('new-account velocity: 2,000 segments in the first 72 hours; Retry-After is the end of those hours', async () => {
    at('2026-11-10T12:00:00.000Z');
    const createdAt = new Date(t.ctx.clock.nowMs() - 3600_000).toISOString();
    const young = await sender(t, {
      createdAt,
      dailyLimitSegments: 100_000,
      monthlyAllowanceSegments: 100_000,
    });
    // 50 sends of 40 segments: exactly 2,000, which is allowed; one segment more is not.
    for (let i = 0; i < 50; i++) {
      if (i > 0 && i % 25 === 0) nextMinute();
      const res = await send(t, young, { to: freshNumber(), message: text(40) });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.data.segments, 40);
    }
    assert.equal((await footprint(young)).velocity, 2000);
    nextMinute();
    const res = await refused(young, 429, 'PAID_LIMIT_REACHED', 'new_account_velocity');
    assertRetryAfter(res, new Date(new Date(createdAt).getTime() + 72 * 3600_000).toISOString());
    // After 72 hours the velocity limit no longer applies.
    t.ctx.clock.set(new Date(new Date(createdAt).getTime() + 72 * 3600_000));
    assert.equal((await send(t, young, { to: freshNumber(), message: 'hi' })).status, 202);
  });

  test('daily: dailyLimitSegments per UTC day; Retry-After points to the next 00:00 UTC', async () => {
    at('2026-11-10T22:00:00.000Z');
    const daily = await sender(t, { dailyLimitSegments: 5, createdAt: '2026-01-01T00:00:00.000Z' });
    await sendMany(daily, 3);
    assert.equal((await send(t, daily, { to: freshNumber(), message: text(2) })).status, 202); // 5 of 5
    const res = await refused(daily, 429, 'PAID_LIMIT_REACHED', 'daily');
    assertRetryAfter(res, '2026-11-11T00:00:00.000Z');
    assert.ok(retryAfter(res) <= 7200);
    // A two-segment message does not fit in one remaining segment either.
    at('2026-11-11T00:00:00.000Z');
    assert.equal((await send(t, daily, { to: freshNumber(), message: text(4) })).status, 202);
    assert.equal((await send(t, daily, { to: freshNumber(), message: text(2) })).status, 429);
    assert.equal((await send(t, daily, { to: freshNumber(), message: 'fits' })).status, 202);
  });

  test('monthly absolute: 3 × the allowance per UTC month; Retry-After points to the 1st of next month', async () => {
    at('2026-11-30T23:00:00.000Z');
    const monthly = await sender(t, {
      monthlyAllowanceSegments: 4,
      dailyLimitSegments: 1000,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    await sendMany(monthly, 12);
    const res = await refused(monthly, 429, 'PAID_LIMIT_REACHED', 'monthly_absolute');
    assertRetryAfter(res, '2026-12-01T00:00:00.000Z');
    at('2026-12-01T00:00:00.000Z');
    assert.equal((await send(t, monthly, { to: freshNumber(), message: 'new pool' })).status, 202);
  });

  for (const state of ['past_due', 'scheduled_to_cancel']) {
    test(`beyond the allowance while ${state}: 402 CAPABILITY_RESTRICTED_BY_STATE; within it, sends go`, async () => {
      at('2026-11-10T12:00:00.000Z');
      const org = await sender(t, {
        subscriptionState: state,
        monthlyAllowanceSegments: 2,
        createdAt: '2026-01-01T00:00:00.000Z',
      });
      await sendMany(org, 2);
      const res = await refused(org, 402, 'CAPABILITY_RESTRICTED_BY_STATE');
      assert.equal(res.headers.get('retry-after'), null);
    });
  }

  test('beyond the allowance without a verified card: 403 CARD_NOT_VERIFIED', async () => {
    at('2026-11-10T12:00:00.000Z');
    const org = await sender(t, {
      cardVerified: false,
      monthlyAllowanceSegments: 2,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    await sendMany(org, 2);
    await refused(org, 403, 'CARD_NOT_VERIFIED');
    // Verifying the card lifts it (up to the absolute ceiling).
    await t.admin('PATCH', `/organizations/${org.id}`, { cardVerified: true });
    assert.equal((await send(t, org, { to: freshNumber(), message: 'paid' })).status, 202);
  });

  test('the first failing check answers, in CONTRACT order', async () => {
    at('2026-11-10T12:00:00.000Z');
    // Lifetime before burst, velocity, daily, monthly and the card.
    const trial = await sender(t, {
      subscriptionState: 'trial',
      trialMessageLimit: 1,
      dailyLimitSegments: 1,
      monthlyAllowanceSegments: 0,
    });
    await t.admin('PATCH', `/organizations/${trial.id}`, { monthlyAllowanceSegments: 1 });
    assert.equal((await send(t, trial, { to: freshNumber(), message: 'one' })).status, 202);
    await refused(trial, 429, 'TRIAL_LIMIT_REACHED', 'lifetime');
    // Daily before monthly: both reached, daily answers.
    const both = await sender(t, {
      dailyLimitSegments: 3,
      monthlyAllowanceSegments: 1,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    await sendMany(both, 3);
    await refused(both, 429, 'PAID_LIMIT_REACHED', 'daily');
    // Monthly absolute before the 402: a past-due organization at its ceiling hears about the ceiling.
    const pastDue = await sender(t, {
      subscriptionState: 'past_due',
      monthlyAllowanceSegments: 0,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    await refused(pastDue, 429, 'PAID_LIMIT_REACHED', 'monthly_absolute');
    // The 402 before the 403: past due and no card.
    const neither = await sender(t, {
      subscriptionState: 'past_due',
      cardVerified: false,
      monthlyAllowanceSegments: 1,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    assert.equal((await send(t, neither, { to: freshNumber(), message: 'in' })).status, 202);
    await refused(neither, 402, 'CAPABILITY_RESTRICTED_BY_STATE');
  });

  test('an MMS counts 3 segments against the limits', async () => {
    at('2026-11-10T12:00:00.000Z');
    const org = await sender(t, { dailyLimitSegments: 5, createdAt: '2026-01-01T00:00:00.000Z' });
    const mms = await send(t, org, { to: freshNumber(), message: 'pic', media: ['https://x.example/a.png'] });
    assert.equal(mms.body.data.segments, 3);
    assert.equal((await send(t, org, { to: freshNumber(), media: ['https://x.example/b.png'] })).status, 429);
    assert.equal((await send(t, org, { to: freshNumber(), message: text(2) })).status, 202);
  });

  test('50 concurrent sends at a daily limit of 10 over the socket: exactly 10 messages, counter 10', async () => {
    at('2026-11-10T12:00:00.000Z');
    const org = await sender(t, { dailyLimitSegments: 10, createdAt: '2026-01-01T00:00:00.000Z' });
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => send(t, org, { to: freshNumber(), message: 'race' })),
    );
    const statuses = answers.map((res) => res.status);
    assert.equal(statuses.filter((s) => s === 202).length, 10);
    // The rest are 429: the daily limit, or (past 30 in the minute) the sends-per-minute request limit.
    assert.ok(answers.every((res) => res.status === 202 || res.status === 429));
    assert.ok(answers.filter((res) => res.body.reason === 'daily').length >= 10);
    const after = await footprint(org);
    assert.equal(after.messages, 10);
    assert.equal(after.segments, 20); // day and month rows, 10 each
    assert.equal(after.jobs, 10);
  });

  test('50 concurrent sends at a limit of 10 through the service: exactly 10 pass, all others refused', async () => {
    at('2026-11-10T12:00:00.000Z');
    const org = await sender(t, { dailyLimitSegments: 10, createdAt: '2026-01-01T00:00:00.000Z' });
    const organization = await t.ctx.organizations.get(org.id);
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, () =>
        t.ctx.messages.send(organization, { to: freshNumber(), message: 'race' }, 'api'),
      ),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 10);
    for (const r of results) {
      if (r.status === 'rejected') assert.equal(r.reason.reason, 'daily', String(r.reason));
    }
    const [day] = await t.ctx.db.query<{ segments: number; messages: number }>(
      "SELECT segments, messages FROM send_usage WHERE organization_id = $1 AND period = 'day'",
      [org.id],
    );
    assert.deepEqual({ ...day }, { segments: 10, messages: 10 });
    assert.equal(await messagesOf(t, org.id), 10);
  });

  test('the limits read the organization again with the lock: a state changed after the caller read it applies', async () => {
    at('2026-11-10T12:00:00.000Z');
    const org = await sender(t, { monthlyAllowanceSegments: 1, createdAt: '2026-01-01T00:00:00.000Z' });
    const known = await t.ctx.organizations.get(org.id);
    const sendAs = () => t.ctx.messages.send(known, { to: freshNumber(), message: 'hi' }, 'api');
    assert.equal((await sendAs()).result.status, 'queued');
    // Past due from now on; the caller's copy still says paid, and would let the send beyond the allowance go.
    await t.ctx.organizations.update(org.id, { subscriptionState: 'past_due' });
    await assert.rejects(sendAs(), (error: { status?: number; code?: string }) => {
      assert.equal(error.status, 402);
      assert.equal(error.code, 'CAPABILITY_RESTRICTED_BY_STATE');
      return true;
    });
    assert.equal(await messagesOf(t, org.id), 1);
  });

  test('the wait bounds end with the limit checks: a write after them may wait past both', {
    skip: onPostgres
      ? false
      : 'PGlite is one connection: another transaction cannot hold a row while a send waits',
  }, async () => {
    at('2026-11-10T12:00:00.000Z');
    const org = await sender(t, { createdAt: '2026-01-01T00:00:00.000Z' });
    // The first send books the number's pacing row; the next one's booking (after the checks) waits for it.
    assert.equal((await send(t, org, { to: freshNumber(), message: 'first' })).status, 202);
    const previous = t.ctx.messages.limits.options.lockTimeoutMs;
    t.ctx.messages.limits.options.lockTimeoutMs = 100;
    const holder = new pg.Client({ connectionString: t.database.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM carrier_pacing WHERE number = $1 FOR UPDATE', [org.number]);
      const pending = send(t, org, { to: freshNumber(), message: 'waits' });
      // Longer than the lock timeout (100 ms) and the statement timeout (2,100 ms) of the checks.
      await new Promise((resolve) => setTimeout(resolve, 2400));
      await holder.query('ROLLBACK');
      const res = await pending;
      assert.equal(res.status, 202, res.text);
    } finally {
      t.ctx.messages.limits.options.lockTimeoutMs = previous;
      await holder.end();
    }
  });

  test('a limit that cannot be checked (the counter row stays locked past the lock timeout) is a 503', {
    skip: onPostgres
      ? false
      : 'PGlite is one connection: another transaction cannot hold the row while a send waits, so the timeout cannot happen there',
  }, async () => {
    at('2026-11-10T12:00:00.000Z');
    const trial = await sender(t, { subscriptionState: 'trial' });
    const paid = await sender(t, { createdAt: '2026-01-01T00:00:00.000Z' });
    for (const who of [trial, paid]) {
      assert.equal((await send(t, who, { to: freshNumber(), message: 'first' })).status, 202);
    }
    const previous = t.ctx.messages.limits.options.lockTimeoutMs;
    t.ctx.messages.limits.options.lockTimeoutMs = 200;
    const holder = new pg.Client({ connectionString: t.database.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM send_limit_accounts WHERE organization_id = ANY($1) FOR UPDATE', [
        [trial.id, paid.id],
      ]);
      const trialAnswer = await refused(trial, 503, 'TRIAL_LIMIT_REACHED');
      assert.equal(retryAfter(trialAnswer), 2);
      const paidAnswer = await refused(paid, 503, undefined);
      assert.equal(retryAfter(paidAnswer), 2);
      await holder.query('ROLLBACK');
      assert.equal((await send(t, paid, { to: freshNumber(), message: 'again' })).status, 202);
    } finally {
      t.ctx.messages.limits.options.lockTimeoutMs = previous;
      await holder.end();
    }
  });

  test('more stalled sends at once than the pool has connections still all answer 503, and sending resumes', {
    skip: onPostgres ? false : 'PGlite is one connection: the lock timeout cannot happen there',
  }, async () => {
    at('2026-11-10T13:00:00.000Z');
    // Twelve organizations (the pool has ten connections), each with one send done so its counter row exists.
    const senders = [];
    for (let i = 0; i < 12; i++) senders.push(await sender(t, { createdAt: '2026-01-01T00:00:00.000Z' }));
    for (const who of senders)
      assert.equal((await send(t, who, { to: freshNumber(), message: 'first' })).status, 202);
    const previous = t.ctx.messages.limits.options.lockTimeoutMs;
    t.ctx.messages.limits.options.lockTimeoutMs = 300;
    const holder = new pg.Client({ connectionString: t.database.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM send_limit_accounts WHERE organization_id = ANY($1) FOR UPDATE', [
        senders.map((who) => who.id),
      ]);
      const answers = await Promise.all(
        senders.map((who) => send(t, who, { to: freshNumber(), message: 'stalled' })),
      );
      assert.deepEqual(
        answers.map((answer) => answer.status),
        senders.map(() => 503),
      );
      await holder.query('ROLLBACK');
      assert.equal((await send(t, senders[0]!, { to: freshNumber(), message: 'again' })).status, 202);
    } finally {
      t.ctx.messages.limits.options.lockTimeoutMs = previous;
      await holder.end();
    }
  });
});
