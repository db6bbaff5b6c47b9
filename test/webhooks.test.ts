// Webhook management over the portal session (issue 7): create with the secret shown once, read, list,
// change, delete; validation of url and events; roles (members read, owners and admins manage); step-up on
// rotation; the event catalog; another organization's webhook answering 404 everywhere; and the developer
// API's GET /api/v2/webhooks with offset and keyset paging behind the webhooks:read scope.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { advance, createUser, enableTwoFactor, signIn, totpCode } from './helpers/portal.ts';

describe('webhook management', () => {
  let t: TestApp;
  let owner: { token: string; organizationId: string };
  let other: { token: string; organizationId: string };
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
    const user = await createUser(t, { role: 'owner' });
    owner = { token: await signIn(t, user), organizationId: user.organizationId };
    const stranger = await createUser(t, { role: 'owner' });
    other = { token: await signIn(t, stranger), organizationId: stranger.organizationId };
  });
  after(() => t.close());

  const hooks = (token: string, method: string, path = '', body?: unknown) =>
    t.request(method, `/api/webhooks${path}`, { token, body });

  test('create returns the secret once (whsec_ + base64 of 32 bytes); read and list never show it', async () => {
    const res = await hooks(owner.token, 'POST', '', {
      url: 'https://example.com/hooks',
      events: ['contact.opted_out', 'contact.opted_in', 'contact.opted_out'],
      description: 'CRM sync',
    });
    assert.equal(res.status, 201);
    assert.equal(res.body.success, true);
    const data = res.body.data;
    assert.match(data.id, /^wh_/);
    assert.equal(data.url, 'https://example.com/hooks');
    assert.deepEqual(data.events, ['contact.opted_out', 'contact.opted_in']);
    assert.equal(data.enabled, true);
    assert.equal(data.description, 'CRM sync');
    assert.match(data.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(data.secret.slice(6), 'base64').length, 32);

    const read = await hooks(owner.token, 'GET', `/${data.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.data.secret, undefined);
    const list = await hooks(owner.token, 'GET');
    assert.equal(list.status, 200);
    assert.ok(list.body.data.some((w: any) => w.id === data.id));
    assert.equal(JSON.stringify(list.body).includes(data.secret), false);
    assert.equal(JSON.stringify(read.body).includes(data.secret), false);

    // At rest the secret is sealed, never in clear.
    const [row] = await t.ctx.db.query<{ secret_sealed: string }>(
      'SELECT secret_sealed FROM webhook_endpoints WHERE id = $1',
      [data.id],
    );
    assert.ok(row!.secret_sealed.startsWith('v1.'));
    assert.equal(row!.secret_sealed.includes(data.secret.slice(6)), false);
  });

  test('validation: bad url, unknown or missing events, extra fields are 400 Shape A and create nothing', async () => {
    const before = (await hooks(owner.token, 'GET')).body.pagination.total;
    const bodies: [unknown, RegExp][] = [
      [{ url: 'ftp://example.com/x', events: ['contact.opted_out'] }, /http or https/],
      [{ url: 'https://user:secret@example.com/x', events: ['contact.opted_out'] }, /user name or password/],
      [{ url: 'not a url', events: ['contact.opted_out'] }, /url/],
      [{ url: '', events: ['contact.opted_out'] }, /url/],
      [{ url: 'https://example.com/x', events: [] }, /events/],
      [
        { url: 'https://example.com/x', events: ['message.exploded'] },
        /Unknown event type "message.exploded"/,
      ],
      [{ url: 'https://example.com/x' }, /events/],
      [{ events: ['contact.opted_out'] }, /url/],
      [
        { url: 'https://example.com/x', events: ['contact.opted_out'], secret: 'whsec_mine' },
        /secret|additional/,
      ],
      [{ url: `https://example.com/${'x'.repeat(2100)}`, events: ['contact.opted_out'] }, /url/],
    ];
    for (const [body, message] of bodies) {
      const res = await hooks(owner.token, 'POST', '', body);
      assert.equal(res.status, 400, JSON.stringify(body).slice(0, 100));
      assert.ok(isShapeA(res.body));
      assert.equal(res.body.code, undefined);
      assert.match(res.body.message, message);
    }
    assert.equal((await hooks(owner.token, 'GET')).body.pagination.total, before);
    // http is allowed outside production (local development receivers).
    const local = await hooks(owner.token, 'POST', '', {
      url: 'http://127.0.0.1:9/hooks',
      events: ['contact.opted_out'],
    });
    assert.equal(local.status, 201);
  });

  test('update url, events, description and enabled; unknown events refused; delete removes it', async () => {
    const created = (
      await hooks(owner.token, 'POST', '', { url: 'https://example.com/a', events: ['contact.opted_out'] })
    ).body.data;
    const patched = await hooks(owner.token, 'PATCH', `/${created.id}`, {
      url: 'https://example.com/b',
      events: ['message.delivered', 'message.failed'],
      description: 'renamed',
    });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.data.url, 'https://example.com/b');
    assert.deepEqual(patched.body.data.events, ['message.delivered', 'message.failed']);
    assert.equal(patched.body.data.description, 'renamed');
    assert.equal(patched.body.data.secret, undefined);

    const off = await hooks(owner.token, 'PATCH', `/${created.id}`, { enabled: false });
    assert.equal(off.body.data.enabled, false);
    assert.equal(off.body.data.disabledReason, 'manual');
    assert.ok(off.body.data.disabledAt);
    const on = await hooks(owner.token, 'PATCH', `/${created.id}`, { enabled: true });
    assert.equal(on.body.data.enabled, true);
    assert.equal(on.body.data.disabledReason, null);

    for (const body of [{}, { events: ['nope.nope'] }, { url: 'gopher://x' }, { enabled: 'yes' }]) {
      const res = await hooks(owner.token, 'PATCH', `/${created.id}`, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.ok(isShapeA(res.body));
    }

    const removed = await hooks(owner.token, 'DELETE', `/${created.id}`);
    assert.equal(removed.status, 200);
    assert.equal((await hooks(owner.token, 'GET', `/${created.id}`)).status, 404);
    assert.equal((await hooks(owner.token, 'DELETE', `/${created.id}`)).status, 404);
  });

  test('the catalog lists every event type with a description and a documented payload', async () => {
    const res = await hooks(owner.token, 'GET', '/events');
    assert.equal(res.status, 200);
    const types = res.body.data.map((entry: any) => entry.type);
    for (const type of [
      'message.sent',
      'message.delivered',
      'message.failed',
      'message.undelivered',
      'message.received',
      'contact.opted_out',
      'contact.opted_in',
      'contact.import_completed',
      'webhook.test',
      'call.ringing',
      'call.answered',
      'call.completed',
      'voicemail.created',
      'recording.completed',
      'transcription.completed',
      'campaign.completed',
      'link.clicked',
      'agent_call.completed',
    ]) {
      assert.ok(types.includes(type), type);
    }
    for (const entry of res.body.data) {
      assert.ok(entry.description.length > 0);
      assert.ok(['available', 'coming'].includes(entry.status));
      assert.ok(Object.keys(entry.fields).length > 0, entry.type);
      assert.deepEqual(Object.keys(entry.example).sort(), Object.keys(entry.fields).sort(), entry.type);
    }
    assert.equal(res.body.data.find((e: any) => e.type === 'call.completed').status, 'available');
    assert.equal(res.body.data.find((e: any) => e.type === 'agent_call.completed').status, 'available');
    assert.equal(res.body.data.find((e: any) => e.type === 'contact.opted_out').status, 'available');
    // Needs a session like everything here.
    const anonymous = await t.request('GET', '/api/webhooks/events');
    assert.equal(anonymous.status, 401);
    assert.ok(isShapeA(anonymous.body));
  });

  test('roles: a member may read webhooks, deliveries and the catalog, but not manage (403 FORBIDDEN)', async () => {
    const created = (
      await hooks(owner.token, 'POST', '', { url: 'https://example.com/r', events: ['contact.opted_out'] })
    ).body.data;
    const member = await createUser(t, { role: 'member', organizationIds: [owner.organizationId] });
    const memberToken = await signIn(t, member);
    assert.equal((await hooks(memberToken, 'GET')).status, 200);
    assert.equal((await hooks(memberToken, 'GET', `/${created.id}`)).status, 200);
    assert.equal((await hooks(memberToken, 'GET', `/${created.id}/deliveries`)).status, 200);
    assert.equal((await hooks(memberToken, 'GET', '/events')).status, 200);
    const refusals: [string, string, unknown?][] = [
      ['POST', '', { url: 'https://example.com/m', events: ['contact.opted_out'] }],
      ['PATCH', `/${created.id}`, { enabled: false }],
      ['DELETE', `/${created.id}`],
      ['POST', `/${created.id}/rotate-secret`],
      ['POST', `/${created.id}/test`],
      ['POST', `/${created.id}/deliveries/whd_x/redeliver`],
    ];
    for (const [method, path, body] of refusals) {
      const res = await hooks(memberToken, method, path, body);
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.ok(isShapeA(res.body));
      assert.equal(res.body.code, 'FORBIDDEN');
    }
    assert.equal((await hooks(owner.token, 'GET', `/${created.id}`)).body.data.enabled, true);

    const admin = await createUser(t, { role: 'admin', organizationIds: [owner.organizationId] });
    const adminToken = await signIn(t, admin);
    assert.equal(
      (await hooks(adminToken, 'PATCH', `/${created.id}`, { description: 'by admin' })).status,
      200,
    );
    assert.equal((await hooks(adminToken, 'POST', `/${created.id}/rotate-secret`)).status, 200);
  });

  test("another organization's webhook answers 404 on every route", async () => {
    const mine = (
      await hooks(owner.token, 'POST', '', { url: 'https://example.com/mine', events: ['contact.opted_out'] })
    ).body.data;
    const attempts: [string, string, unknown?][] = [
      ['GET', `/${mine.id}`],
      ['PATCH', `/${mine.id}`, { enabled: false }],
      ['DELETE', `/${mine.id}`],
      ['POST', `/${mine.id}/rotate-secret`],
      ['POST', `/${mine.id}/test`],
      ['GET', `/${mine.id}/deliveries`],
      ['POST', `/${mine.id}/deliveries/whd_nope/redeliver`],
    ];
    for (const [method, path, body] of attempts) {
      const res = await hooks(other.token, method, path, body);
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.ok(isShapeA(res.body));
    }
    const theirs = await hooks(other.token, 'GET');
    assert.equal(
      theirs.body.data.some((w: any) => w.id === mine.id),
      false,
    );
    const still = await hooks(owner.token, 'GET', `/${mine.id}`);
    assert.equal(still.body.data.enabled, true);
    assert.equal(still.body.data.previousSecretExpiresAt, null, 'not rotated by the stranger');
  });

  test('rotation: a new secret, the old one listed as valid for 24 hours', async () => {
    const created = (
      await hooks(owner.token, 'POST', '', { url: 'https://example.com/rot', events: ['contact.opted_out'] })
    ).body.data;
    const rotated = await hooks(owner.token, 'POST', `/${created.id}/rotate-secret`);
    assert.equal(rotated.status, 200);
    assert.match(rotated.body.data.secret, /^whsec_/);
    assert.notEqual(rotated.body.data.secret, created.secret);
    const overlap = Date.parse(rotated.body.data.previousSecretExpiresAt) - t.ctx.clock.nowMs();
    assert.ok(Math.abs(overlap - 86_400_000) < 60_000);
  });

  test('with 2FA on, rotating needs fresh verification (403 MFA_STEP_UP_REQUIRED); other management does not', async () => {
    const user = await createUser(t, { role: 'owner' });
    const token = await signIn(t, user);
    const created = (
      await hooks(token, 'POST', '', { url: 'https://example.com/2fa', events: ['contact.opted_out'] })
    ).body.data;
    const { secret } = await enableTwoFactor(t, token);
    await advance(t, 11 * 60);
    const challenge = await t.request('POST', '/v2/portal/auth/login', {
      body: { email: user.email, password: user.password },
      headers: { 'x-forwarded-for': '10.8.8.8' },
    });
    const verified = await t.request('POST', '/v2/portal/auth/2fa/login-verify', {
      body: { tempToken: challenge.body.data.tempToken, code: totpCode(t, secret) },
    });
    const session = verified.body.data.token as string;
    await advance(t, 11 * 60);

    const refused = await hooks(session, 'POST', `/${created.id}/rotate-secret`);
    assert.equal(refused.status, 403);
    assert.ok(isShapeA(refused.body));
    assert.equal(refused.body.code, 'MFA_STEP_UP_REQUIRED');
    assert.equal((await hooks(session, 'GET', `/${created.id}`)).body.data.previousSecretExpiresAt, null);
    assert.equal((await hooks(session, 'PATCH', `/${created.id}`, { description: 'x' })).status, 200);

    const stepUp = await t.request('POST', '/v2/portal/auth/2fa/verify', {
      token: session,
      body: { code: totpCode(t, secret) },
    });
    assert.equal(stepUp.status, 200);
    const rotated = await hooks(session, 'POST', `/${created.id}/rotate-secret`);
    assert.equal(rotated.status, 200);
    assert.match(rotated.body.data.secret, /^whsec_/);
  });

  test('GET /api/v2/webhooks: webhooks:read scope, offset and keyset paging, own organization only', async () => {
    const user = await createUser(t, { role: 'owner' });
    const token = await signIn(t, user);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await hooks(token, 'POST', '', {
        url: `https://example.com/${i}`,
        events: ['webhook.test'],
      });
      ids.push(res.body.data.id);
    }
    const { secret: reader } = await t.ctx.apiKeys.create(user.organizationId, {
      name: 'r',
      scopes: ['webhooks:read'],
    });
    const { secret: contactsOnly } = await t.ctx.apiKeys.create(user.organizationId, {
      name: 'c',
      scopes: ['contacts:read'],
    });

    const offset = await t.request('GET', '/api/v2/webhooks?limit=2&page=2', { apiKey: reader });
    assert.equal(offset.status, 200);
    assert.deepEqual(offset.body.pagination, { page: 2, limit: 2, total: 5, totalPages: 3 });
    assert.deepEqual(
      offset.body.data.map((w: any) => w.id),
      [ids[2], ids[1]],
    );
    assert.equal(offset.body.next_cursor, null);
    assert.equal(JSON.stringify(offset.body).includes('whsec_'), false);

    const walked: string[] = [];
    let cursor = '';
    for (let page = 0; page < 5; page++) {
      const res = await t.request('GET', `/api/v2/webhooks?limit=2&cursor=${cursor}`, { apiKey: reader });
      assert.equal(res.status, 200);
      assert.equal(res.body.pagination.page, null);
      assert.equal(res.body.pagination.total, null);
      walked.push(...res.body.data.map((w: any) => w.id));
      if (!res.body.next_cursor) break;
      cursor = res.body.next_cursor;
    }
    assert.deepEqual(walked, [...ids].reverse());

    const bad = await t.request('GET', '/api/v2/webhooks?cursor=garbage', { apiKey: reader });
    assert.equal(bad.status, 400);
    assert.ok(isShapeB(bad.body));

    const noScope = await t.request('GET', '/api/v2/webhooks', { apiKey: contactsOnly });
    assert.equal(noScope.status, 403);
    assert.ok(isShapeB(noScope.body));
    assert.equal(noScope.body.code, 'insufficient_scope');

    const session = await t.request('GET', '/api/v2/webhooks', { token });
    assert.equal(session.status, 401);
    assert.ok(isShapeB(session.body));

    const { secret: otherKey } = await t.ctx.apiKeys.create(other.organizationId, {
      name: 'o',
      scopes: ['*'],
    });
    const theirs = await t.request('GET', '/api/v2/webhooks', { apiKey: otherKey });
    assert.equal(theirs.status, 200);
    assert.equal(
      theirs.body.data.some((w: any) => ids.includes(w.id)),
      false,
    );
  });
});
