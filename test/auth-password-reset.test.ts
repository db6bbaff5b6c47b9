// Password reset by e-mail (CONTRACT section 4), over a real SMTP server (smtp-server on loopback): the
// request always answers 200, the mail carries a one-time token good for one hour, confirming it sets the
// password and revokes every session, and requests are limited to 3 per hour per e-mail. The mail goes
// through the job queue: a mail server that refuses at first gets it on a retry, the jobs table never holds
// the token or the link, and a known and an unknown e-mail cost the same queries.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Queryable } from '../src/platform/db/index.ts';
import { isShapeA, type Response, startTestApp, type TestApp } from './helpers/app.ts';
import { MailCatcher, startAppWithMail, textOf, tokenIn } from './helpers/mail.ts';
import {
  advance,
  alignClock,
  createUser,
  login,
  PASSWORD,
  randomIp,
  signIn,
  uniqueEmail,
} from './helpers/portal.ts';

const AUTH = '/v2/portal/auth';

function assertRefused(res: Response, status: number, code: string | undefined) {
  assert.equal(res.status, status, res.text);
  assert.ok(isShapeA(res.body), `not Shape A: ${res.text}`);
  assert.equal(res.body.code, code, res.text);
}

describe('password reset over SMTP', () => {
  let t: TestApp;
  const catcher = new MailCatcher();
  before(async () => {
    t = await startAppWithMail(catcher, 'https://portal.example.com');
    // The mail is a job: a worker sends it, as in a deployment.
    t.ctx.jobs.start();
  });
  after(() => t.close());

  // Each from an address of its own unless a test means to share one (3 per hour per address too).
  const request = (email: string, ip = randomIp()) =>
    t.request('POST', `${AUTH}/password-reset/request`, {
      body: { email },
      headers: { 'x-forwarded-for': ip },
    });
  const confirm = (token: string, newPassword: string) =>
    t.request('POST', `${AUTH}/password-reset/confirm`, { body: { token, newPassword } });

  test('the mail carries a one-time link; confirming sets the password and revokes every session', async () => {
    const user = await createUser(t);
    const session = await signIn(t, user);
    const res = await request(user.email);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.success, true);
    const mail = await catcher.waitFor(user.email);
    assert.match(mail.raw, /Subject: Reset your password/);
    assert.match(textOf(mail), /https:\/\/portal\.example\.com\/reset-password\?token=prt_/);
    const token = tokenIn(mail);
    // Only the hash is stored.
    const stored = await t.ctx.db.query('SELECT 1 FROM password_reset_tokens WHERE token_hash = $1', [token]);
    assert.equal(stored.length, 0);

    const done = await confirm(token, 'my reset password');
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.data.passwordReset, true);
    const me = await t.request('GET', `${AUTH}/me`, { token: session });
    assertRefused(me, 401, 'TOKEN_REVOKED');
    assert.equal((await login(t, { email: user.email, password: PASSWORD })).status, 401);
    assert.equal((await login(t, { email: user.email, password: 'my reset password' })).status, 200);

    // One time only.
    assertRefused(await confirm(token, 'yet another password'), 400, undefined);
    assert.equal((await login(t, { email: user.email, password: 'my reset password' })).status, 200);
  });

  test('an unknown e-mail gets the same 200 and no mail', async () => {
    const known = await createUser(t);
    const unknown = uniqueEmail('ghost');
    const a = await request(known.email);
    const b = await request(unknown);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.deepEqual(a.body, b.body);
    await catcher.waitFor(known.email);
    assert.equal(catcher.mailsTo(unknown).length, 0);
  });

  test('a reset token expires after one hour, and a wrong token changes nothing', async () => {
    const user = await createUser(t);
    await request(user.email);
    const token = tokenIn(await catcher.waitFor(user.email));
    assertRefused(await confirm('prt_not-a-real-token-at-all-000000', 'some new password'), 400, undefined);
    await advance(t, 3600 + 1);
    assertRefused(await confirm(token, 'some new password'), 400, undefined);
    assert.equal((await login(t, { email: user.email, password: PASSWORD })).status, 200);
  });

  test('a too-short new password is a 400 and does not spend the token', async () => {
    const user = await createUser(t);
    await request(user.email);
    const token = tokenIn(await catcher.waitFor(user.email));
    assertRefused(await confirm(token, 'short'), 400, undefined);
    assert.equal((await confirm(token, 'long enough now')).status, 200);
  });

  test('a reset clears a pending password change', async () => {
    const user = await createUser(t);
    await t.admin('PATCH', `/users/${user.id}`, { requirePasswordChange: true });
    await request(user.email);
    assert.equal((await confirm(tokenIn(await catcher.waitFor(user.email)), 'fresh password')).status, 200);
    const res = await login(t, { email: user.email, password: 'fresh password' });
    assert.equal(res.body.data.requirePasswordChange, false);
  });

  test('3 requests per hour per e-mail; the 4th answers 429 with RateLimit headers and sends nothing', async () => {
    await alignClock(t, 3600);
    const user = await createUser(t);
    for (let i = 0; i < 3; i++) assert.equal((await request(user.email)).status, 200);
    const blocked = await request(user.email.toUpperCase());
    assertRefused(blocked, 429, undefined);
    assert.equal(blocked.headers.get('ratelimit-limit'), '3');
    assert.equal(blocked.headers.get('ratelimit-remaining'), '0');
    assert.ok(Number(blocked.headers.get('ratelimit-reset')) > 0);
    // Wait until the three allowed mails arrived, then check no fourth token was issued.
    while (catcher.mailsTo(user.email).length < 3) await new Promise((resolve) => setImmediate(resolve));
    const [row] = await t.ctx.db.query<{ count: number }>(
      'SELECT count(*)::int AS count FROM password_reset_tokens WHERE user_id = $1',
      [user.id],
    );
    assert.equal(row!.count, 3);
    await advance(t, Number(blocked.headers.get('ratelimit-reset')));
    assert.equal((await request(user.email)).status, 200);
  });

  test('3 requests per hour per address, whatever the e-mails; an address over it spends no e-mail budget', async () => {
    await alignClock(t, 3600);
    const ip = randomIp();
    const users = [await createUser(t), await createUser(t), await createUser(t), await createUser(t)];
    for (const user of users.slice(0, 3)) assert.equal((await request(user.email, ip)).status, 200);
    const blocked = await request(users[3]!.email, ip);
    assertRefused(blocked, 429, undefined);
    assert.match(blocked.body.message, /from this address/);
    assert.equal(blocked.headers.get('ratelimit-limit'), '3');
    // The fourth user's own budget is whole: three more from other addresses go through.
    for (let i = 0; i < 3; i++) assert.equal((await request(users[3]!.email)).status, 200);
    assert.equal((await request(users[3]!.email)).status, 429);
  });
});

