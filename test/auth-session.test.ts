// Sessions the server can end (spec "Session" table, "Session rules" 2-4, Errors: the 401 codes):
// expiry on the app clock and refresh, logout, sign-out everywhere, password change, organization
// switching, and forged or tampered tokens. Every refusal is checked for status, Shape A and code.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { PasswordResetService } from '../src/modules/identity/password-reset.ts';
import { createOrganization, isShapeA, type Response, startTestApp, type TestApp } from './helpers/app.ts';
import {
  advance,
  CookieJar,
  createUser,
  enableTwoFactor,
  login,
  PASSWORD,
  parseSetCookies,
  signIn,
  totpCode,
} from './helpers/portal.ts';

const AUTH = '/v2/portal/auth';
const HOUR = 3600;
const DAY = 24 * HOUR;

function assertRefused(res: Response, status: number, code: string | undefined) {
  assert.equal(res.status, status, res.text);
  assert.ok(isShapeA(res.body), `not Shape A: ${res.text}`);
  assert.equal(res.body.code, code, res.text);
}

const me = (t: TestApp, token: string) => t.request('GET', `${AUTH}/me`, { token });
const refresh = (t: TestApp, token: string) => t.request('POST', `${AUTH}/token/refresh`, { token });

function decodePayload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
}

function withPayload(token: string, changes: Record<string, unknown>): string {
  const [header, , signature] = token.split('.');
  const payload = Buffer.from(JSON.stringify({ ...decodePayload(token), ...changes })).toString('base64url');
  return `${header}.${payload}.${signature}`;
}

describe('session expiry and refresh', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('after 8 hours the token answers 401 TOKEN_EXPIRED; refresh gives a fresh 8-hour token', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    await advance(t, 8 * HOUR - 60);
    assert.equal((await me(t, token)).status, 200, 'still valid just before 8 hours');
    await advance(t, 61);
    assertRefused(await me(t, token), 401, 'TOKEN_EXPIRED');

    const refreshed = await refresh(t, token);
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal(refreshed.body.success, true);
    const fresh = refreshed.body.data.accessToken;
    assert.equal(typeof fresh, 'string');
    assert.notEqual(fresh, token);
    const lifetime = new Date(refreshed.body.data.expiresAt).getTime() - t.ctx.clock.nowMs();
    assert.ok(Math.abs(lifetime - 8 * HOUR * 1000) < 60_000, `lifetime ${lifetime}`);
    const [cookie] = parseSetCookies(refreshed);
    assert.equal(cookie!.name, 'portal_token');
    assert.equal(cookie!.value, fresh);
    assert.equal(cookie!.attributes['max-age'], String(8 * HOUR));
    assert.equal((await me(t, fresh)).status, 200);
    // The expired token stays expired; it is the same session as the fresh one.
    assertRefused(await me(t, token), 401, 'TOKEN_EXPIRED');
    assert.equal(decodePayload(fresh).sid, decodePayload(token).sid);
  });

  test('with remember the token lasts 7 days and a refresh keeps the 7-day window', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user, true);
    await advance(t, 7 * DAY - 60);
    assert.equal((await me(t, token)).status, 200);
    await advance(t, 61);
    assertRefused(await me(t, token), 401, 'TOKEN_EXPIRED');
    const refreshed = await refresh(t, token);
    assert.equal(refreshed.status, 200, refreshed.text);
    const lifetime = new Date(refreshed.body.data.expiresAt).getTime() - t.ctx.clock.nowMs();
    assert.ok(Math.abs(lifetime - 7 * DAY * 1000) < 60_000, `lifetime ${lifetime}`);
    assert.equal(parseSetCookies(refreshed)[0]!.attributes['max-age'], String(7 * DAY));
  });

  test('a browser refreshes with the cookie alone', async () => {
    const user = await createUser(t);
    const jar = new CookieJar();
    const signedIn = await jar.request(t, 'POST', `${AUTH}/login`, { email: user.email, password: PASSWORD });
    assert.equal(signedIn.status, 200);
    const refreshed = await jar.request(t, 'POST', `${AUTH}/token/refresh`);
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal(jar.cookies.get('portal_token'), refreshed.body.data.accessToken);
    assert.equal((await jar.request(t, 'GET', `${AUTH}/me`)).status, 200);
  });

  test('a session lives 7 days server-side: after that refresh answers 401 SESSION_EXPIRED', async () => {
    const user = await createUser(t);
    let token = await signIn(t, user);
    // Refreshing keeps the token alive but never the session past its absolute lifetime.
    for (let elapsed = 0; elapsed < 7 * DAY - 8 * HOUR; elapsed += 6 * HOUR) {
      await advance(t, 6 * HOUR);
      const res = await refresh(t, token);
      assert.equal(res.status, 200, res.text);
      token = res.body.data.accessToken;
    }
    await advance(t, 8 * HOUR);
    assertRefused(await refresh(t, token), 401, 'SESSION_EXPIRED');
    assertRefused(await me(t, token), 401, 'SESSION_EXPIRED');
  });

  test('a remembered session lives 30 days server-side', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user, true);
    await advance(t, 29 * DAY);
    assert.equal((await refresh(t, token)).status, 200);
    await advance(t, DAY);
    assertRefused(await refresh(t, token), 401, 'SESSION_EXPIRED');
  });

  test('refresh without credentials is 401 AUTH_REQUIRED; with garbage 401 TOKEN_INVALID', async () => {
    assertRefused(await t.request('POST', `${AUTH}/token/refresh`), 401, 'AUTH_REQUIRED');
    assertRefused(await refresh(t, 'not.a.jwt'), 401, 'TOKEN_INVALID');
  });
});

