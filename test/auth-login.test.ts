// Portal sign-in (spec "Session" table row none -> active, "Session rules" 1-3 and 7, CONTRACT section 4):
// login and its cookie, wrong credentials, the brute-force limits, register, me, several organizations and
// the requirePasswordChange restriction.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOrganization, isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import {
  advance,
  alignClock,
  CookieJar,
  createUser,
  login,
  PASSWORD,
  parseSetCookies,
  signIn,
  uniqueEmail,
} from './helpers/portal.ts';

const AUTH = '/v2/portal/auth';

describe('portal login', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('valid credentials give the session response, the token as an httpOnly cookie, 8 hours', async () => {
    const user = await createUser(t);
    const res = await login(t, { email: user.email, password: PASSWORD });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.success, true);
    const data = res.body.data;
    assert.equal(typeof data.token, 'string');
    assert.equal(data.user.id, user.id);
    assert.equal(data.user.email, user.email);
    assert.equal(data.user.passwordHash, undefined);
    assert.equal(data.user.password_hash, undefined);
    assert.deepEqual(
      data.availableOrganizations.map((o: { id: string; role: string }) => [o.id, o.role]),
      [[user.organizationId, 'owner']],
    );
    assert.equal(data.requiresOrgSelection, false);
    assert.equal(data.requirePasswordChange, false);
    assert.equal(data.organizationId, user.organizationId);
    const lifetime = new Date(data.expiresAt).getTime() - t.ctx.clock.nowMs();
    assert.ok(Math.abs(lifetime - 8 * 3600_000) < 60_000, `token lifetime ${lifetime}`);

    const [cookie, ...others] = parseSetCookies(res);
    assert.equal(others.length, 0);
    assert.equal(cookie!.name, 'portal_token');
    assert.equal(cookie!.value, data.token);
    assert.equal(cookie!.attributes.httponly, true);
    assert.equal(cookie!.attributes.samesite, 'Lax');
    assert.equal(cookie!.attributes.path, '/');
    assert.equal(cookie!.attributes['max-age'], String(8 * 3600));
    assert.equal(cookie!.attributes.secure, undefined, 'not Secure outside production');
    // The per-IP login budget is shown on every login answer.
    assert.equal(res.headers.get('ratelimit-limit'), '20');
    assert.equal(res.headers.get('ratelimit-remaining'), '19');

    // The same JWT works as a Bearer header and as the cookie.
    const byBearer = await t.request('GET', `${AUTH}/me`, { token: data.token });
    assert.equal(byBearer.status, 200, byBearer.text);
    assert.equal(byBearer.body.data.user.id, user.id);
    const jar = new CookieJar();
    jar.take(res);
    const byCookie = await jar.request(t, 'GET', `${AUTH}/me`);
    assert.equal(byCookie.status, 200, byCookie.text);
    assert.equal(byCookie.body.data.organization.id, user.organizationId);
  });

  test('remember makes the token and the cookie last 7 days', async () => {
    const user = await createUser(t);
    const res = await login(t, { email: user.email, password: PASSWORD, remember: true });
    assert.equal(res.status, 200, res.text);
    const lifetime = new Date(res.body.data.expiresAt).getTime() - t.ctx.clock.nowMs();
    assert.ok(Math.abs(lifetime - 7 * 86400_000) < 60_000, `token lifetime ${lifetime}`);
    assert.equal(parseSetCookies(res)[0]!.attributes['max-age'], String(7 * 86400));
  });

  test('a wrong password and an unknown e-mail answer alike: 401, no code, no cookie', async () => {
    const user = await createUser(t);
    const wrongPassword = await login(t, { email: user.email, password: 'not the password' });
    const unknownEmail = await login(t, { email: uniqueEmail('nobody'), password: PASSWORD });
    for (const res of [wrongPassword, unknownEmail]) {
      assert.equal(res.status, 401, res.text);
      assert.ok(isShapeA(res.body), res.text);
      assert.equal(res.body.code, undefined);
      assert.equal(res.headers.getSetCookie().length, 0);
    }
    assert.deepEqual(wrongPassword.body, unknownEmail.body);
    assert.equal(wrongPassword.headers.get('ratelimit-limit'), '20');
    // Nothing changed: no session was created.
    const [row] = await t.ctx.db.query<{ count: number }>(
      'SELECT count(*)::int AS count FROM sessions WHERE user_id = $1',
      [user.id],
    );
    assert.equal(row!.count, 0);
  });

  test('e-mails match without regard to case', async () => {
    const user = await createUser(t);
    const res = await login(t, { email: user.email.toUpperCase(), password: PASSWORD });
    assert.equal(res.status, 200, res.text);
  });

  test('a malformed body is a 400 without code', async () => {
    const res = await t.request('POST', `${AUTH}/login`, { body: { email: 'x@example.com' } });
    assert.equal(res.status, 400);
    assert.ok(isShapeA(res.body), res.text);
    assert.equal(res.body.code, undefined);
  });

  test('3 failed attempts for one e-mail in 30 minutes block it, even with the right password, from any IP', async () => {
    await alignClock(t, 30 * 60);
    const user = await createUser(t);
    for (let i = 0; i < 3; i++) {
      const res = await login(t, { email: user.email, password: `wrong-${i}` });
      assert.equal(res.status, 401, res.text);
    }
    const blocked = await login(t, { email: user.email, password: PASSWORD });
    assert.equal(blocked.status, 429, blocked.text);
    assert.ok(isShapeA(blocked.body), blocked.text);
    assert.equal(blocked.headers.get('ratelimit-limit'), '3');
    assert.equal(blocked.headers.get('ratelimit-remaining'), '0');
    const reset = Number(blocked.headers.get('ratelimit-reset'));
    assert.ok(reset > 0 && reset <= 1800, `reset ${reset}`);
    assert.equal(blocked.headers.getSetCookie().length, 0);
    // Blocked attempts are not counted as failures (the password is not even checked): another e-mail is
    // unaffected, and once the window ends the right password works again.
    const other = await createUser(t);
    assert.equal((await login(t, { email: other.email, password: PASSWORD })).status, 200);
    await advance(t, reset);
    const again = await login(t, { email: user.email, password: PASSWORD });
    assert.equal(again.status, 200, again.text);
  });

  test('a blocked attempt never looks up or checks the password', async () => {
    await alignClock(t, 30 * 60);
    const user = await createUser(t);
    for (let i = 0; i < 3; i++) await login(t, { email: user.email, password: `wrong-${i}` });
    const users = t.ctx.users;
    const original = users.findByEmail;
    let lookups = 0;
    users.findByEmail = async function (this: typeof users, ...args: Parameters<typeof original>) {
      lookups++;
      return original.apply(this, args);
    };
    try {
      const blocked = await login(t, { email: user.email, password: PASSWORD });
      assert.equal(blocked.status, 429, blocked.text);
      assert.equal(lookups, 0);
    } finally {
      users.findByEmail = original;
    }
  });

  test('failed attempts sent in parallel cannot get more than 3 guesses checked', async () => {
    await alignClock(t, 30 * 60);
    const user = await createUser(t);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => login(t, { email: user.email, password: `parallel-${i}` })),
    );
    const statuses = results.map((r) => r.status).sort();
    assert.equal(statuses.filter((s) => s === 401).length, 3, statuses.join(','));
    assert.equal(statuses.filter((s) => s === 429).length, 5, statuses.join(','));
    assert.equal((await login(t, { email: user.email, password: PASSWORD })).status, 429);
  });

  test('20 attempts per IP in 15 minutes; the 21st is refused whatever the credentials', async () => {
    await alignClock(t, 15 * 60);
    const ip = '203.0.113.7';
    const user = await createUser(t);
    for (let i = 0; i < 20; i++) {
      // Each attempt for a different unknown e-mail: only the IP limit can bite.
      const res = await login(t, { email: uniqueEmail('probe'), password: 'guess' }, ip);
      assert.equal(res.status, 401, `attempt ${i + 1}: ${res.text}`);
    }
    const blocked = await login(t, { email: user.email, password: PASSWORD }, ip);
    assert.equal(blocked.status, 429, blocked.text);
    assert.ok(isShapeA(blocked.body), blocked.text);
    assert.equal(blocked.headers.get('ratelimit-limit'), '20');
    assert.equal(blocked.headers.get('ratelimit-remaining'), '0');
    assert.ok(Number(blocked.headers.get('ratelimit-reset')) > 0);
    // The user's own e-mail was not counted as a failure, and other addresses are unaffected.
    assert.equal((await login(t, { email: user.email, password: PASSWORD }, '203.0.113.8')).status, 200);
    await advance(t, Number(blocked.headers.get('ratelimit-reset')));
    assert.equal((await login(t, { email: user.email, password: PASSWORD }, ip)).status, 200);
  });

  test('an account in several organizations must choose: requiresOrgSelection and the list', async () => {
    const first = await createOrganization(t);
    const second = await createOrganization(t);
    const user = await createUser(t, { organizationIds: [first.id, second.id], role: 'admin' });
    const res = await login(t, { email: user.email, password: PASSWORD });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.requiresOrgSelection, true);
    assert.deepEqual(
      res.body.data.availableOrganizations
        .map((o: { id: string; name: string; role: string }) => o.id)
        .sort(),
      [first.id, second.id].sort(),
    );
    assert.equal(res.body.data.organizationId, first.id);
  });
});