describe('password reset without SMTP', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('without SMTP_URL the request still answers 200 (the mail goes to the log)', async () => {
    const user = await createUser(t);
    const res = await t.request('POST', `${AUTH}/password-reset/request`, { body: { email: user.email } });
    assert.equal(res.status, 200, res.text);
    const rows = await t.ctx.db.query('SELECT 1 FROM password_reset_tokens WHERE user_id = $1', [user.id]);
    assert.equal(rows.length, 1);
  });
});

/** Every SQL statement the app's database runs (in or out of a transaction) while `work` runs. */
async function statementsOf(t: TestApp, work: () => Promise<unknown>): Promise<string[]> {
  const db = t.ctx.db;
  const { query, transaction } = db;
  const statements: string[] = [];
  const note = (sql: string) => statements.push(sql.replace(/\s+/g, ' ').trim());
  const watched = (tx: Queryable): Queryable => ({
    query: <Row>(sql: string, params?: unknown[]) => {
      note(sql);
      return tx.query<Row>(sql, params);
    },
    exec: (sql) => tx.exec(sql),
  });
  db.query = <Row>(sql: string, params?: unknown[]) => {
    note(sql);
    return query.call(db, sql, params) as Promise<Row[]>;
  };
  db.transaction = <T>(fn: (tx: Queryable) => Promise<T>) => {
    note('BEGIN');
    return transaction.call(db, (tx) => fn(watched(tx))) as Promise<T>;
  };
  try {
    await work();
  } finally {
    db.query = query;
    db.transaction = transaction;
  }
  return statements;
}