describe('logout, sign-out everywhere and password change', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('logout ends the session and clears the cookie; the token then answers SESSION_EXPIRED', async () => {
    const user = await createUser(t);
    const jar = new CookieJar();
    const signedIn = await jar.request(t, 'POST', `${AUTH}/login`, { email: user.email, password: PASSWORD });
    const token = signedIn.body.data.token;
    const other = await signIn(t, user);

    const out = await jar.request(t, 'POST', `${AUTH}/logout`);
    assert.equal(out.status, 200, out.text);
    assert.equal(out.body.success, true);
    const [cleared] = parseSetCookies(out);
    assert.equal(cleared!.name, 'portal_token');
    assert.equal(cleared!.value, '');
    assert.ok(
      cleared!.attributes['max-age'] === '0' || new Date(String(cleared!.attributes.expires)) < new Date(),
      'cookie expired',
    );
    assert.equal(jar.cookies.has('portal_token'), false);

    assertRefused(await me(t, token), 401, 'SESSION_EXPIRED');
    assertRefused(await refresh(t, token), 401, 'SESSION_EXPIRED');
    assertRefused(await jar.request(t, 'GET', `${AUTH}/me`), 401, 'AUTH_REQUIRED');
    // Only that session ended.
    assert.equal((await me(t, other)).status, 200);
  });

  test('logout also ends a session whose token has expired', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    await advance(t, 9 * HOUR);
    assert.equal((await t.request('POST', `${AUTH}/logout`, { token })).status, 200);
    assertRefused(await refresh(t, token), 401, 'SESSION_EXPIRED');
  });

  test('logout is idempotent: an ended or revoked session signs out with 200; garbage is 401 TOKEN_INVALID', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    assert.equal((await t.request('POST', `${AUTH}/logout`, { token })).status, 200);
    const again = await t.request('POST', `${AUTH}/logout`, { token });
    assert.equal(again.status, 200, again.text);
    assert.equal(parseSetCookies(again)[0]!.value, '');
    const revoked = await signIn(t, user);
    await t.request('POST', `${AUTH}/logout-all`, { token: revoked });
    assert.equal((await t.request('POST', `${AUTH}/logout`, { token: revoked })).status, 200);
    assertRefused(await t.request('POST', `${AUTH}/logout`), 401, 'AUTH_REQUIRED');
    const garbage = await t.request('POST', `${AUTH}/logout`, {
      headers: { cookie: 'portal_token=garbage', 'x-requested-with': 'test' },
    });
    assertRefused(garbage, 401, 'TOKEN_INVALID');
    assert.equal(parseSetCookies(garbage)[0]?.value, '', 'a garbage cookie is cleared');
  });

  test('sign-out everywhere revokes every session: TOKEN_REVOKED, and refresh is refused', async () => {
    const user = await createUser(t);
    const first = await signIn(t, user);
    const second = await signIn(t, user, true);
    const bystander = await signIn(t, await createUser(t));
    const res = await t.request('POST', `${AUTH}/logout-all`, { token: first });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.revokedSessions, 2);
    assert.equal(parseSetCookies(res)[0]!.value, '');
    for (const token of [first, second]) {
      assertRefused(await me(t, token), 401, 'TOKEN_REVOKED');
      assertRefused(await refresh(t, token), 401, 'TOKEN_REVOKED');
    }
    assert.equal((await me(t, bystander)).status, 200, "another user's session is untouched");
    assert.equal((await login(t, { email: user.email, password: PASSWORD })).status, 200);
  });

  test('a revoked token past its expiry still says TOKEN_REVOKED (sign in, do not refresh)', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    await t.request('POST', `${AUTH}/logout-all`, { token });
    await advance(t, 9 * HOUR);
    assertRefused(await me(t, token), 401, 'TOKEN_REVOKED');
  });

  test('a password change revokes the other sessions and gives the caller a fresh token and cookie', async () => {
    const user = await createUser(t);
    const mine = await signIn(t, user);
    const elsewhere = await signIn(t, user);
    const res = await t.request('POST', `${AUTH}/password`, {
      token: mine,
      body: { currentPassword: PASSWORD, newPassword: 'the new password' },
    });
    assert.equal(res.status, 200, res.text);
    const fresh = res.body.data.token;
    assert.equal(parseSetCookies(res)[0]!.value, fresh);
    assert.equal((await me(t, fresh)).status, 200);
    assertRefused(await me(t, elsewhere), 401, 'TOKEN_REVOKED');
    assertRefused(await me(t, mine), 401, 'TOKEN_REVOKED');
    assert.equal((await login(t, { email: user.email, password: PASSWORD })).status, 401);
    assert.equal((await login(t, { email: user.email, password: 'the new password' })).status, 200);
  });

  test('a wrong current password is a 400 and changes nothing', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    const res = await t.request('POST', `${AUTH}/password`, {
      token,
      body: { currentPassword: 'not it at all', newPassword: 'the new password' },
    });
    assertRefused(res, 400, undefined);
    assert.equal(res.headers.getSetCookie().length, 0);
    assert.equal((await me(t, token)).status, 200);
    assert.equal((await login(t, { email: user.email, password: PASSWORD })).status, 200);
  });

  test('password change needs a session', async () => {
    const res = await t.request('POST', `${AUTH}/password`, {
      body: { currentPassword: PASSWORD, newPassword: 'the new password' },
    });
    assertRefused(res, 401, 'AUTH_REQUIRED');
  });
});

