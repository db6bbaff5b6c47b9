// The developer API's front door (issue: API keys, developer-API authentication and request rate limits):
// x-api-key authentication with the spec's 401 shape, revocation and expiry taking effect at once, test keys
// refused in production, the plan gate, fail-closed scopes, and every request rate limit with its headers.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { App } from '../src/app.ts';
import type { Scope } from '../src/modules/api-keys/index.ts';
import { mountInterface } from '../src/platform/http/interfaces.ts';
import type { Runtime } from '../src/runtime.ts';
import { createOrganization, freshDatabase, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { alignClock } from './helpers/portal.ts';

/** Test-only developer routes behind the real guard, one per kind of limit and scope. */
function scopedRoutes(app: App, ctx: Runtime) {
  return mountInterface(app, { ...ctx.interfaces.developer, prefix: '/api/v2/test' }, [
    (api) => {
      api.get('/read-messages', { config: { scope: 'messages:read', rateLimit: 'messaging' } }, async () => ({
        success: true,
      }));
      api.post(
        '/send',
        { config: { scope: 'messages:send', rateLimit: 'messaging', sendLimit: true } },
        async () => ({ success: true }),
      );
      api.get('/calls', { config: { scope: 'calls:read', rateLimit: 'other' } }, async () => ({
        success: true,
      }));
    },
  ]);
}

async function issueKey(
  t: TestApp,
  organizationId: string,
  scopes: Scope[] = ['*'],
  expiresInDays?: 30 | 60 | 90 | 365,
) {
  const { secret, key } = await t.ctx.apiKeys.create(organizationId, {
    name: 'test key',
    scopes,
    expiresInDays,
  });
  return { secret, key };
}

function expectInline401(res: { status: number; body: any }) {
  assert.equal(res.status, 401);
  assert.ok(isShapeB(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ['error', 'success'], 'no code on a key 401');
}

describe('developer API authentication', () => {
  let t: TestApp;
  let org: { id: string; name: string };
  before(async () => {
    t = await startTestApp({ extend: scopedRoutes });
    org = await createOrganization(t, { name: 'Keyed Inc', plan: 'pro' });
  });
  after(() => t.close());

  test('GET /api/v2/me names the organization and the key', async () => {
    const { secret, key } = await issueKey(t, org.id, ['messages:read', 'contacts:read']);
    assert.match(secret, /^sk_test_[0-9A-Za-z]{43}$/);
    const res = await t.request('GET', '/api/v2/me', { apiKey: secret });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      success: true,
      data: {
        organization: { id: org.id, name: 'Keyed Inc', plan: 'pro' },
        key: { id: key.id, prefix: secret.slice(0, 12), scopes: ['messages:read', 'contacts:read'] },
      },
    });
  });

  test('the key is stored only as its SHA-256', async () => {
    const { secret, key } = await issueKey(t, org.id);
    const [row] = await t.ctx.db.query<any>('SELECT * FROM api_keys WHERE id = $1', [key.id]);
    assert.equal(JSON.stringify(row).includes(secret), false);
    assert.equal(row.key_hash.length, 64);
  });

  test('a missing key is 401 {success:false, error} without code', async () => {
    expectInline401(await t.request('GET', '/api/v2/me'));
  });

  test('an unknown or malformed key is 401 without code', async () => {
    expectInline401(await t.request('GET', '/api/v2/me', { apiKey: `sk_test_${'a'.repeat(43)}` }));
    expectInline401(await t.request('GET', '/api/v2/me', { apiKey: 'hello' }));
    const { secret } = await issueKey(t, org.id);
    // One character changed (to one it is not already, or the key would still be valid).
    const altered = `${secret.slice(0, -1)}${secret.endsWith('x') ? 'y' : 'x'}`;
    expectInline401(await t.request('GET', '/api/v2/me', { apiKey: altered }));
  });

  test('a key sent as a Bearer token is 401: credentials are not interchangeable', async () => {
    const { secret } = await issueKey(t, org.id);
    const res = await t.request('GET', '/api/v2/me', { token: secret });
    expectInline401(res);
    assert.match(res.body.error, /x-api-key/);
  });

  test('a revoked key is refused on the very next request', async () => {
    const { secret, key } = await issueKey(t, org.id);
    assert.equal((await t.request('GET', '/api/v2/me', { apiKey: secret })).status, 200);
    await t.ctx.apiKeys.revoke(org.id, key.id);
    const res = await t.request('GET', '/api/v2/me', { apiKey: secret });
    expectInline401(res);
    assert.match(res.body.error, /revoked/);
  });

  test('an expiring key works until its expiry by the server clock, then is refused', async () => {
    const { secret } = await issueKey(t, org.id, ['*'], 30);
    t.ctx.clock.advance(30 * 86_400 - 60);
    assert.equal((await t.request('GET', '/api/v2/me', { apiKey: secret })).status, 200);
    t.ctx.clock.advance(61);
    const res = await t.request('GET', '/api/v2/me', { apiKey: secret });
    expectInline401(res);
    assert.match(res.body.error, /expired/);
  });

  test('lastUsedAt is recorded', async () => {
    const { secret, key } = await issueKey(t, org.id);
    assert.equal(key.lastUsedAt, null);
    await t.request('GET', '/api/v2/me', { apiKey: secret });
    const after = await t.ctx.apiKeys.get(org.id, key.id);
    assert.ok(after.lastUsedAt);
  });

  test('a starter organization has no API access: 403 in Shape B', async () => {
    const starter = await createOrganization(t, { plan: 'starter' });
    const { secret } = await issueKey(t, starter.id);
    const res = await t.request('GET', '/api/v2/me', { apiKey: secret });
    assert.equal(res.status, 403);
    assert.ok(isShapeB(res.body));
    assert.equal(res.body.code, 'FORBIDDEN');
    assert.match(res.body.error, /plan/);
  });

  describe('scopes', () => {
    test('a key with no scopes can call nothing, not even /me', async () => {
      const { secret } = await issueKey(t, org.id, []);
      for (const path of ['/api/v2/me', '/api/v2/test/read-messages', '/api/v2/test/calls']) {
        const res = await t.request('GET', path, { apiKey: secret });
        assert.equal(res.status, 403, path);
        assert.equal(res.body.code, 'insufficient_scope');
        assert.ok(isShapeB(res.body));
      }
    });

    test('the required scope or * is allowed; another scope is 403 insufficient_scope', async () => {
      const reader = await issueKey(t, org.id, ['messages:read']);
      const star = await issueKey(t, org.id, ['*']);
      const other = await issueKey(t, org.id, ['contacts:read', 'calls:read']);
      assert.equal(
        (await t.request('GET', '/api/v2/test/read-messages', { apiKey: reader.secret })).status,
        200,
      );
      assert.equal(
        (await t.request('GET', '/api/v2/test/read-messages', { apiKey: star.secret })).status,
        200,
      );
      const refused = await t.request('GET', '/api/v2/test/read-messages', { apiKey: other.secret });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'insufficient_scope');
      assert.match(refused.body.error, /messages:read/);
      const sendRefused = await t.request('POST', '/api/v2/test/send', { apiKey: reader.secret });
      assert.equal(sendRefused.status, 403);
    });
  });
});

