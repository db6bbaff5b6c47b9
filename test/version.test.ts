// Versioning (CONTRACT section 2): the API-Version header on every response, pinning by request header,
// 400 for an unknown version in each error shape, and GET /api/version with the changelog.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';

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
});