describe('organizations', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('switch-organization re-scopes: new token and cookie, role of the new organization', async () => {
    const first = await createOrganization(t);
    const second = await createOrganization(t);
    const user = await createUser(t, { organizationIds: [first.id], role: 'owner' });
    await t.ctx.users.addMembership(user.id, second.id, 'member');
    const jar = new CookieJar();
    const signedIn = await jar.request(t, 'POST', `${AUTH}/login`, { email: user.email, password: PASSWORD });
    assert.equal(signedIn.body.data.requiresOrgSelection, true);
    const oldToken = signedIn.body.data.token;

    const switched = await jar.request(t, 'POST', `${AUTH}/switch-organization`, {
      organizationId: second.id,
    });
    assert.equal(switched.status, 200, switched.text);
    assert.equal(switched.body.data.organizationId, second.id);
    const newToken = switched.body.data.token;
    assert.notEqual(newToken, oldToken);
    assert.equal(jar.cookies.get('portal_token'), newToken);
    const now = await jar.request(t, 'GET', `${AUTH}/me`);
    assert.equal(now.body.data.organization.id, second.id);
    assert.equal(now.body.data.role, 'member');
    // The token scoped to the first organization no longer works.
    assertRefused(await me(t, oldToken), 401, 'SESSION_EXPIRED');
    // Switching keeps the same session lifetime window (8 hours) and may go back.
    const back = await t.request('POST', `${AUTH}/switch-organization`, {
      token: newToken,
      body: { organizationId: first.id },
    });
    assert.equal(back.status, 200, back.text);
    assert.equal((await me(t, back.body.data.token)).body.data.role, 'owner');
  });

  test('me lists every organization the user belongs to, with the role in each, and the products', async () => {
    const first = await createOrganization(t, { name: 'First Co' });
    const second = await createOrganization(t, { name: 'Second Co', products: ['messaging'] });
    const user = await createUser(t, { organizationIds: [first.id], role: 'owner' });
    await t.ctx.users.addMembership(user.id, second.id, 'member');
    const token = await signIn(t, user);
    const answer = (await me(t, token)).body.data;
    assert.deepEqual(
      [...answer.availableOrganizations].sort((a: { name: string }, b: { name: string }) =>
        a.name.localeCompare(b.name),
      ),
      [
        { id: first.id, name: 'First Co', role: 'owner' },
        { id: second.id, name: 'Second Co', role: 'member' },
      ],
    );
    assert.deepEqual([...answer.organization.products].sort(), ['agents', 'messaging', 'voice']);
    const switched = await t.request('POST', `${AUTH}/switch-organization`, {
      token,
      body: { organizationId: second.id },
    });
    assert.deepEqual((await me(t, switched.body.data.token)).body.data.organization.products, ['messaging']);
  });

  test('a password change voids a pending 2FA challenge and an earlier reset link', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    const { secret } = await enableTwoFactor(t, token);
    // Someone with the old password starts a sign-in; a reset link is also out.
    const challenge = await login(t, { email: user.email, password: PASSWORD });
    assert.equal(challenge.body.data.requiresTwoFactor, true);
    const resets = new PasswordResetService({
      db: t.ctx.db,
      clock: t.ctx.clock,
      users: t.ctx.users,
      sessions: t.ctx.sessions,
      invitations: t.ctx.invitations,
    });
    const reset = await resets.issue(user.email);

    const changed = await t.request('POST', `${AUTH}/password`, {
      token,
      body: { currentPassword: PASSWORD, newPassword: 'a brand new password' },
    });
    assert.equal(changed.status, 200, changed.text);

    const verify = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken: challenge.body.data.tempToken, code: totpCode(t, secret) },
    });
    assert.equal(verify.status, 401);
    const confirm = await t.request('POST', `${AUTH}/password-reset/confirm`, {
      body: { token: reset!.token, newPassword: 'attacker chosen password' },
    });
    assert.equal(confirm.status, 400);
    // The new password is the one that works.
    const relogin = await login(t, { email: user.email, password: 'a brand new password' });
    assert.equal(relogin.status, 200);
  });

  test('a session revoked while a switch is under way is not carried over to a new one', async () => {
    const first = await createOrganization(t);
    const second = await createOrganization(t);
    const user = await createUser(t, { organizationIds: [first.id, second.id], role: 'owner' });
    const token = await signIn(t, user);
    // The guard has accepted the session; then a password change elsewhere revokes it, before the switch.
    const session = await t.ctx.sessions.authenticate(token, {});
    await t.ctx.sessions.revokeAll(user.id, 'password_change');
    await assert.rejects(t.ctx.portalAuth.switchOrganization(session, second.id), (error: any) => {
      assert.equal(error.status, 401);
      assert.equal(error.code, 'TOKEN_REVOKED');
      return true;
    });
    const [live] = await t.ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM sessions WHERE user_id = $1 AND revoked_at IS NULL',
      [user.id],
    );
    assert.equal(live!.n, 0, 'no new session was made');
  });

  test('switching to an organization the user does not belong to is 403 FORBIDDEN and changes nothing', async () => {
    const user = await createUser(t);
    const foreign = await createOrganization(t);
    const token = await signIn(t, user);
    const res = await t.request('POST', `${AUTH}/switch-organization`, {
      token,
      body: { organizationId: foreign.id },
    });
    assertRefused(res, 403, 'FORBIDDEN');
    assert.equal(res.headers.getSetCookie().length, 0);
    const still = await me(t, token);
    assert.equal(still.status, 200);
    assert.equal(still.body.data.organization.id, user.organizationId);
    assertRefused(
      await t.request('POST', `${AUTH}/switch-organization`, {
        token,
        body: { organizationId: 'org_missing' },
      }),
      403,
      'FORBIDDEN',
    );
  });

  test('a token cannot be pointed at another organization by editing it', async () => {
    const user = await createUser(t);
    const foreign = await createOrganization(t);
    const token = await signIn(t, user);
    assertRefused(await me(t, withPayload(token, { org: foreign.id })), 401, 'TOKEN_INVALID');
  });

  test('a member removed from the organization loses the session scoped to it', async () => {
    const user = await createUser(t, { role: 'admin' });
    const token = await signIn(t, user);
    await t.ctx.db.query('DELETE FROM memberships WHERE user_id = $1', [user.id]);
    assertRefused(await me(t, token), 401, 'SESSION_EXPIRED');
  });
});

