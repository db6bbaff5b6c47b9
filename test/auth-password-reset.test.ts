// Password reset by e-mail (CONTRACT section 4), over a real SMTP server (smtp-server on loopback): the
// request always answers 200, the mail carries a one-time token good for one hour, confirming it sets the
// password and revokes every session, and requests are limited to 3 per hour per e-mail.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { isShapeA, type Response, startTestApp, type TestApp } from './helpers/app.ts';
import { advance, alignClock, createUser, login, PASSWORD, signIn, uniqueEmail } from './helpers/portal.ts';

const AUTH = '/v2/portal/auth';

interface ReceivedMail {
  to: string[];
  raw: string;
}

function assertRefused(res: Response, status: number, code: string | undefined) {
  assert.equal(res.status, status, res.text);
  assert.ok(isShapeA(res.body), `not Shape A: ${res.text}`);
  assert.equal(res.body.code, code, res.text);
}

/** A real SMTP server on 127.0.0.1 that keeps what it receives; waitFor resolves on a mail to an address. */
class MailCatcher {
  readonly mails: ReceivedMail[] = [];
  private waiters: { to: string; resolve: (mail: ReceivedMail) => void }[] = [];
  readonly server = new SMTPServer({
    authOptional: true,
    // Plain SMTP on loopback: no STARTTLS offered, so the client does not try to upgrade.
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData: (stream, session, callback) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const mail = {
          to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          raw: Buffer.concat(chunks).toString('utf8'),
        };
        this.mails.push(mail);
        for (const waiter of this.waiters.filter((w) => mail.to.includes(w.to))) waiter.resolve(mail);
        this.waiters = this.waiters.filter((w) => !mail.to.includes(w.to));
        callback();
      });
    },
  });

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.server.address() as AddressInfo).port;
  }

  waitFor(to: string): Promise<ReceivedMail> {
    const found = this.mails.find((m) => m.to.includes(to.toLowerCase()));
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => this.waiters.push({ to: to.toLowerCase(), resolve }));
  }

  mailsTo(to: string): ReceivedMail[] {
    return this.mails.filter((m) => m.to.includes(to.toLowerCase()));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The mail's text with quoted-printable encoding undone (soft line breaks, =XX escapes). */
function textOf(mail: ReceivedMail): string {
  return mail.raw
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/** The reset token in a mail. */
function tokenIn(mail: ReceivedMail): string {
  const text = textOf(mail);
  const match = text.match(/prt_[A-Za-z0-9_-]{20,}/);
  assert.ok(match, `no token in mail:\n${mail.raw}`);
  return match[0];
}

describe('password reset over SMTP', () => {
  let t: TestApp;
  const catcher = new MailCatcher();
  before(async () => {
    const port = await catcher.listen();
    t = await startTestApp({
      config: {
        trustProxy: true,
        smtpUrl: `smtp://127.0.0.1:${port}`,
        publicUrl: 'https://portal.example.com',
      },
    });
  });
  after(async () => {
    await t.close();
    t.ctx.mailer.close();
    await catcher.close();
  });

  const request = (email: string) => t.request('POST', `${AUTH}/password-reset/request`, { body: { email } });
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