describe('test keys in production', () => {
  test('production issues sk_live_ keys and refuses sk_test_ keys with 401', async () => {
    const database = await freshDatabase();
    const dev = await startTestApp({ database });
    const prod = await startTestApp({ database, config: { appEnv: 'production' } });
    try {
      const org = await createOrganization(dev);
      const testKey = await issueKey(dev, org.id);
      assert.equal((await dev.request('GET', '/api/v2/me', { apiKey: testKey.secret })).status, 200);
      const refused = await prod.request('GET', '/api/v2/me', { apiKey: testKey.secret });
      expectInline401(refused);
      assert.match(refused.body.error, /sk_test_/);

      const liveKey = await prod.ctx.apiKeys.create(org.id, { name: 'live', scopes: ['*'] });
      assert.match(liveKey.secret, /^sk_live_/);
      assert.equal((await prod.request('GET', '/api/v2/me', { apiKey: liveKey.secret })).status, 200);
    } finally {
      await prod.close();
      await dev.close();
      await database.drop();
    }
  });
});

describe('revocation across instances', () => {
  test('a key revoked on one instance is refused by the next request to another', async () => {
    const database = await freshDatabase();
    const first = await startTestApp({ database });
    const second = await startTestApp({ database });
    try {
      const org = await createOrganization(first);
      const { secret, key } = await issueKey(first, org.id);
      assert.equal((await second.request('GET', '/api/v2/me', { apiKey: secret })).status, 200);
      await first.ctx.apiKeys.revoke(org.id, key.id);
      expectInline401(await second.request('GET', '/api/v2/me', { apiKey: secret }));
    } finally {
      await second.close();
      await first.close();
      await database.drop();
    }
  });
});