describe('cross-site requests (Fetch Metadata, then Origin; issue 31 finding 3)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test("the spec's refresh: an expired token in the cookie and no body nor header of ours is refreshed", async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    t.ctx.clock.advance(9 * 3600); // past the 8-hour token, within the 7-day session
    const refreshed = await t.request('POST', `${AUTH}/token/refresh`, {
      headers: { cookie: `portal_token=${token}` },
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.ok(refreshed.body.data.token);
  });

  test('a cross-site browser POST is 403 CROSS_SITE_REQUEST and changes nothing', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    const cookie = `portal_token=${token}`;
    const forgeries: Record<string, string>[] = [
      { cookie, 'sec-fetch-site': 'cross-site' },
      { cookie, 'sec-fetch-site': 'same-site' },
      // A browser without Fetch Metadata still names the page's origin.
      { cookie, origin: 'https://evil.example' },
      { cookie, origin: 'null' },
      // Fetch Metadata wins over an Origin that looks right.
      { cookie, 'sec-fetch-site': 'cross-site', origin: new URL(t.url).origin },
    ];
    for (const headers of forgeries) {
      for (const path of ['/logout-all', '/logout', '/token/refresh', '/2fa/setup']) {
        const refused = await t.request('POST', `${AUTH}${path}`, { headers });
        assertRefused(refused, 403, 'CROSS_SITE_REQUEST');
        assert.equal(parseSetCookies(refused).length, 0, `${path} set no cookie`);
      }
      const created = await t.request('POST', '/api/api-keys', {
        headers,
        body: { name: 'forged', scopes: ['*'] },
      });
      assertRefused(created, 403, 'CROSS_SITE_REQUEST');
    }
    // A forged cross-site sign-in is refused too (login CSRF would sign the victim in as the attacker).
    const forgedLogin = await t.request('POST', `${AUTH}/login`, {
      headers: { 'sec-fetch-site': 'cross-site' },
      body: { email: user.email, password: PASSWORD },
    });
    assertRefused(forgedLogin, 403, 'CROSS_SITE_REQUEST');
    const keys = await t.request('GET', '/api/api-keys', { token });
    assert.equal(keys.body.data.length, 0, 'no key was made');
    const still = await me(t, token);
    assert.equal(still.status, 200, 'nothing was signed out');
    assert.equal(still.body.data.user.twoFactorEnabled, false);
  });

  test('same-origin pages, typed-in navigations, non-browser clients and Bearer tokens go through', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    const cookie = `portal_token=${token}`;
    const origin = new URL(t.url).origin;
    // Reads are never checked.
    const read = await t.request('GET', '/api/api-keys', {
      headers: { cookie, 'sec-fetch-site': 'cross-site' },
    });
    assert.equal(read.status, 200);
    const allowed: Record<string, string>[] = [
      { cookie, 'sec-fetch-site': 'same-origin', origin },
      { cookie, 'sec-fetch-site': 'none' },
      { cookie, origin },
      { cookie },
    ];
    for (const [index, headers] of allowed.entries()) {
      const created = await t.request('POST', '/api/api-keys', {
        headers,
        body: { name: `allowed-${index}`, scopes: ['messages:read'] },
      });
      assert.equal(created.status, 201, `${JSON.stringify(Object.keys(headers))}: ${created.text}`);
    }
    // A Bearer token is not sent by a browser on its own: not checked.
    const bearer = await t.request('POST', '/api/api-keys', {
      token,
      headers: { 'sec-fetch-site': 'cross-site' },
      body: { name: 'server', scopes: ['messages:read'] },
    });
    assert.equal(bearer.status, 201, bearer.text);
    assert.equal((await login(t, { email: user.email, password: PASSWORD })).status, 200);
  });
});

