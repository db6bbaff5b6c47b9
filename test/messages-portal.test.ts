// The portal twin of messaging (`/v2/portal/messages…`, session token, Shape A): the console sends, counts
// and reads through the same service as the developer API, shares the organization's 30 sends per minute
// with it, and never accepts an API key.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, send } from './helpers/messaging.ts';
import { alignClock, createUser, signIn } from './helpers/portal.ts';

describe('portal messaging', () => {
  let t: TestApp;
  let token: string;
  let organizationId: string;
  let number: string;
  let apiKey: string;
  before(async () => {
    t = await startTestApp();
    const user = await createUser(t, { role: 'member' });
    organizationId = user.organizationId;
    await t.admin('PATCH', `/organizations/${organizationId}`, {
      subscriptionState: 'paid',
      cardVerified: true,
    });
    number = freshNumber();
    await t.admin('POST', `/organizations/${organizationId}/numbers`, { number, type: 'local' });
    token = await signIn(t, user);
    apiKey = (await t.ctx.apiKeys.create(organizationId, { name: 'k', scopes: ['*'] })).secret;
  });
  after(() => t.close());

  const portal = (method: string, path: string, body?: unknown) =>
    t.request(method, `/v2/portal${path}`, { token, body });

  test('a member sends, counts segments and reads history through the portal', async () => {
    const to = freshNumber();
    const sent = await portal('POST', '/messages/send', { to, message: 'From the console' });
    assert.equal(sent.status, 202, sent.text);
    assert.equal(sent.body.data.from, number);
    assert.equal(sent.body.data.status, 'queued');
    const segments = await portal('POST', '/messages/segments', { message: '€'.repeat(81) });
    assert.deepEqual(segments.body.data, { segments: 2, encoding: 'GSM-7', characters: 81 });
    const list = await portal('GET', '/messages?limit=5&cursor=');
    assert.equal(list.status, 200);
    assert.equal(list.body.data[0].id, sent.body.data.id);
    assert.equal(list.body.pagination.total, null);
    const read = await portal('GET', `/messages/${sent.body.data.id}`);
    assert.equal(read.body.data.body, 'From the console');
    // The API sees the same message.
    const viaApi = await t.request('GET', `/api/v2/messages/${sent.body.data.id}`, { apiKey });
    assert.equal(viaApi.status, 200);
  });

  test('refusals are Shape A with their codes', async () => {
    const invalid = await portal('POST', '/messages/send', { to: 'nope', message: 'x' });
    assert.equal(invalid.status, 400);
    assert.ok(isShapeA(invalid.body));
    const merge = await portal('POST', '/messages/send', { to: freshNumber(), message: '{{nickname}}' });
    assert.equal(merge.status, 422);
    assert.equal(merge.body.code, 'UNSUPPORTED_MERGE_VARS');
    assert.ok(isShapeA(merge.body));
    const missing = await portal('GET', '/messages/msg_nope');
    assert.equal(missing.status, 404);
    assert.ok(isShapeA(missing.body));
  });

  test('no session is 401 AUTH_REQUIRED; an API key does not authenticate the portal', async () => {
    const none = await t.request('POST', '/v2/portal/messages/send', { body: { to: 'x' } });
    assert.equal(none.status, 401);
    assert.equal(none.body.code, 'AUTH_REQUIRED');
    const withKey = await t.request('GET', '/v2/portal/messages', { apiKey });
    assert.equal(withKey.status, 401);
  });

  test('the portal and the API share the organization budget of 30 sends per minute', async () => {
    // At the start of a fresh minute window: 31 sends must all fall in one (advancing 61 s could leave the
    // window's end among them on a slow machine, and the 31st would open a new budget).
    await alignClock(t, 60);
    for (let i = 0; i < 20; i++) {
      assert.equal(
        (await portal('POST', '/messages/send', { to: freshNumber(), message: `p${i}` })).status,
        202,
      );
    }
    const who = { id: organizationId, key: apiKey, number };
    for (let i = 0; i < 10; i++) {
      assert.equal((await send(t, who, { to: freshNumber(), message: `a${i}` })).status, 202);
    }
    const portalOver = await portal('POST', '/messages/send', { to: freshNumber(), message: 'over' });
    assert.equal(portalOver.status, 429);
    assert.equal(portalOver.body.code, 'RATE_LIMITED');
    assert.ok(Number(portalOver.headers.get('retry-after')) > 0);
    const apiOver = await send(t, who, { to: freshNumber(), message: 'over' });
    assert.equal(apiOver.status, 429);
    assert.equal(apiOver.body.code, 'RATE_LIMITED');
  });
});