describe('register and me', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('register creates the user, an organization on pro in trial with them as owner, and signs in', async () => {
    const email = uniqueEmail('new');
    const res = await t.request('POST', `${AUTH}/register`, {
      body: { email, password: 'a long password', name: 'Ada', organizationName: 'Ada Inc' },
    });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.success, true);
    assert.equal(res.body.data.user.email, email);
    assert.equal(res.body.data.user.name, 'Ada');
    assert.equal(res.body.data.requiresOrgSelection, false);
    assert.equal(parseSetCookies(res)[0]!.name, 'portal_token');
    const me = await t.request('GET', `${AUTH}/me`, { token: res.body.data.token });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.success, true);
    assert.equal(me.body.data.role, 'owner');
    assert.equal(me.body.data.organization.name, 'Ada Inc');
    assert.equal(me.body.data.organization.plan, 'pro');
    assert.equal(me.body.data.organization.subscriptionState, 'trial');
    assert.equal(me.body.data.user.email, email);
    // And the password works for a later login.
    assert.equal((await login(t, { email, password: 'a long password' })).status, 200);
  });

  test('register with an e-mail in use is a 409 and creates nothing', async () => {
    const user = await createUser(t);
    const before = await t.ctx.organizations.count();
    const res = await t.request('POST', `${AUTH}/register`, {
      body: {
        email: user.email.toUpperCase(),
        password: 'a long password',
        name: 'X',
        organizationName: 'Y',
      },
    });
    assert.equal(res.status, 409, res.text);
    assert.ok(isShapeA(res.body), res.text);
    assert.equal(res.headers.getSetCookie().length, 0);
    assert.equal(await t.ctx.organizations.count(), before);
  });

  test('register validates its body: 400 without code, nothing created', async () => {
    const before = await t.ctx.organizations.count();
    const res = await t.request('POST', `${AUTH}/register`, {
      body: { email: uniqueEmail(), password: 'short', name: 'X', organizationName: 'Y' },
    });
    assert.equal(res.status, 400, res.text);
    assert.ok(isShapeA(res.body), res.text);
    assert.equal(res.body.code, undefined);
    assert.equal(await t.ctx.organizations.count(), before);
  });

  test('sign-ups are limited to 20 per hour per address; the 21st creates nothing', async () => {
    await alignClock(t, 3600);
    const ip = '198.51.100.20';
    const register = () =>
      t.request('POST', `${AUTH}/register`, {
        body: { email: uniqueEmail('farm'), password: 'a long password', name: 'F', organizationName: 'F' },
        headers: { 'x-forwarded-for': ip },
      });
    for (let i = 0; i < 20; i++) assert.equal((await register()).status, 201);
    const before = await t.ctx.organizations.count();
    const blocked = await register();
    assert.equal(blocked.status, 429, blocked.text);
    assert.ok(isShapeA(blocked.body), blocked.text);
    assert.equal(blocked.headers.get('ratelimit-limit'), '20');
    assert.equal(await t.ctx.organizations.count(), before);
  });

  test('me without credentials is 401 AUTH_REQUIRED', async () => {
    const res = await t.request('GET', `${AUTH}/me`);
    assert.equal(res.status, 401);
    assert.ok(isShapeA(res.body), res.text);
    assert.equal(res.body.code, 'AUTH_REQUIRED');
  });

  test('me answers the role in the organization the token is scoped to', async () => {
    const org = await createOrganization(t);
    const member = await createUser(t, { organizationIds: [org.id], role: 'member' });
    const me = await t.request('GET', `${AUTH}/me`, { token: await signIn(t, member) });
    assert.equal(me.body.data.role, 'member');
    assert.equal(me.body.data.organization.id, org.id);
  });
});

