// The shared caches across instances (issue 38, platform/shared-cache.ts): two API instances on one database
// each cache a key's lookup (with its organization) and an organization's senders; a revoke, an organization's
// change or a new number made through one instance applies on the very next request to either, with no wait
// for a TTL. Over the database's NOTIFY (PGlite or PostgreSQL, as the suite runs), and over Redis pub/sub with
// TEST_REDIS_URL. The TTL bounds what a change made behind the services' backs (no invalidation) is served.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ENTRY_TTL_MS } from '../src/platform/shared-cache.ts';
import { freshDatabase, startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, type Sender, send, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

const transports: [string, string | undefined, string | false][] = [
  ['the database (NOTIFY)', undefined, false],
  ['Redis pub/sub', process.env.TEST_REDIS_URL, !process.env.TEST_REDIS_URL && 'set TEST_REDIS_URL to run'],
];

for (const [transport, redisUrl, skip] of transports) {
  describe(`shared caches across two instances, invalidated over ${transport}`, { skip }, () => {
    let first: TestApp;
    let second: TestApp;
    let acme: Sender;
    let ownerToken: string;

    before(async () => {
      const database = await freshDatabase();
      first = await startTestApp({ database, config: { redisUrl } });
      second = await startTestApp({ database, config: { redisUrl } });
      await Promise.all([first.ctx.caches.ready(), second.ctx.caches.ready()]);
      acme = await sender(first, { name: 'Acme' });
      ownerToken = await signIn(
        first,
        await createUser(first, { role: 'owner', organizationIds: [acme.id] }),
      );
    });
    after(async () => {
      await second?.close();
      await first?.close();
      await first?.database.drop();
    });

    const me = (app: TestApp, key: string) => app.request('GET', '/api/v2/me', { apiKey: key });

    test('a key revoked through one instance is refused on the next request to either', async () => {
      const { key, secret } = await first.ctx.apiKeys.create(acme.id, { name: 'to revoke', scopes: ['*'] });
      for (const app of [first, second, first, second]) assert.equal((await me(app, secret)).status, 200);

      const revoked = await first.request('DELETE', `/api/api-keys/${key.id}`, { token: ownerToken });
      assert.equal(revoked.status, 200);
      for (const app of [second, first]) {
        const refused = await me(app, secret);
        assert.equal(refused.status, 401);
        assert.match(refused.text, /This API key has been revoked/);
      }
    });

    test("a change to the key's organization applies on the next request to either instance", async () => {
      const { secret } = await first.ctx.apiKeys.create(acme.id, { name: 'suspended', scopes: ['*'] });
      for (const app of [first, second]) assert.equal((await me(app, secret)).status, 200);
      // The operator suspends the organization through the second instance.
      assert.equal(
        (await second.admin('PATCH', `/organizations/${acme.id}`, { suspended: true })).status,
        200,
      );
      try {
        for (const app of [first, second]) {
          const refused = await me(app, secret);
          assert.equal(refused.status, 403);
          assert.equal(refused.body.code, 'ACCOUNT_SUSPENDED');
        }
      } finally {
        await second.admin('PATCH', `/organizations/${acme.id}`, { suspended: false });
      }
      for (const app of [first, second]) assert.equal((await me(app, secret)).status, 200);
    });

    test('a number added through one instance can be sent from at once through the other', async () => {
      const body = { to: freshNumber(), message: 'hello' };
      for (const app of [first, second]) assert.equal((await send(app, acme, body)).status, 202);
      const added = freshNumber();
      const res = await first.admin('POST', `/organizations/${acme.id}/numbers`, {
        number: added,
        type: 'local',
      });
      assert.equal(res.status, 201);
      const sent = await send(second, acme, { ...body, from: added });
      assert.equal(sent.status, 202, sent.text);
      assert.equal(sent.body.data.from, added);
    });

    test('the cache is what answers, and its TTL bounds a change made without invalidation', async () => {
      const { key, secret } = await first.ctx.apiKeys.create(acme.id, { name: 'behind', scopes: ['*'] });
      assert.equal((await me(first, secret)).status, 200);
      // Revoked in SQL, as no part of the product does: nothing tells the caches.
      await first.ctx.db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
      assert.equal((await me(first, secret)).status, 200, 'served from the cache');
      first.ctx.clock.advance(ENTRY_TTL_MS / 1000 + 1);
      assert.equal((await me(first, secret)).status, 401, 'read again once its TTL ended');
    });
  });
}
