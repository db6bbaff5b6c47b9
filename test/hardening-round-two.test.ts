// Regression tests for issue 31 (hardening, round two): what a hostile client and the contract found since
// issue 11. Each describe names its finding; each failed before its fix.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { jsonDepth, MAX_JSON_DEPTH } from '../src/platform/http/json-body.ts';
import { findUnstorableText } from '../src/platform/text.ts';
import { createOrganization, isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { rawExchange, trickleRequest } from './helpers/raw-http.ts';

const nestedArrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

describe('finding 1: deeply nested JSON is a 400 on every JSON route, never a 500', () => {
  let t: TestApp;
  let apiKey: string;
  before(async () => {
    t = await startTestApp();
    const org = await createOrganization(t, { plan: 'enterprise', subscriptionState: 'paid' });
    apiKey = (await t.ctx.apiKeys.create(org.id, { name: 'deep', scopes: ['*'] })).secret;
  });
  after(() => t.close());

  async function post(path: string, raw: string, headers: Record<string, string> = {}) {
    return fetch(`${t.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: raw,
    });
  }

  for (const [name, body] of [
    ['8,000 nested arrays (32 KB)', nestedArrays(8_000)],
    ['8,000 nested objects', nestedObjects(8_000)],
    ['200,000 nested arrays', nestedArrays(200_000)],
    ['a depth just past the limit', nestedArrays(MAX_JSON_DEPTH + 1)],
  ] as const) {
    test(`${name}: the unauthenticated login, a developer route and the operator API answer 400 in their shape`, async () => {
      const login = await post('/v2/portal/auth/login', body);
      assert.equal(login.status, 400);
      const loginBody = await login.json();
      assert.ok(isShapeA(loginBody), JSON.stringify(loginBody));
      assert.match(loginBody.message, /nested deeper than 64/);
      assert.equal(login.headers.get('api-version'), '2026-09-01');

      const contacts = await post('/api/v2/contacts', body, { 'x-api-key': apiKey });
      assert.equal(contacts.status, 400);
      assert.ok(isShapeB(await contacts.json()));

      const operator = await post('/admin/v1/organizations', body, {
        authorization: `Bearer ${t.ctx.config.adminToken}`,
      });
      assert.equal(operator.status, 400);
      assert.ok(isShapeA(await operator.json()));
    });
  }

  test('a body at the limit is parsed and answered by the route (here: its validation)', async () => {
    const atLimit = `{"email":"a@example.com","password":"x","deep":${nestedArrays(MAX_JSON_DEPTH - 1)}}`;
    assert.equal(jsonDepth(atLimit), MAX_JSON_DEPTH);
    const res = await post('/v2/portal/auth/login', atLimit);
    assert.notEqual(res.status, 500);
    assert.doesNotMatch((await res.json()).message ?? '', /nested deeper/);
  });

  test('brackets inside strings do not count, escapes included', () => {
    assert.equal(jsonDepth('{"a":"[[[[\\"[[[["}'), 1);
    assert.equal(jsonDepth('[[1],[[2]]]'), 3);
    assert.equal(jsonDepth('"\\\\"'), 0);
  });

  test('the text check walks any depth without recursion (a value made in code, not parsed)', () => {
    let deep: unknown = 'a\u0000b';
    for (let level = 0; level < 100_000; level++) deep = [deep];
    assert.equal(findUnstorableText(deep, 'body'), `body${'.0'.repeat(100_000)}`);
    assert.equal(findUnstorableText({ a: { b: 'ok' }, c: ['\ud800'] }, 'body'), 'body.c.0');
  });
});

describe('finding 2: a request cut off by the timeout is refused in its interface shape', () => {
  let t: TestApp;
  let apiKey: string;
  before(async () => {
    t = await startTestApp({ config: { requestTimeoutSeconds: 1 } });
    const org = await createOrganization(t, { plan: 'enterprise', subscriptionState: 'paid' });
    apiKey = (await t.ctx.apiKeys.create(org.id, { name: 'slow', scopes: ['*'] })).secret;
  });
  after(() => t.close());

  const trickle = (path: string, headers = '') => trickleRequest(t.url, path, headers);

  test('on the developer API: 408 in Shape B with API-Version, no framework fields', async () => {
    const { head, body } = await trickle('/api/v2/contacts', `x-api-key: ${apiKey}\r\n`);
    assert.match(head, /^HTTP\/1\.1 408 /);
    assert.match(head, /\r\nAPI-Version: 2026-09-01/i);
    const parsed = JSON.parse(body);
    assert.ok(isShapeB(parsed), body);
    assert.equal(parsed.statusCode, undefined);
  });

  test('on the portal: 408 in Shape A', async () => {
    const { head, body } = await trickle('/v2/portal/auth/login');
    assert.match(head, /^HTTP\/1\.1 408 /);
    const parsed = JSON.parse(body);
    assert.ok(isShapeA(parsed), body);
  });

  test('bytes that are not HTTP get a 400 in our shape, read from the request line where there is one', async () => {
    for (const [raw, shape] of [
      ['GET /api/v2/contacts HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', isShapeB],
      ['GET /v2/portal/auth/me HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n', isShapeA],
      ['\u0001\u0002 garbage\r\n\r\n', isShapeA],
    ] as const) {
      const { head, body } = await rawExchange(t.url, raw);
      assert.match(head, /^HTTP\/1\.1 400 /, JSON.stringify(raw));
      assert.ok(shape(JSON.parse(body)), body);
    }
  });
});

describe('finding 5: a campaign created without senders shows the default number', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('create, read and list show the default sender; given senders stay as given', async () => {
    const org = await createOrganization(t, {
      plan: 'enterprise',
      subscriptionState: 'paid',
      cardVerified: true,
    });
    const apiKey = (await t.ctx.apiKeys.create(org.id, { name: 'c', scopes: ['*'] })).secret;
    const api = (method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey, body });
    const list = (await api('POST', '/contact-lists', { name: 'All' })).body.data.id as string;
    // No number yet: nothing to show, and the launch takes the default it has by then.
    const early = await api('POST', '/campaigns', { name: 'Early', message: 'Hi', contactListIds: [list] });
    assert.equal(early.status, 201, early.text);
    assert.deepEqual(early.body.data.senders, []);
    for (const number of ['+12025550141', '+12025550142']) {
      assert.equal(
        (await t.admin('POST', `/organizations/${org.id}/numbers`, { number, type: 'local' })).status,
        201,
      );
    }
    const created = await api('POST', '/campaigns', { name: 'Promo', message: 'Hi', contactListIds: [list] });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.data.senders, ['+12025550141'], 'the first number is the default');
    const id = created.body.data.id as string;
    assert.deepEqual((await api('GET', `/campaigns/${id}`)).body.data.senders, ['+12025550141']);
    const listed = (await api('GET', '/campaigns')).body.data.find((row: { id: string }) => row.id === id);
    assert.deepEqual(listed.senders, ['+12025550141']);
    // An edit that does not name senders keeps them.
    const renamed = await api('PATCH', `/campaigns/${id}`, { name: 'Promo 2' });
    assert.deepEqual(renamed.body.data.senders, ['+12025550141']);
    const given = await api('POST', '/campaigns', {
      name: 'Second line',
      message: 'Hi',
      contactListIds: [list],
      senders: ['+12025550142'],
    });
    assert.deepEqual(given.body.data.senders, ['+12025550142']);
  });
});
