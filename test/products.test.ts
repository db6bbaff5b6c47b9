// Products and account state (CONTRACT section 7) over a real socket: an endpoint of a product the organization
// does not have answers 402 SUBSCRIPTION_REQUIRED with data.product in either error shape, and changes
// nothing; a suspended organization's developer-API and portal requests answer 403 ACCOUNT_SUSPENDED (sign-in,
// me and logout excepted) and its campaigns pause; the operator sets both, and refuses what is not a product.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, freshNumber, type Sender, sender } from './helpers/messaging.ts';
import { createUser, PASSWORD, signIn } from './helpers/portal.ts';

describe('products and account state', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const setOrganization = async (id: string, fields: Record<string, unknown>) => {
    const res = await t.admin('PATCH', `/organizations/${id}`, fields);
    assert.equal(res.status, 200, res.text);
    return res.body.data;
  };

  test('a new organization has every product and is not suspended; the operator changes both', async () => {
    const org = await sender(t);
    const read = await t.admin('GET', `/organizations/${org.id}`);
    assert.deepEqual(read.body.data.products, ['messaging', 'voice', 'agents']);
    assert.equal(read.body.data.suspended, false);
    const changed = await setOrganization(org.id, { products: ['voice'], suspended: true });
    assert.deepEqual(changed.products, ['voice']);
    assert.equal(changed.suspended, true);

    for (const bad of [
      { products: ['fax'] },
      { products: ['voice', 'voice'] },
      { products: 'voice' },
      { suspended: 'yes' },
    ]) {
      const res = await t.admin('PATCH', `/organizations/${org.id}`, bad);
      assert.equal(res.status, 400, `${JSON.stringify(bad)}: ${res.text}`);
      assert.ok(isShapeA(res.body));
    }
    const unchanged = await t.admin('GET', `/organizations/${org.id}`);
    assert.deepEqual(unchanged.body.data.products, ['voice']);
    assert.equal(unchanged.body.data.suspended, true);

    const created = await t.admin('POST', '/organizations', { name: 'Voice only', products: [] });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.data.products, []);
  });

  test('without messaging: 402 SUBSCRIPTION_REQUIRED with data.product on both interfaces, nothing sent', async () => {
    const org = await sender(t);
    await setOrganization(org.id, { products: ['voice', 'agents'] });
    const send = await api(org, 'POST', '/messages/send', { to: freshNumber(), message: 'Hello' });
    assert.equal(send.status, 402, send.text);
    assert.ok(isShapeB(send.body));
    assert.equal(send.body.code, 'SUBSCRIPTION_REQUIRED');
    assert.deepEqual(send.body.data, { product: 'messaging' });
    assert.equal(await countRows(t, 'SELECT 1 FROM messages WHERE organization_id = $1', [org.id]), 0);
    for (const path of ['/messages', '/campaigns']) {
      const res = await api(org, 'GET', path);
      assert.equal(res.status, 402, `${path}: ${res.text}`);
      assert.deepEqual(res.body.data, { product: 'messaging' });
    }
    // Contacts belong to the account, not to one product.
    assert.equal((await api(org, 'GET', '/contacts')).status, 200);

    const user = await createUser(t, { organizationIds: [org.id] });
    const token = await signIn(t, user);
    const portal = await t.request('GET', '/v2/portal/messages', { token });
    assert.equal(portal.status, 402, portal.text);
    assert.ok(isShapeA(portal.body));
    assert.equal(portal.body.code, 'SUBSCRIPTION_REQUIRED');
    assert.deepEqual(portal.body.data, { product: 'messaging' });

    await setOrganization(org.id, { products: ['messaging'] });
    const again = await api(org, 'POST', '/messages/send', { to: freshNumber(), message: 'Hello' });
    assert.equal(again.status, 202, again.text);
  });

  test('suspended: 403 ACCOUNT_SUSPENDED on the developer API and the portal, except sign-in, me and logout', async () => {
    const org = await sender(t);
    const user = await createUser(t, { organizationIds: [org.id] });
    const token = await signIn(t, user);
    await setOrganization(org.id, { suspended: true });

    for (const [method, path, body] of [
      ['GET', '/messages', undefined],
      ['POST', '/messages/send', { to: freshNumber(), message: 'Hello' }],
      ['GET', '/contacts', undefined],
      ['GET', '/contact-lists', undefined],
    ] as const) {
      const res = await api(org, method, path, body);
      assert.equal(res.status, 403, `${path}: ${res.text}`);
      assert.ok(isShapeB(res.body));
      assert.equal(res.body.code, 'ACCOUNT_SUSPENDED');
    }
    assert.equal(await countRows(t, 'SELECT 1 FROM messages WHERE organization_id = $1', [org.id]), 0);

    const contacts = await t.request('GET', '/v2/portal/contacts', { token });
    assert.equal(contacts.status, 403, contacts.text);
    assert.ok(isShapeA(contacts.body));
    assert.equal(contacts.body.code, 'ACCOUNT_SUSPENDED');
    const keys = await t.request('GET', '/api/api-keys', { token });
    assert.equal(keys.status, 403, keys.text);
    assert.equal(keys.body.code, 'ACCOUNT_SUSPENDED');

    const me = await t.request('GET', '/v2/portal/auth/me', { token });
    assert.equal(me.status, 200, me.text);
    const again = await signIn(t, { email: user.email, password: PASSWORD });
    assert.ok(again);
    const out = await t.request('POST', '/v2/portal/auth/logout', { token: again });
    assert.ok(out.status < 300, out.text);

    await setOrganization(org.id, { suspended: false });
    assert.equal((await api(org, 'GET', '/messages')).status, 200);
    assert.equal((await t.request('GET', '/v2/portal/contacts', { token })).status, 200);
  });

  test("suspension pauses a sending campaign with pausedReason ACCOUNT_SUSPENDED; its queued messages don't leave", async () => {
    t.ctx.clock.set(new Date('2026-11-24T17:00:00.000Z'));
    const org = await sender(t, {}, { type: 'toll_free' });
    const list = await api(org, 'POST', '/contact-lists', { name: 'Everyone' });
    const phones = Array.from({ length: 30 }, () => freshNumber());
    await api(org, 'POST', '/contacts/import', { contacts: phones.map((phone) => ({ phone })) });
    const ids = await t.ctx.db.query<{ id: string }>(
      'SELECT id FROM contacts WHERE organization_id = $1 AND phone = ANY($2::text[])',
      [org.id, phones],
    );
    await api(org, 'POST', `/contact-lists/${list.body.data.id}/members`, {
      contactIds: ids.map((row) => row.id),
    });
    const created = await api(org, 'POST', '/campaigns', {
      name: 'Sale',
      message: 'Sale today',
      contactListIds: [list.body.data.id],
    });
    const id = created.body.data.id as string;
    assert.equal((await api(org, 'POST', `/campaigns/${id}/launch`)).status, 200);
    await t.ctx.jobs.drain();
    await setOrganization(org.id, { suspended: true });
    for (let i = 0; i < 15; i++) {
      t.ctx.clock.advance(1);
      await t.ctx.jobs.drain();
    }
    const [campaign] = await t.ctx.db.query<{ status: string; paused_reason: string | null }>(
      'SELECT status, paused_reason FROM campaigns WHERE id = $1',
      [id],
    );
    assert.equal(campaign!.status, 'paused');
    assert.equal(campaign!.paused_reason, 'ACCOUNT_SUSPENDED');
    const statuses = await t.ctx.db.query<{ status: string; error_code: string | null; n: number }>(
      `SELECT status, error_code, count(*)::int AS n FROM messages WHERE campaign_id = $1
        GROUP BY status, error_code`,
      [id],
    );
    const left = statuses.filter((row) => row.status !== 'cancelled' && row.status !== 'queued');
    // Only what was handed over before the suspension (the first second: 3 at toll-free pace) left.
    assert.ok(left.reduce((sum, row) => sum + row.n, 0) <= 3, JSON.stringify(statuses));
    for (const row of statuses.filter((row) => row.status === 'cancelled')) {
      assert.equal(row.error_code, 'ACCOUNT_SUSPENDED');
    }

    // Resuming while suspended is refused; after the suspension is lifted it goes on and completes.
    const refused = await api(org, 'POST', `/campaigns/${id}/resume`);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'ACCOUNT_SUSPENDED');
    await setOrganization(org.id, { suspended: false });
    assert.equal((await api(org, 'POST', `/campaigns/${id}/resume`)).status, 200);
    for (let i = 0; i < 30; i++) {
      t.ctx.clock.advance(1);
      await t.ctx.jobs.drain();
    }
    const done = await api(org, 'GET', `/campaigns/${id}`);
    assert.equal(done.body.data.status, 'completed', done.text);
  });
});