describe('forged and malformed tokens', () => {
  let t: TestApp;
  let token: string;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
    token = await signIn(t, await createUser(t));
  });
  after(() => t.close());

  test('no credentials: 401 AUTH_REQUIRED', async () => {
    assertRefused(await t.request('GET', `${AUTH}/me`), 401, 'AUTH_REQUIRED');
    assertRefused(
      await t.request('GET', `${AUTH}/me`, { headers: { authorization: 'Basic abc' } }),
      401,
      'AUTH_REQUIRED',
    );
  });

  test('garbage, a tampered payload or signature: 401 TOKEN_INVALID', async () => {
    const [header, payload, signature] = token.split('.');
    const flipped = `${signature!.slice(0, -2)}${signature!.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const bad of [
      'garbage',
      `${header}.${payload}`,
      `${header}.${payload}.${flipped}`,
      withPayload(token, { exp: Math.floor(t.ctx.clock.nowMs() / 1000) + 365 * DAY }),
      withPayload(token, { sub: 'usr_someone_else' }),
    ]) {
      assertRefused(await me(t, bad), 401, 'TOKEN_INVALID');
    }
    // A garbage cookie is just as invalid.
    assertRefused(
      await t.request('GET', `${AUTH}/me`, { headers: { cookie: 'portal_token=garbage' } }),
      401,
      'TOKEN_INVALID',
    );
  });

  test('a token with alg "none" is refused', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const payload = token.split('.')[1];
    assertRefused(await me(t, `${header}.${payload}.`), 401, 'TOKEN_INVALID');
    assertRefused(await refresh(t, `${header}.${payload}.`), 401, 'TOKEN_INVALID');
  });

  test('a token signed with another secret or another algorithm is refused', async () => {
    const claims = decodePayload(token);
    const otherSecret = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('some-other-secret-that-is-long-enough'));
    assertRefused(await me(t, otherSecret), 401, 'TOKEN_INVALID');
    const otherAlg = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS512' })
      .sign(new TextEncoder().encode(t.ctx.config.jwtSecret));
    assertRefused(await me(t, otherAlg), 401, 'TOKEN_INVALID');
  });

  test('the genuine token still works after all that', async () => {
    assert.equal((await me(t, token)).status, 200);
  });
});