describe('password reset mail through the job queue', () => {
  let t: TestApp;
  // Refuses each recipient's first two deliveries, as a mail server that is briefly down would.
  const catcher = new MailCatcher(2);
  before(async () => {
    t = await startAppWithMail(catcher, 'https://portal.example.com');
  });
  after(() => t.close());

  // Each from an address of its own unless a test means to share one (3 per hour per address too).
  const request = (email: string, ip = randomIp()) =>
    t.request('POST', `${AUTH}/password-reset/request`, {
      body: { email },
      headers: { 'x-forwarded-for': ip },
    });
  /** The mail job's rows, as an operator reading the table sees them. */
  const jobRows = () =>
    t.ctx.db.query<{ payload: string; status: string; attempts: number; last_error: string | null }>(
      `SELECT payload::text AS payload, status, attempts, last_error FROM jobs
        WHERE queue = 'identity.password-reset-mail' ORDER BY created_at`,
    );
  /** Runs the due jobs (the worker's part), one round. */
  const work = () => t.ctx.jobs.drain();

  test('a mail the server refuses at first is retried and arrives; the jobs table never holds token or link', async () => {
    const user = await createUser(t);
    assert.equal((await request(user.email)).status, 200);
    const seen: string[] = [];
    const look = async () => {
      for (const row of await jobRows()) seen.push(`${row.payload} ${row.last_error ?? ''}`);
    };
    await look();
    await work();
    assert.equal(catcher.refused.get(user.email.toLowerCase()), 1, 'the first attempt was refused');
    assert.equal(catcher.mailsTo(user.email).length, 0);
    const [failed] = await jobRows();
    assert.equal(failed!.status, 'pending', 'kept for a retry');
    assert.equal(failed!.attempts, 1);
    assert.match(failed!.last_error ?? '', /451|busy/i);
    await look();
    // The retries follow the queue's backoff (5 s, then 15 s, ±20%), on the app clock.
    await advance(t, 7);
    await work();
    assert.equal(catcher.refused.get(user.email.toLowerCase()), 2);
    await look();
    await advance(t, 20);
    await work();
    const [mail, ...more] = catcher.mailsTo(user.email);
    assert.ok(mail, 'the mail arrived on the third attempt');
    assert.equal(more.length, 0, 'and only once');
    const [done] = await jobRows();
    assert.equal(done!.status, 'completed');
    await look();

    const token = tokenIn(mail);
    const link = `reset-password?token=${token}`;
    for (const text of seen) {
      assert.ok(!text.includes(token), `token in the jobs table: ${text}`);
      assert.ok(!text.includes('prt_'), `a reset token in the jobs table: ${text}`);
      assert.ok(!text.includes(link), `link in the jobs table: ${text}`);
      assert.ok(!text.toLowerCase().includes(user.email.toLowerCase()), `address in the jobs table: ${text}`);
    }
    // The token that arrived is the one that works.
    const confirmed = await t.request('POST', `${AUTH}/password-reset/confirm`, {
      body: { token, newPassword: 'the password after reset' },
    });
    assert.equal(confirmed.status, 200, confirmed.text);
    assert.equal((await login(t, { email: user.email, password: 'the password after reset' })).status, 200);
  });

  test('a known and an unknown e-mail run the same statements and answer alike; only the known gets mail', async () => {
    const known = await createUser(t);
    const unknown = uniqueEmail('ghost');
    let knownAnswer: Response | undefined;
    let unknownAnswer: Response | undefined;
    const forKnown = await statementsOf(t, async () => {
      knownAnswer = await request(known.email);
    });
    const forUnknown = await statementsOf(t, async () => {
      unknownAnswer = await request(unknown);
    });
    assert.deepEqual(unknownAnswer!.body, knownAnswer!.body);
    assert.ok(
      forKnown.some((sql) => sql.startsWith('INSERT INTO jobs')),
      forKnown.join('\n'),
    );
    assert.ok(
      forKnown.some((sql) => sql.startsWith('INSERT INTO password_reset_tokens')),
      forKnown.join('\n'),
    );
    assert.deepEqual(forUnknown, forKnown);
    // Let the mail server take the known one (it refuses twice), then check nothing went to the unknown one.
    for (let i = 0; i < 3; i++) {
      await work();
      await advance(t, 20);
    }
    await work();
    assert.equal(catcher.mailsTo(known.email).length, 1);
    assert.equal(catcher.mailsTo(unknown).length, 0);
    assert.equal(catcher.refused.get(unknown.toLowerCase()), undefined, 'not even tried');
  });

  test('a request still queued when the password changes sends nothing', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    assert.equal((await request(user.email)).status, 200);
    const changed = await t.request('POST', `${AUTH}/password`, {
      token,
      body: { currentPassword: PASSWORD, newPassword: 'a brand new password' },
    });
    assert.equal(changed.status, 200, changed.text);
    await work();
    assert.equal(catcher.refused.get(user.email.toLowerCase()), undefined, 'no mail was attempted');
    const rows = await t.ctx.db.query<{ token_hash: string | null }>(
      'SELECT token_hash FROM password_reset_tokens WHERE user_id = $1',
      [user.id],
    );
    assert.deepEqual(rows, [{ token_hash: null }], 'never given a token');
  });

  test('a request whose hour passed while the mail server was down is dropped, not mailed late', async () => {
    const user = await createUser(t);
    assert.equal((await request(user.email)).status, 200);
    await work(); // refused
    await advance(t, 3601);
    await work(); // the request has expired: nothing to send, and the job ends
    assert.equal(catcher.refused.get(user.email.toLowerCase()), 1);
    assert.equal(catcher.mailsTo(user.email).length, 0);
    const statuses = (await jobRows()).map((row) => row.status);
    assert.ok(!statuses.includes('pending'), statuses.join(','));
  });
});