describe('request rate limits', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ extend: scopedRoutes });
  });
  after(() => t.close());

  async function hit(path: string, apiKey: string, times: number, method = 'GET') {
    const results = [];
    for (let i = 0; i < times; i++) results.push(await t.request(method, path, { apiKey }));
    return results;
  }

  test('messaging product on pro: 60 per minute per organization, shared by its keys, with Retry-After', async () => {
    await alignClock(t, 60);
    const org = await createOrganization(t, { plan: 'pro' });
    const a = await issueKey(t, org.id);
    const b = await issueKey(t, org.id);
    const first = await hit('/api/v2/test/read-messages', a.secret, 30);
    assert.ok(first.every((r) => r.status === 200));
    assert.equal(first[0]!.headers.get('ratelimit-limit'), '60');
    assert.equal(first[0]!.headers.get('ratelimit-remaining'), '59');
    const reset = Number(first[0]!.headers.get('ratelimit-reset'));
    assert.ok(reset >= 1 && reset <= 60);
    const second = await hit('/api/v2/test/read-messages', b.secret, 30);
    assert.ok(second.every((r) => r.status === 200));
    assert.equal(second[29]!.headers.get('ratelimit-remaining'), '0');

    const refused = await t.request('GET', '/api/v2/test/read-messages', { apiKey: a.secret });
    assert.equal(refused.status, 429);
    assert.ok(isShapeB(refused.body));
    assert.equal(refused.body.code, 'RATE_LIMITED');
    assert.equal(refused.headers.get('ratelimit-limit'), '60');
    assert.equal(refused.headers.get('ratelimit-remaining'), '0');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60);
    assert.equal(refused.headers.get('ratelimit-reset'), String(retryAfter));

    // Another organization is not affected.
    const other = await createOrganization(t, { plan: 'pro' });
    const otherKey = await issueKey(t, other.id);
    assert.equal(
      (await t.request('GET', '/api/v2/test/read-messages', { apiKey: otherKey.secret })).status,
      200,
    );

    // The window ends by the server clock.
    t.ctx.clock.advance(retryAfter);
    const again = await t.request('GET', '/api/v2/test/read-messages', { apiKey: a.secret });
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('ratelimit-remaining'), '59');
  });

  test('messaging product on ultra: 300 per minute', async () => {
    await alignClock(t, 60);
    const org = await createOrganization(t, { plan: 'ultra' });
    const { secret } = await issueKey(t, org.id);
    const results = await hit('/api/v2/test/read-messages', secret, 301);
    assert.ok(results.slice(0, 300).every((r) => r.status === 200));
    assert.equal(results[0]!.headers.get('ratelimit-limit'), '300');
    assert.equal(results[300]!.status, 429);
  });

  test('messaging product on enterprise: unlimited, and no RateLimit headers', async () => {
    const org = await createOrganization(t, { plan: 'enterprise' });
    const { secret } = await issueKey(t, org.id);
    const results = await hit('/api/v2/test/read-messages', secret, 320);
    assert.ok(results.every((r) => r.status === 200));
    assert.equal(results[319]!.headers.get('ratelimit-limit'), null);
  });

  test('other requests: 100 per minute per key, without Retry-After', async () => {
    await alignClock(t, 60);
    const org = await createOrganization(t, { plan: 'enterprise' });
    const a = await issueKey(t, org.id);
    const b = await issueKey(t, org.id);
    const results = await hit('/api/v2/test/calls', a.secret, 101);
    assert.ok(results.slice(0, 100).every((r) => r.status === 200));
    assert.equal(results[0]!.headers.get('ratelimit-limit'), '100');
    const refused = results[100]!;
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), null);
    assert.ok(Number(refused.headers.get('ratelimit-reset')) >= 1);
    // Per key: the organization's other key still has its own allowance, and /me counts as "other".
    assert.equal((await t.request('GET', '/api/v2/test/calls', { apiKey: b.secret })).status, 200);
    assert.equal((await t.request('GET', '/api/v2/me', { apiKey: a.secret })).status, 429);
  });

  test('sends: 30 per minute per organization, even on enterprise', async () => {
    await alignClock(t, 60);
    const org = await createOrganization(t, { plan: 'enterprise' });
    const { secret } = await issueKey(t, org.id);
    const results = await hit('/api/v2/test/send', secret, 31, 'POST');
    assert.ok(results.slice(0, 30).every((r) => r.status === 200));
    assert.equal(results[29]!.headers.get('ratelimit-limit'), '30');
    const refused = results[30]!;
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    // Reading is not a send.
    assert.equal((await t.request('GET', '/api/v2/test/read-messages', { apiKey: secret })).status, 200);
  });

  test('refusals before the limit do not need the limit: an unauthenticated flood is 401, not 429', async () => {
    const results = await hit('/api/v2/test/read-messages', 'sk_test_nope', 5);
    assert.ok(results.every((r) => r.status === 401));
  });
});

