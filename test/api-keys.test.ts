// Key management over the portal session (issue: API keys): create with scopes and expiry, the key shown
// once, list and read without it, revoke taking effect at once, roles, two-factor step-up, the starter plan,
// another organization's key answering 404, and the credentials not being interchangeable.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOrganization, isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { advance, createUser, enableTwoFactor, signIn, totpCode } from './helpers/portal.ts';

describe('API key management', () => {
  let t: TestApp;
  let owner: { token: string; organizationId: string };
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
    const user = await createUser(t, { role: 'owner' });
    owner = { token: await signIn(t, user), organizationId: user.organizationId };
  });
  after(() => t.close());

  const keys = (token: string, method: string, path = '', body?: unknown) =>
    t.request(method, `/api/api-keys${path}`, { token, body });

  test('create returns the full key once; it works on the developer API; list and read never show it', async () => {
    const res = await keys(owner.token, 'POST', '', {
      name: 'Billing sync',
      scopes: ['messages:read', 'contacts:read'],
    });
    assert.equal(res.status, 201);
    const data = res.body.data;
    assert.match(data.id, /^key_/);
    assert.match(data.key, /^sk_test_[0-9A-Za-z]{43}$/);
    assert.equal(data.prefix, data.key.slice(0, 12));
    assert.deepEqual(data.scopes, ['messages:read', 'contacts:read']);
    assert.equal(data.expiresAt, null);
    assert.ok(data.createdAt);

    const me = await t.request('GET', '/api/v2/me', { apiKey: data.key });
    assert.equal(me.status, 200);
    assert.equal(me.body.data.organization.id, owner.organizationId);

    const list = await keys(owner.token, 'GET');
    assert.equal(list.status, 200);
    const listed = list.body.data.find((k: any) => k.id === data.id);
    assert.ok(listed);
    assert.equal(listed.key, undefined);
    assert.equal(JSON.stringify(list.body).includes(data.key), false);
    assert.ok(list.body.pagination.total >= 1);

    const read = await keys(owner.token, 'GET', `/${data.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.data.key, undefined);
    assert.ok(read.body.data.lastUsedAt, 'the call to /me was recorded');
  });

  test('expiry: 30, 60, 90 and 365 days or never; anything else is 400 and creates nothing', async () => {
    const now = t.ctx.clock.nowMs();
    for (const days of [30, 60, 90, 365]) {
      const res = await keys(owner.token, 'POST', '', {
        name: `${days}d`,
        scopes: ['*'],
        expiresInDays: days,
      });
      assert.equal(res.status, 201, String(days));
      const expires = Date.parse(res.body.data.expiresAt);
      assert.ok(Math.abs(expires - (now + days * 86_400_000)) < 60_000);
    }
    assert.equal(
      (await keys(owner.token, 'POST', '', { name: 'never', scopes: ['*'], expiresInDays: null })).body.data
        .expiresAt,
      null,
    );

    const before = (await keys(owner.token, 'GET')).body.pagination.total;
    for (const body of [
      { name: 'x', scopes: ['*'], expiresInDays: 7 },
      { name: 'x', scopes: ['*'], expiresInDays: '30' },
      { name: 'x', scopes: ['*'], expiresInDays: 0 },
      { name: 'x', scopes: ['messages:destroy'] },
      { name: 'x' },
      { name: '', scopes: ['*'] },
      { name: 'x', scopes: ['*'], owner: 'me' },
    ]) {
      const res = await keys(owner.token, 'POST', '', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.ok(isShapeA(res.body));
      assert.equal(res.body.code, undefined);
    }
    assert.equal((await keys(owner.token, 'GET')).body.pagination.total, before);
  });

  test('a key expiring in 30 days stops working after 30 days by the server clock', async () => {
    const res = await keys(owner.token, 'POST', '', { name: 'short', scopes: ['*'], expiresInDays: 30 });
    const key = res.body.data.key;
    await advance(t, 29 * 86_400);
    assert.equal((await t.request('GET', '/api/v2/me', { apiKey: key })).status, 200);
    await advance(t, 86_400 + 1);
    assert.equal((await t.request('GET', '/api/v2/me', { apiKey: key })).status, 401);
    // Sessions last hours: sign in again after the clock jump.
    const user = await createUser(t, { role: 'owner', organizationIds: [owner.organizationId] });
    owner.token = await signIn(t, user);
  });

  test('a key with no scopes can be created but can call nothing', async () => {
    const res = await keys(owner.token, 'POST', '', { name: 'empty', scopes: [] });
    assert.equal(res.status, 201);
    const me = await t.request('GET', '/api/v2/me', { apiKey: res.body.data.key });
    assert.equal(me.status, 403);
    assert.equal(me.body.code, 'insufficient_scope');
  });

  test('revoke: the key is refused on the next request; revoking again changes nothing', async () => {
    const created = (await keys(owner.token, 'POST', '', { name: 'to revoke', scopes: ['*'] })).body.data;
    assert.equal((await t.request('GET', '/api/v2/me', { apiKey: created.key })).status, 200);
    const revoked = await keys(owner.token, 'DELETE', `/${created.id}`);
    assert.equal(revoked.status, 200);
    assert.ok(revoked.body.data.revokedAt);
    const refused = await t.request('GET', '/api/v2/me', { apiKey: created.key });
    assert.equal(refused.status, 401);
    assert.ok(isShapeB(refused.body));
    const again = await keys(owner.token, 'DELETE', `/${created.id}`);
    assert.equal(again.status, 200);
    assert.equal(again.body.data.revokedAt, revoked.body.data.revokedAt);
  });

  test('the scope catalog lists every scope of CONTRACT sections 5 and 7', async () => {
    const res = await keys(owner.token, 'GET', '/scopes');
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.data.map((entry: any) => entry.scope),
      [
        'messages:send',
        'messages:read',
        'contacts:read',
        'contacts:write',
        'campaigns:read',
        'campaigns:write',
        'conversations:read',
        'conversations:write',
        'calls:read',
        'calls:write',
        'numbers:read',
        'numbers:write',
        'extensions:read',
        'extensions:write',
        'voicemails:read',
        'recordings:read',
        'flows:read',
        'flows:write',
        'agents:read',
        'agents:write',
        'webhooks:read',
        'webhooks:write',
        'exports:read',
        'exports:write',
        '*',
      ],
    );
    assert.ok(res.body.data.every((entry: any) => entry.description.length > 0));
  });

  test('roles: a member may list but not create or revoke (403 FORBIDDEN); an admin may', async () => {
    const member = await createUser(t, { role: 'member', organizationIds: [owner.organizationId] });
    const admin = await createUser(t, { role: 'admin', organizationIds: [owner.organizationId] });
    const memberToken = await signIn(t, member);
    const adminToken = await signIn(t, admin);
    const existing = (await keys(owner.token, 'POST', '', { name: 'owned', scopes: ['*'] })).body.data;

    assert.equal((await keys(memberToken, 'GET')).status, 200);
    const create = await keys(memberToken, 'POST', '', { name: 'nope', scopes: ['*'] });
    assert.equal(create.status, 403);
    assert.ok(isShapeA(create.body));
    assert.equal(create.body.code, 'FORBIDDEN');
    const revoke = await keys(memberToken, 'DELETE', `/${existing.id}`);
    assert.equal(revoke.status, 403);
    assert.equal((await t.request('GET', '/api/v2/me', { apiKey: existing.key })).status, 200, 'still valid');

    assert.equal((await keys(adminToken, 'POST', '', { name: 'by admin', scopes: ['*'] })).status, 201);
    assert.equal((await keys(adminToken, 'DELETE', `/${existing.id}`)).status, 200);
  });

  test('with 2FA on, creating and revoking need fresh verification (403 MFA_STEP_UP_REQUIRED), for 10 minutes', async () => {
    const user = await createUser(t, { role: 'owner' });
    const token = await signIn(t, user);
    const { secret } = await enableTwoFactor(t, token);
    // Enabling counted as a verification; let it go stale.
    await advance(t, 11 * 60);
    // Sign in afresh (through the 2FA challenge) to have a session whose verification we control.
    const challenge = await t.request('POST', '/v2/portal/auth/login', {
      body: { email: user.email, password: user.password },
      headers: { 'x-forwarded-for': '10.9.9.9' },
    });
    assert.equal(challenge.body.data.requiresTwoFactor, true);
    const verified = await t.request('POST', '/v2/portal/auth/2fa/login-verify', {
      body: { tempToken: challenge.body.data.tempToken, code: totpCode(t, secret) },
    });
    const session = verified.body.data.token as string;
    await advance(t, 11 * 60);

    const refused = await keys(session, 'POST', '', { name: 'needs step-up', scopes: ['*'] });
    assert.equal(refused.status, 403);
    assert.ok(isShapeA(refused.body));
    assert.equal(refused.body.code, 'MFA_STEP_UP_REQUIRED');
    assert.equal((await keys(session, 'GET')).body.pagination.total, 0, 'nothing was created');

    const stepUp = await t.request('POST', '/v2/portal/auth/2fa/verify', {
      token: session,
      body: { code: totpCode(t, secret) },
    });
    assert.equal(stepUp.status, 200);
    const created = await keys(session, 'POST', '', { name: 'after step-up', scopes: ['*'] });
    assert.equal(created.status, 201);
    assert.equal((await keys(session, 'DELETE', `/${created.body.data.id}`)).status, 200);

    await advance(t, 10 * 60 + 1);
    const stale = await keys(session, 'POST', '', { name: 'stale', scopes: ['*'] });
    assert.equal(stale.status, 403);
    assert.equal(stale.body.code, 'MFA_STEP_UP_REQUIRED');
  });

  test('a starter organization cannot create keys', async () => {
    const org = await createOrganization(t, { plan: 'starter' });
    const user = await createUser(t, { role: 'owner', organizationIds: [org.id] });
    const res = await keys(await signIn(t, user), 'POST', '', { name: 'x', scopes: ['*'] });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'FORBIDDEN');
    assert.match(res.body.message, /plan/);
  });

  test("another organization's key id answers 404 to read and revoke, and stays valid", async () => {
    const stranger = await createUser(t, { role: 'owner' });
    const strangerToken = await signIn(t, stranger);
    const mine = (await keys(owner.token, 'POST', '', { name: 'mine', scopes: ['*'] })).body.data;
    assert.equal((await keys(strangerToken, 'GET', `/${mine.id}`)).status, 404);
    const revoke = await keys(strangerToken, 'DELETE', `/${mine.id}`);
    assert.equal(revoke.status, 404);
    assert.ok(isShapeA(revoke.body));
    assert.equal((await t.request('GET', '/api/v2/me', { apiKey: mine.key })).status, 200);
    const theirs = await keys(strangerToken, 'GET');
    assert.equal(
      theirs.body.data.some((k: any) => k.id === mine.id),
      false,
    );
  });

  describe('credentials are not interchangeable', () => {
    test('no session is 401 AUTH_REQUIRED in Shape A, before any validation', async () => {
      const res = await t.request('POST', '/api/api-keys', { body: { nonsense: true } });
      assert.equal(res.status, 401);
      assert.ok(isShapeA(res.body));
      assert.equal(res.body.code, 'AUTH_REQUIRED');
    });

    test('an API key does not authenticate key management, as x-api-key or as a Bearer token', async () => {
      const { key } = (await keys(owner.token, 'POST', '', { name: 'k', scopes: ['*'] })).body.data;
      const asHeader = await t.request('GET', '/api/api-keys', { apiKey: key });
      assert.equal(asHeader.status, 401);
      assert.equal(asHeader.body.code, 'AUTH_REQUIRED');
      const asBearer = await t.request('GET', '/api/api-keys', { token: key });
      assert.equal(asBearer.status, 401);
      assert.equal(asBearer.body.code, 'TOKEN_INVALID');
      const portal = await t.request('GET', '/v2/portal/auth/me', { apiKey: key });
      assert.equal(portal.status, 401);
    });

    test('a session token does not authenticate the developer API', async () => {
      const res = await t.request('GET', '/api/v2/me', { token: owner.token });
      assert.equal(res.status, 401);
      assert.deepEqual(Object.keys(res.body).sort(), ['error', 'success']);
      const cookie = await t.request('GET', '/api/v2/me', {
        headers: { cookie: `portal_token=${owner.token}` },
      });
      assert.equal(cookie.status, 401);
    });
  });
});
