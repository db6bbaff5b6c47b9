// Phone numbers on the developer API and the portal (CONTRACT sections 7 and 9) over a real socket: search the
// simulated carrier's deterministic inventory, buy (with the billing rules), name and route, release; every
// refusal with its status and code and nothing changed; scopes, the voice product, and other organizations.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { inStock } from '../src/carriers/simulated-inventory.ts';
import { isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, freshNumber, type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

describe('phone numbers', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  /** A paid organization with no number yet. */
  const buyer = (fields: Record<string, unknown> = {}, scopes?: string[]) =>
    sender(t, fields, { number: null, scopes });
  const available = async (who: Sender, query: string) => {
    const res = await api(who, 'GET', `/numbers/available?${query}`);
    assert.equal(res.status, 200, res.text);
    return res.body.data as { number: string; type: string; country: string; areaCode: string }[];
  };

  test('search: deterministic, by area code, digits, type and country; what is owned is left out', async () => {
    const org = await buyer();
    const first = await available(org, 'areaCode=415');
    assert.equal(first.length, 20);
    assert.deepEqual(await available(org, 'areaCode=415'), first);
    for (const found of first) {
      assert.match(found.number, /^\+1415[2-9]\d{6}$/);
      assert.equal(found.type, 'local');
      assert.equal(found.country, 'US');
      assert.equal(found.areaCode, '415');
      assert.ok(inStock(found.number));
    }
    assert.equal(new Set(first.map((found) => found.number)).size, 20);

    const digits = await available(org, 'areaCode=212&contains=77&limit=5');
    assert.equal(digits.length, 5);
    assert.ok(digits.every((found) => found.number.slice(2).includes('77') && found.areaCode === '212'));

    const tollFree = await available(org, 'type=toll_free&limit=10');
    assert.ok(
      tollFree.every(
        (found) => found.type === 'toll_free' && /^\+18(00|33|44|55|66|77|88)/.test(found.number),
      ),
    );
    const canada = await available(org, 'country=CA&areaCode=416&limit=3');
    assert.ok(canada.every((found) => found.type === 'ca_local' && found.country === 'CA'));

    // Bought by someone: no longer offered.
    const other = await buyer();
    assert.equal((await api(other, 'POST', '/numbers', { number: first[0]!.number })).status, 201);
    const again = await available(org, 'areaCode=415');
    assert.ok(!again.some((found) => found.number === first[0]!.number));
    assert.equal(again.length, 20);

    for (const query of [
      'country=US&areaCode=416',
      'country=CA&areaCode=415',
      'type=toll_free&areaCode=415',
      'type=toll_free&country=CA',
      'areaCode=15',
      'areaCode=123',
      'contains=12a',
      'limit=51',
      'limit=0',
      'type=mobile',
      'country=GB',
    ]) {
      const res = await api(org, 'GET', `/numbers/available?${query}`);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.ok(isShapeB(res.body));
    }
  });

  test('buy: 201 with the type the carrier says; the first is the default sender and it sends SMS', async () => {
    const org = await buyer();
    const [local, second] = await available(org, 'areaCode=312&limit=2');
    const bought = await api(org, 'POST', '/numbers', { number: local!.number, friendlyName: 'Front desk' });
    assert.equal(bought.status, 201, bought.text);
    assert.equal(bought.body.data.number, local!.number);
    assert.equal(bought.body.data.type, 'local');
    assert.equal(bought.body.data.isDefault, true);
    assert.equal(bought.body.data.friendlyName, 'Front desk');
    assert.equal(bought.body.data.voiceRoute, null);
    assert.match(bought.body.data.id, /^num_/);

    // Written as a national number, in the organization's region.
    const national = second!.number.replace(/^\+1(\d{3})(\d{3})(\d{4})$/, '($1) $2-$3');
    const another = await api(org, 'POST', '/numbers', { number: national });
    assert.equal(another.status, 201, another.text);
    assert.equal(another.body.data.isDefault, false);

    const [tollFree] = await available(org, 'type=toll_free&limit=1');
    const free = await api(org, 'POST', '/numbers', { number: tollFree!.number });
    assert.equal(free.body.data.type, 'toll_free');

    const sent = await t.request('POST', '/api/v2/messages/send', {
      apiKey: org.key,
      body: { to: freshNumber(), message: 'From a bought number', from: tollFree!.number },
    });
    assert.equal(sent.status, 202, sent.text);

    const list = await api(org, 'GET', '/numbers?limit=2');
    assert.equal(list.status, 200);
    assert.equal(list.body.pagination.total, 3);
    assert.equal(list.body.data.length, 2);
    assert.equal(list.body.data[0].number, tollFree!.number);
    const one = await api(org, 'GET', `/numbers/${bought.body.data.id}`);
    assert.equal(one.body.data.friendlyName, 'Front desk');
  });

  test('buy refusals: unavailable 409, not a number 400, billing 402; nothing is bought', async () => {
    const org = await buyer();
    const [found] = await available(org, 'areaCode=617&limit=1');
    assert.equal((await api(org, 'POST', '/numbers', { number: found!.number })).status, 201);
    const twice = await api(org, 'POST', '/numbers', { number: found!.number });
    assert.equal(twice.status, 409);
    assert.equal(twice.body.code, 'NUMBER_UNAVAILABLE');
    const rival = await buyer();
    const taken = await api(rival, 'POST', '/numbers', { number: found!.number });
    assert.equal(taken.status, 409);
    assert.equal(taken.body.code, 'NUMBER_UNAVAILABLE');

    // A number the carrier does not have in stock, and one it does not sell (fictional 555, outside NANP).
    let outOfStock = '';
    for (let line = 1000; !outOfStock; line++) {
      const candidate = `+1617200${line}`;
      if (!inStock(candidate)) outOfStock = candidate;
    }
    for (const number of [outOfStock, '+16175550123', '+442071838750']) {
      const res = await api(rival, 'POST', '/numbers', { number });
      assert.equal(res.status, 409, `${number}: ${res.text}`);
      assert.equal(res.body.code, 'NUMBER_UNAVAILABLE');
    }
    for (const body of [
      { number: 'call me' },
      {},
      { number: found!.number, extra: 1 },
      { number: '+1', friendlyName: '' },
    ]) {
      const res = await api(rival, 'POST', '/numbers', body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    }
    assert.equal(await countRows(t, 'SELECT 1 FROM phone_numbers WHERE organization_id = $1', [rival.id]), 0);

    const trial = await buyer({ subscriptionState: 'trial' });
    const [a, b] = await available(trial, 'areaCode=305&limit=2');
    assert.equal((await api(trial, 'POST', '/numbers', { number: a!.number })).status, 201);
    const secondInTrial = await api(trial, 'POST', '/numbers', { number: b!.number });
    assert.equal(secondInTrial.status, 402, secondInTrial.text);
    assert.equal(secondInTrial.body.code, 'BILLING_REQUIRED');
    const pastDue = await buyer({ subscriptionState: 'past_due' });
    const late = await api(pastDue, 'POST', '/numbers', { number: b!.number });
    assert.equal(late.status, 402);
    assert.equal(late.body.code, 'BILLING_REQUIRED');
    assert.equal(await countRows(t, 'SELECT 1 FROM phone_numbers WHERE number = $1', [b!.number]), 0);
  });

  test('name and route: forward to a number, clear; unknown extension or agent 400; other organization 404', async () => {
    const org = await buyer();
    const [found] = await available(org, 'areaCode=206&limit=1');
    const id = (await api(org, 'POST', '/numbers', { number: found!.number })).body.data.id as string;
    const forward = await api(org, 'PATCH', `/numbers/${id}`, {
      friendlyName: 'Sales',
      voiceRoute: { type: 'forward', target: '(415) 555-0100' },
    });
    assert.equal(forward.status, 200, forward.text);
    assert.equal(forward.body.data.friendlyName, 'Sales');
    assert.deepEqual(forward.body.data.voiceRoute, { type: 'forward', target: '+14155550100' });

    for (const body of [
      {},
      { voiceRoute: { type: 'forward', target: 'nowhere' } },
      { voiceRoute: { type: 'forward', target: found!.number } },
      { voiceRoute: { type: 'extension', target: 'ext_missing' } },
      { voiceRoute: { type: 'voicemail', target: 'ext_missing' } },
      { voiceRoute: { type: 'agent', target: 'agt_missing' } },
      { voiceRoute: { type: 'fax', target: 'x' } },
      { voiceRoute: { type: 'forward' } },
      { friendlyName: 'x'.repeat(65) },
    ]) {
      const res = await api(org, 'PATCH', `/numbers/${id}`, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    }
    const unchanged = await api(org, 'GET', `/numbers/${id}`);
    assert.deepEqual(unchanged.body.data.voiceRoute, { type: 'forward', target: '+14155550100' });

    const cleared = await api(org, 'PATCH', `/numbers/${id}`, { voiceRoute: null, friendlyName: null });
    assert.equal(cleared.body.data.voiceRoute, null);
    assert.equal(cleared.body.data.friendlyName, null);

    const stranger = await buyer();
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { friendlyName: 'Mine' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await api(stranger, method, `/numbers/${id}`, body);
      assert.equal(res.status, 404, `${method}: ${res.text}`);
    }
    assert.equal((await api(org, 'GET', `/numbers/${id}`)).status, 200);
  });

  test('release: gone from the list, the next oldest becomes the default, history stays', async () => {
    const org = await buyer();
    const [a, b] = await available(org, 'areaCode=702&limit=2');
    const first = (await api(org, 'POST', '/numbers', { number: a!.number })).body.data;
    const second = (await api(org, 'POST', '/numbers', { number: b!.number })).body.data;
    const sent = await api(org, 'POST', '/messages/send', { to: freshNumber(), message: 'hi' });
    assert.equal(sent.status, 202);
    const released = await api(org, 'DELETE', `/numbers/${first.id}`);
    assert.equal(released.status, 200, released.text);
    assert.deepEqual(released.body.data, { id: first.id, released: true });
    assert.equal((await api(org, 'GET', `/numbers/${first.id}`)).status, 404);
    assert.equal((await api(org, 'DELETE', `/numbers/${first.id}`)).status, 404);
    const list = await api(org, 'GET', '/numbers');
    assert.deepEqual(
      list.body.data.map((n: { id: string; isDefault: boolean }) => [n.id, n.isDefault]),
      [[second.id, true]],
    );
    assert.equal(await countRows(t, 'SELECT 1 FROM messages WHERE from_number = $1', [a!.number]), 1);
    // Back at the carrier: another organization may buy it.
    const next = await buyer();
    assert.equal((await api(next, 'POST', '/numbers', { number: a!.number })).status, 201);
  });

  test('scopes, the voice product, and the portal: members read, owners and admins buy', async () => {
    const reader = await buyer({}, ['numbers:read']);
    const [found] = await available(reader, 'areaCode=404&limit=1');
    const refused = await api(reader, 'POST', '/numbers', { number: found!.number });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'insufficient_scope');
    const noScope = await buyer({}, ['messages:send']);
    assert.equal((await api(noScope, 'GET', '/numbers')).status, 403);

    const messagingOnly = await buyer({ products: ['messaging'] });
    const noVoice = await api(messagingOnly, 'GET', '/numbers/available');
    assert.equal(noVoice.status, 402);
    assert.equal(noVoice.body.code, 'SUBSCRIPTION_REQUIRED');
    assert.deepEqual(noVoice.body.data, { product: 'voice' });

    const org = await buyer();
    const member = await signIn(t, await createUser(t, { role: 'member', organizationIds: [org.id] }));
    const owner = await signIn(t, await createUser(t, { role: 'owner', organizationIds: [org.id] }));
    const search = await t.request('GET', '/v2/portal/numbers/available?areaCode=404&limit=1', {
      token: member,
    });
    assert.equal(search.status, 200, search.text);
    const number = search.body.data[0].number as string;
    const memberBuys = await t.request('POST', '/v2/portal/numbers', { token: member, body: { number } });
    assert.equal(memberBuys.status, 403);
    assert.ok(isShapeA(memberBuys.body));
    const ownerBuys = await t.request('POST', '/v2/portal/numbers', { token: owner, body: { number } });
    assert.equal(ownerBuys.status, 201, ownerBuys.text);
    const listed = await t.request('GET', '/v2/portal/numbers', { token: member });
    assert.equal(listed.body.data[0].number, number);
  });
});
