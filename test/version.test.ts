// Versioning (CONTRACT sections 2 and 11, docs/versioning.md): the API-Version header on every response,
// pinning by request header or by the organization's version pinned at creation, 400 for an unknown version in
// each error shape, GET /api/version with the changelog and each version's status, and the deprecation
// policy: Deprecation, Sunset and Link headers on a deprecated version, and after its sunset a request for it
// refused while an organization pinned to it is answered as of its successor.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOrganization, isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

describe('API versioning', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('GET /api/version returns the current version and the changelog, newest first', async () => {
    const res = await t.request('GET', '/api/version');
    assert.equal(res.status, 200);
    assert.equal(res.body.success, true);
    assert.equal(res.body.data.version, '2026-09-01');
    assert.deepEqual(
      res.body.data.changelog.map((entry: { version: string }) => entry.version),
      ['2026-09-01', '2026-06-10'],
    );
    assert.equal(res.headers.get('api-version'), '2026-09-01');
  });

  test('every response carries API-Version, errors included', async () => {
    for (const path of ['/health', '/nope', '/api/v2/nope', '/v2/portal/nope']) {
      const res = await t.request('GET', path);
      assert.equal(res.headers.get('api-version'), '2026-09-01', path);
    }
  });

  test('a request pinned to a known version is answered under that version', async () => {
    const res = await t.request('GET', '/api/version', { headers: { 'API-Version': '2026-06-10' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('api-version'), '2026-06-10');
  });

  test('an unknown version is a 400 in Shape A outside the developer API', async () => {
    const res = await t.request('GET', '/api/version', { headers: { 'API-Version': '2025-01-01' } });
    assert.equal(res.status, 400);
    assert.ok(isShapeA(res.body), res.text);
    assert.match(res.body.message, /Unknown API-Version/);
    assert.equal(res.body.code, undefined);
  });

  test('an unknown version is a 400 in Shape B on the developer API', async () => {
    const res = await t.request('GET', '/api/v2/messages', { headers: { 'API-Version': 'yesterday' } });
    assert.equal(res.status, 400);
    assert.ok(isShapeB(res.body), res.text);
    assert.match(res.body.error, /Unknown API-Version/);
  });

  const DEPRECATION = `@${Date.parse('2026-09-01T00:00:00Z') / 1000}`;
  const SUNSET = 'Mon, 01 Mar 2027 00:00:00 GMT';

  test('GET /api/version lists each version with its status, successor and sunset (180+ days later)', async () => {
    const { versions } = (await t.request('GET', '/api/version')).body.data;
    assert.deepEqual(versions, [
      { version: '2026-09-01', status: 'current', deprecatedAt: null, successor: null, sunsetAt: null },
      {
        version: '2026-06-10',
        status: 'deprecated',
        deprecatedAt: '2026-09-01',
        successor: '2026-09-01',
        sunsetAt: '2027-03-01',
      },
    ]);
    const days = (Date.parse('2027-03-01') - Date.parse('2026-09-01')) / 86_400_000;
    assert.ok(days >= 180, `cool-down of ${days} days`);
  });

  test('a request pinned to 2026-06-10 carries Deprecation, Sunset and the successor; 2026-09-01 none', async () => {
    const who = await sender(t);
    const old = await t.request('GET', '/api/v2/campaigns', {
      apiKey: who.key,
      headers: { 'API-Version': '2026-06-10' },
    });
    assert.equal(old.status, 200, old.text);
    assert.equal(old.headers.get('api-version'), '2026-06-10');
    assert.equal(old.headers.get('deprecation'), DEPRECATION);
    assert.equal(old.headers.get('sunset'), SUNSET);
    assert.equal(old.headers.get('link'), '</api/version#2026-09-01>; rel="successor-version"');
    // On refusals too, and on every interface.
    const refused = await t.request('GET', '/v2/portal/auth/me', {
      headers: { 'API-Version': '2026-06-10' },
    });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('deprecation'), DEPRECATION);

    const current = await t.request('GET', '/api/v2/campaigns', {
      apiKey: who.key,
      headers: { 'API-Version': '2026-09-01' },
    });
    for (const header of ['deprecation', 'sunset', 'link'])
      assert.equal(current.headers.get(header), null, header);
  });

  test('an organization is pinned at creation; its requests get its version unless they ask for another', async () => {
    const fresh = await createOrganization(t);
    assert.equal((await t.admin('GET', `/organizations/${fresh.id}`)).body.data.apiVersion, '2026-09-01');
    // An integration built on 2026-06-10: pinned there by the operator (as an organization made then would be).
    const who = await sender(t, { apiVersion: '2026-06-10' });
    const list = await t.request('POST', '/api/v2/contact-lists', { apiKey: who.key, body: { name: 'l' } });
    await t.request('POST', '/api/v2/campaigns', {
      apiKey: who.key,
      body: { name: 'c', message: 'hi', contactListIds: [list.body.data.id] },
    });
    const pinned = await t.request('GET', '/api/v2/campaigns', { apiKey: who.key });
    assert.equal(pinned.headers.get('api-version'), '2026-06-10');
    assert.equal(pinned.headers.get('deprecation'), DEPRECATION);
    assert.equal(pinned.body.data[0].delivery_stats, undefined, 'answered as of 2026-06-10');
    const asked = await t.request('GET', '/api/v2/campaigns', {
      apiKey: who.key,
      headers: { 'API-Version': '2026-09-01' },
    });
    assert.equal(asked.headers.get('api-version'), '2026-09-01');
    assert.ok(asked.body.data[0].delivery_stats, 'the header overrides the pin');
    // The portal answers the organization's people the same way.
    const token = await signIn(t, await createUser(t, { organizationIds: [who.id] }));
    const portal = await t.request('GET', '/v2/portal/campaigns', { token });
    assert.equal(portal.headers.get('api-version'), '2026-06-10');
    assert.equal(portal.body.data[0].delivery_stats, undefined);
    // The operator moves it to the current version when the integration is ready.
    const moved = await t.admin('PATCH', `/organizations/${who.id}`, { apiVersion: '2026-09-01' });
    assert.equal(moved.body.data.apiVersion, '2026-09-01');
    const after = await t.request('GET', '/api/v2/campaigns', { apiKey: who.key });
    assert.equal(after.headers.get('api-version'), '2026-09-01');
    assert.equal(after.headers.get('deprecation'), null);
    assert.equal(
      (await t.admin('PATCH', `/organizations/${who.id}`, { apiVersion: '2025-01-01' })).status,
      400,
    );
  });

  test('after its sunset 2026-06-10 is refused when asked for; an organization pinned to it gets 2026-09-01', async () => {
    const who = await sender(t, { apiVersion: '2026-06-10' });
    const now = t.ctx.clock.nowMs();
    await t.admin('POST', '/test/clock', {
      advanceSeconds: Math.ceil((Date.parse('2027-03-01T00:00:00Z') - now) / 1000),
    });
    const asked = await t.request('GET', '/api/v2/campaigns', {
      apiKey: who.key,
      headers: { 'API-Version': '2026-06-10' },
    });
    assert.equal(asked.status, 400);
    assert.ok(isShapeB(asked.body), asked.text);
    assert.match(asked.body.error, /retired; use 2026-09-01/);
    const pinned = await t.request('GET', '/api/v2/campaigns', { apiKey: who.key });
    assert.equal(pinned.status, 200);
    assert.equal(pinned.headers.get('api-version'), '2026-09-01');
    assert.equal(pinned.headers.get('deprecation'), null);
    const { versions } = (await t.request('GET', '/api/version')).body.data;
    assert.equal(versions[1].status, 'sunset');
  });
});