describe('requirePasswordChange', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('limits the session to password change, me and logout until the password is changed', async () => {
    const second = await createOrganization(t);
    const user = await createUser(t);
    // Give the user a second organization so switch-organization would otherwise be allowed.
    await t.ctx.users.addMembership(user.id, second.id, 'admin');
    const patched = await t.admin('PATCH', `/users/${user.id}`, { requirePasswordChange: true });
    assert.equal(patched.status, 200, patched.text);

    const res = await login(t, { email: user.email, password: PASSWORD });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.requirePasswordChange, true);
    const token = res.body.data.token;

    assert.equal((await t.request('GET', `${AUTH}/me`, { token })).status, 200);
    for (const [path, body] of [
      ['/switch-organization', { organizationId: second.id }],
      ['/logout-all', undefined],
      ['/2fa/setup', undefined],
    ] as const) {
      const refused = await t.request('POST', `${AUTH}${path}`, { token, body });
      assert.equal(refused.status, 403, `${path}: ${refused.text}`);
      assert.ok(isShapeA(refused.body), refused.text);
      assert.equal(refused.body.code, 'FORBIDDEN');
      assert.match(refused.body.message, /password change required/i);
    }
    // Nothing changed: still scoped to the first organization, no 2FA row.
    const me = await t.request('GET', `${AUTH}/me`, { token });
    assert.equal(me.body.data.organization.id, user.organizationId);
    const twoFactorRows = await t.ctx.db.query('SELECT 1 FROM user_two_factor WHERE user_id = $1', [user.id]);
    assert.equal(twoFactorRows.length, 0);

    const changed = await t.request('POST', `${AUTH}/password`, {
      token,
      body: { currentPassword: PASSWORD, newPassword: 'a brand new password' },
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.data.requirePasswordChange, false);
    const fresh = changed.body.data.token;
    const switched = await t.request('POST', `${AUTH}/switch-organization`, {
      token: fresh,
      body: { organizationId: second.id },
    });
    assert.equal(switched.status, 200, switched.text);
  });

  test('logout works while a password change is pending', async () => {
    const user = await createUser(t);
    await t.admin('PATCH', `/users/${user.id}`, { requirePasswordChange: true });
    const token = await signIn(t, user);
    const res = await t.request('POST', `${AUTH}/logout`, { token });
    assert.equal(res.status, 200, res.text);
  });
});

describe('cookie in production', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { appEnv: 'production' } });
  });
  after(() => t.close());

  test('the portal_token cookie is Secure in production', async () => {
    const res = await t.request('POST', `${AUTH}/register`, {
      body: { email: uniqueEmail(), password: 'a long password', name: 'P', organizationName: 'Prod' },
    });
    assert.equal(res.status, 201, res.text);
    const [cookie] = parseSetCookies(res);
    assert.equal(cookie!.attributes.secure, true);
    assert.equal(cookie!.attributes.httponly, true);
    assert.equal(cookie!.attributes.samesite, 'Lax');
  });
});