describe('rate-limit counters in Redis', () => {
  const redisUrl = process.env.TEST_REDIS_URL;

  test('two instances share one limit through Redis', {
    skip: !redisUrl && 'set TEST_REDIS_URL to run',
  }, async () => {
    const database = await freshDatabase();
    const first = await startTestApp({ database, config: { redisUrl }, extend: scopedRoutes });
    const second = await startTestApp({ database, config: { redisUrl }, extend: scopedRoutes });
    try {
      const org = await createOrganization(first, { plan: 'pro' });
      const { secret } = await issueKey(first, org.id);
      // Both instances at the start of one minute window, so the 70 requests cannot straddle two.
      const start = new Date(Math.ceil(first.ctx.clock.nowMs() / 60_000) * 60_000 + 1000);
      first.ctx.clock.set(start);
      second.ctx.clock.set(start);
      let allowed = 0;
      let refused = 0;
      for (let i = 0; i < 70; i++) {
        const instance = i % 2 === 0 ? first : second;
        const res = await instance.request('GET', '/api/v2/test/read-messages', { apiKey: secret });
        if (res.status === 200) allowed++;
        else if (res.status === 429) refused++;
      }
      assert.equal(allowed, 60);
      assert.equal(refused, 10);
      // The counting happened in Redis, not in each instance's fallback.
      const { Redis } = await import('ioredis');
      const redis = new Redis(redisUrl!);
      try {
        const keys = await redis.keys(`rl:api-messaging-pro:${org.id}:*`);
        assert.equal(keys.length, 1);
        assert.equal(Number(await redis.get(keys[0]!)), 70);
      } finally {
        redis.disconnect();
      }
    } finally {
      await second.close();
      await first.close();
      await database.drop();
    }
  });

  test('with Redis unreachable, requests are served and each instance still enforces the limit', async () => {
    const t = await startTestApp({ config: { redisUrl: 'redis://127.0.0.1:1' }, extend: scopedRoutes });
    try {
      const org = await createOrganization(t, { plan: 'pro' });
      const { secret } = await issueKey(t, org.id);
      await alignClock(t, 60);
      const statuses: number[] = [];
      for (let i = 0; i < 61; i++) {
        statuses.push((await t.request('GET', '/api/v2/test/read-messages', { apiKey: secret })).status);
      }
      assert.ok(statuses.slice(0, 60).every((s) => s === 200));
      assert.equal(statuses[60], 429);
    } finally {
      await t.close();
    }
  });
});
