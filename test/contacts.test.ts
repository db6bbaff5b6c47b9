// Contacts on the developer API (issue: contacts, contact lists, CSV import, consent and opt-out): create,
// read, update, delete and list them; one per phone; opt-out and opt-in with the STOP reason rule and the
// consent history; lists and their members; and another organization's ids answering 404 everywhere.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOrganization, isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';

interface Tenant {
  id: string;
  key: string;
}

async function tenant(
  t: TestApp,
  fields: Record<string, unknown> = {},
  scopes: any[] = ['*'],
): Promise<Tenant> {
  const org = await createOrganization(t, fields);
  const { secret } = await t.ctx.apiKeys.create(org.id, { name: 'k', scopes });
  return { id: org.id, key: secret };
}

describe('contacts', () => {
  let t: TestApp;
  let acme: Tenant;
  let other: Tenant;
  before(async () => {
    t = await startTestApp();
    acme = await tenant(t);
    other = await tenant(t);
  });
  after(() => t.close());

  const api = (who: Tenant, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });

  test('create normalises the phone to E.164 in the organization region, and reads back', async () => {
    const res = await api(acme, 'POST', '/contacts', {
      phone: '(202) 555-0101',
      firstName: 'Ada',
      lastName: 'Lovelace',
      email: 'ada@example.com',
      company: 'Analytical',
      customFields: { tier: 'gold', visits: 3 },
      consent: { status: 'granted', date: '2026-01-15', method: 'web_form' },
    });
    assert.equal(res.status, 201);
    const contact = res.body.data;
    assert.match(contact.id, /^ct_/);
    assert.equal(contact.phone, '+12025550101');
    assert.equal(contact.fullName, 'Ada Lovelace');
    assert.deepEqual(contact.customFields, { tier: 'gold', visits: 3 });
    assert.deepEqual(contact.consent, {
      status: 'granted',
      date: '2026-01-15T00:00:00.000Z',
      method: 'web_form',
    });
    assert.equal(contact.optedOut, false);
    const read = await api(acme, 'GET', `/contacts/${contact.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body.data, contact);
  });

  test('a Canadian organization reads a national number as Canadian', async () => {
    const ca = await tenant(t, { region: 'ca' });
    const res = await api(ca, 'POST', '/contacts', { phone: '416 555 0199' });
    assert.equal(res.status, 201);
    assert.equal(res.body.data.phone, '+14165550199');
  });

  test('one contact per phone per organization: a duplicate is 409, another organization may have it', async () => {
    assert.equal((await api(acme, 'POST', '/contacts', { phone: '+12025550102' })).status, 201);
    const dup = await api(acme, 'POST', '/contacts', { phone: '202-555-0102' });
    assert.equal(dup.status, 409);
    assert.ok(isShapeB(dup.body));
    assert.equal(dup.body.code, 'CONTACT_EXISTS');
    assert.equal((await api(other, 'POST', '/contacts', { phone: '+12025550102' })).status, 201);
  });

  test('refusals change nothing: invalid phone, unknown field, bad consent, future consent date', async () => {
    const before = await api(acme, 'GET', '/contacts?limit=1');
    for (const body of [
      { phone: '12' },
      { phone: 'not a number' },
      {},
      { phone: '+12025550103', nickname: 'x' },
      { phone: '+12025550103', consent: { status: 'maybe' } },
      { phone: '+12025550103', consent: { status: 'granted', method: 'telepathy' } },
      { phone: '+12025550103', consent: { status: 'granted', date: 'yesterday-ish' } },
      { phone: '+12025550103', consent: { status: 'granted', date: '2999-01-01' } },
      { phone: '+12025550103', email: 'not-an-email' },
    ]) {
      const res = await api(acme, 'POST', '/contacts', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.ok(isShapeB(res.body));
    }
    const afterList = await api(acme, 'GET', '/contacts?limit=1');
    assert.equal(afterList.body.pagination.total, before.body.pagination.total);
  });

  test('PATCH changes the given fields; a phone taken by another contact is 409', async () => {
    const a = (await api(acme, 'POST', '/contacts', { phone: '+12025550104', firstName: 'A' })).body.data;
    await api(acme, 'POST', '/contacts', { phone: '+12025550105' });
    const res = await api(acme, 'PATCH', `/contacts/${a.id}`, { lastName: 'Bee', company: null });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.firstName, 'A');
    assert.equal(res.body.data.lastName, 'Bee');
    const taken = await api(acme, 'PATCH', `/contacts/${a.id}`, { phone: '+12025550105' });
    assert.equal(taken.status, 409);
    assert.equal((await api(acme, 'PATCH', `/contacts/${a.id}`, {})).status, 400);
    assert.equal(
      (await api(acme, 'PATCH', `/contacts/${a.id}`, { optedOut: false })).status,
      400,
      'opt-out is not patchable',
    );
  });

  describe('timezone', () => {
    /** How Node's Intl spells a zone back: what the API stores for it. */
    const canonical = (name: string) =>
      new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;

    test('set on create and stored as Intl spells it; PATCH changes it, keeps it, and null clears it', async () => {
      const bare = await api(acme, 'POST', '/contacts', { phone: '+12025550301' });
      assert.equal(bare.status, 201);
      assert.equal(bare.body.data.timezone, null, 'no time zone unless one is given');

      const created = await api(acme, 'POST', '/contacts', {
        phone: '+12025550302',
        firstName: 'Zoe',
        timezone: 'america/new_york',
      });
      assert.equal(created.status, 201);
      const contact = created.body.data;
      assert.equal(contact.timezone, 'America/New_York', 'canonical spelling, whatever the case written');
      assert.equal(
        (await api(acme, 'GET', `/contacts/${contact.id}`)).body.data.timezone,
        'America/New_York',
      );
      const listed = await api(acme, 'GET', '/contacts?search=2025550302');
      assert.equal(listed.body.data[0].timezone, 'America/New_York');

      // An alias Intl knows is accepted and stored under the name Intl gives it.
      const alias = await api(acme, 'PATCH', `/contacts/${contact.id}`, { timezone: 'US/Pacific' });
      assert.equal(alias.status, 200);
      assert.equal(alias.body.data.timezone, canonical('US/Pacific'));
      const utc = await api(acme, 'PATCH', `/contacts/${contact.id}`, { timezone: 'UTC' });
      assert.equal(utc.body.data.timezone, 'UTC');

      const paris = await api(acme, 'PATCH', `/contacts/${contact.id}`, { timezone: 'Europe/Paris' });
      assert.equal(paris.status, 200);
      assert.equal(paris.body.data.timezone, 'Europe/Paris');
      assert.equal(paris.body.data.firstName, 'Zoe');
      const other = await api(acme, 'PATCH', `/contacts/${contact.id}`, { lastName: 'Zed' });
      assert.equal(other.body.data.timezone, 'Europe/Paris', 'a PATCH without timezone keeps it');

      const cleared = await api(acme, 'PATCH', `/contacts/${contact.id}`, { timezone: null });
      assert.equal(cleared.status, 200);
      assert.equal(cleared.body.data.timezone, null);
      assert.equal((await api(acme, 'GET', `/contacts/${contact.id}`)).body.data.timezone, null);
    });

    test('an unknown time zone is 400 naming the field, and changes nothing', async () => {
      const before = await api(acme, 'GET', '/contacts?limit=1');
      for (const timezone of [
        'Mars/Olympus',
        'Eastern',
        '+05:00',
        'America/New_York ',
        '',
        'x'.repeat(65),
        5,
      ]) {
        const res = await api(acme, 'POST', '/contacts', { phone: '+12025550303', timezone });
        assert.equal(res.status, 400, JSON.stringify(timezone));
        assert.ok(isShapeB(res.body));
        assert.equal(res.body.code, undefined, 'a validation error, like an invalid e-mail');
        assert.match(res.body.error, /timezone/);
      }
      const refused = await api(acme, 'POST', '/contacts', {
        phone: '+12025550303',
        timezone: 'Mars/Olympus',
      });
      assert.equal(
        refused.body.error,
        'timezone "Mars/Olympus" is not an IANA time zone name (such as America/New_York)',
      );
      const afterList = await api(acme, 'GET', '/contacts?limit=1');
      assert.equal(afterList.body.pagination.total, before.body.pagination.total);
      assert.equal(await t.ctx.contacts.findByPhone(acme.id, '+12025550303'), undefined);

      const contact = (
        await api(acme, 'POST', '/contacts', {
          phone: '+12025550304',
          firstName: 'Kept',
          timezone: 'Asia/Tokyo',
        })
      ).body.data;
      t.ctx.clock.advance(60);
      for (const body of [{ timezone: 'Mars/Olympus' }, { firstName: 'Changed', timezone: 'Not/AZone' }]) {
        const res = await api(acme, 'PATCH', `/contacts/${contact.id}`, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.ok(isShapeB(res.body));
        assert.match(res.body.error, /^timezone /);
      }
      const unchanged = await api(acme, 'GET', `/contacts/${contact.id}`);
      assert.deepEqual(unchanged.body.data, contact, 'a refused PATCH changes no field, not even updatedAt');
    });
  });

  test('list: newest first, offset and keyset, with filters', async () => {
    const org = await tenant(t);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      ids.push(
        (await api(org, 'POST', '/contacts', { phone: `+1202555020${i}`, firstName: `N${i}` })).body.data.id,
      );
    }
    const page1 = await api(org, 'GET', '/contacts?limit=3');
    assert.deepEqual(page1.body.pagination, { page: 1, limit: 3, total: 7, totalPages: 3 });
    assert.deepEqual(
      page1.body.data.map((c: any) => c.id),
      ids.slice(-3).reverse(),
    );

    const seen: string[] = [];
    let cursor = '';
    for (;;) {
      const page = await api(org, 'GET', `/contacts?limit=3&cursor=${encodeURIComponent(cursor)}`);
      assert.equal(page.status, 200);
      assert.equal(page.body.pagination.total, null);
      seen.push(...page.body.data.map((c: any) => c.id));
      if (!page.body.next_cursor) break;
      cursor = page.body.next_cursor;
    }
    assert.deepEqual(seen, [...ids].reverse());

    const found = await api(org, 'GET', '/contacts?search=n3');
    assert.deepEqual(
      found.body.data.map((c: any) => c.firstName),
      ['N3'],
    );
    const bad = await api(org, 'GET', '/contacts?limit=101');
    assert.equal(bad.status, 400);
    assert.equal((await api(org, 'GET', '/contacts?cursor=garbage')).status, 400);
  });

  test('DELETE removes the contact; its opt-out stays with the number', async () => {
    const c = (await api(acme, 'POST', '/contacts', { phone: '+12025550106' })).body.data;
    await api(acme, 'POST', `/contacts/${c.id}/opt-out`, {});
    const del = await api(acme, 'DELETE', `/contacts/${c.id}`);
    assert.deepEqual(del.body, { success: true, data: { id: c.id, deleted: true } });
    assert.equal((await api(acme, 'GET', `/contacts/${c.id}`)).status, 404);
    const again = await api(acme, 'POST', '/contacts', { phone: '+12025550106' });
    assert.equal(again.body.data.optedOut, true, 're-creating the contact does not clear the opt-out');
  });

  describe('opt-out and opt-in', () => {
    test('opt-out through the API records method api, an event and a history entry; repeating changes nothing', async () => {
      const c = (await api(acme, 'POST', '/contacts', { phone: '+12025550107' })).body.data;
      const res = await api(acme, 'POST', `/contacts/${c.id}/opt-out`, { reason: 'asked by phone' });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.optedOut, true);
      assert.equal(res.body.data.optOutMethod, 'api');
      const firstAt = res.body.data.optedOutAt;
      t.ctx.clock.advance(60);
      const again = await api(acme, 'POST', `/contacts/${c.id}/opt-out`);
      assert.equal(again.body.data.optedOutAt, firstAt);
      const events = await t.ctx.db.query<any>(
        "SELECT type, data FROM events WHERE organization_id = $1 AND type = 'contact.opted_out' AND data->>'contactId' = $2",
        [acme.id, c.id],
      );
      assert.equal(events.length, 1);
      const history = await api(acme, 'GET', `/contacts/${c.id}/consent-history`);
      assert.deepEqual(
        history.body.data.map((e: any) => [e.action, e.method, e.reason]),
        [['opted_out', 'api', 'asked by phone']],
      );
      assert.match(history.body.data[0].actor, /^api_key:key_/);
    });

    test('opt-in of a contact who texted STOP needs a reason: without one, 400 and nothing changes', async () => {
      const c = (await api(acme, 'POST', '/contacts', { phone: '+12025550108' })).body.data;
      await t.ctx.db.transaction((tx) =>
        t.ctx.contacts.optOutPhone(tx, acme.id, c.phone, c.id, 'sms_stop', null, `sms:${c.phone}`),
      );
      for (const body of [undefined, {}, { reason: '' }, { reason: '   ' }]) {
        const res = await api(acme, 'POST', `/contacts/${c.id}/opt-in`, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.ok(isShapeB(res.body));
        assert.equal(res.body.code, 'OPT_OUT_REASON_REQUIRED');
      }
      const still = await api(acme, 'GET', `/contacts/${c.id}`);
      assert.equal(still.body.data.optedOut, true);
      assert.equal(still.body.data.optOutMethod, 'sms_stop');

      const ok = await api(acme, 'POST', `/contacts/${c.id}/opt-in`, {
        reason: 'Customer re-subscribed at the counter',
      });
      assert.equal(ok.status, 200);
      assert.equal(ok.body.data.optedOut, false);
      const history = await api(acme, 'GET', `/contacts/${c.id}/consent-history`);
      assert.deepEqual(
        history.body.data.map((e: any) => [e.action, e.reason]),
        [
          ['opted_in', 'Customer re-subscribed at the counter'],
          ['opted_out', null],
        ],
      );
      const optedIn = await t.ctx.db.query<any>(
        "SELECT 1 FROM events WHERE organization_id = $1 AND type = 'contact.opted_in' AND data->>'contactId' = $2",
        [acme.id, c.id],
      );
      assert.equal(optedIn.length, 1);
    });

    test('opt-in after a manual or API opt-out needs no reason; opt-in of a reachable contact is a no-op', async () => {
      const c = (await api(acme, 'POST', '/contacts', { phone: '+12025550109' })).body.data;
      assert.equal((await api(acme, 'POST', `/contacts/${c.id}/opt-in`)).body.data.optedOut, false);
      await api(acme, 'POST', `/contacts/${c.id}/opt-out`);
      const res = await api(acme, 'POST', `/contacts/${c.id}/opt-in`);
      assert.equal(res.status, 200);
      assert.equal(res.body.data.optedOut, false);
    });

    test('filter by optedOut', async () => {
      const org = await tenant(t);
      const a = (await api(org, 'POST', '/contacts', { phone: '+12025550301' })).body.data;
      await api(org, 'POST', '/contacts', { phone: '+12025550302' });
      await api(org, 'POST', `/contacts/${a.id}/opt-out`);
      const out = await api(org, 'GET', '/contacts?optedOut=true');
      assert.deepEqual(
        out.body.data.map((c: any) => c.id),
        [a.id],
      );
      const reachable = await api(org, 'GET', '/contacts?optedOut=false');
      assert.equal(reachable.body.data.length, 1);
    });
  });

  describe('scopes', () => {
    test('contacts:read reads but cannot write; contacts:write is needed to change', async () => {
      const org = await createOrganization(t);
      const reader = (await t.ctx.apiKeys.create(org.id, { name: 'r', scopes: ['contacts:read'] })).secret;
      const writer = (await t.ctx.apiKeys.create(org.id, { name: 'w', scopes: ['contacts:write'] })).secret;
      assert.equal((await t.request('GET', '/api/v2/contacts', { apiKey: reader })).status, 200);
      const refused = await t.request('POST', '/api/v2/contacts', {
        apiKey: reader,
        body: { phone: '+12025550401' },
      });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'insufficient_scope');
      assert.equal(
        (await t.request('POST', '/api/v2/contacts', { apiKey: writer, body: { phone: '+12025550401' } }))
          .status,
        201,
      );
      assert.equal((await t.request('GET', '/api/v2/contact-lists', { apiKey: writer })).status, 403);
    });
  });

  describe('contact lists', () => {
    test('create, rename, add and remove members, list members, delete', async () => {
      const org = await tenant(t);
      const a = (await api(org, 'POST', '/contacts', { phone: '+12025550501' })).body.data;
      const b = (await api(org, 'POST', '/contacts', { phone: '+12025550502' })).body.data;
      const created = await api(org, 'POST', '/contact-lists', {
        name: 'VIP',
        description: 'Best customers',
      });
      assert.equal(created.status, 201);
      const list = created.body.data;
      assert.match(list.id, /^cl_/);
      assert.equal(list.memberCount, 0);

      const renamed = await api(org, 'PATCH', `/contact-lists/${list.id}`, { name: 'VIPs' });
      assert.equal(renamed.body.data.name, 'VIPs');
      assert.equal(renamed.body.data.description, 'Best customers');

      const added = await api(org, 'POST', `/contact-lists/${list.id}/members`, {
        contactIds: [a.id, b.id, a.id],
      });
      assert.deepEqual(added.body.data, { added: 2 });
      const addedAgain = await api(org, 'POST', `/contact-lists/${list.id}/members`, { contactIds: [a.id] });
      assert.deepEqual(addedAgain.body.data, { added: 0 });
      assert.equal((await api(org, 'GET', `/contact-lists/${list.id}`)).body.data.memberCount, 2);

      const members = await api(org, 'GET', `/contact-lists/${list.id}/members`);
      assert.equal(members.body.pagination.total, 2);
      assert.deepEqual(new Set(members.body.data.map((m: any) => m.id)), new Set([a.id, b.id]));
      assert.ok(members.body.data[0].addedAt);

      const removed = await api(org, 'DELETE', `/contact-lists/${list.id}/members`, { contactIds: [a.id] });
      assert.deepEqual(removed.body.data, { removed: 1 });

      const lists = await api(org, 'GET', '/contact-lists');
      assert.deepEqual(
        lists.body.data.map((l: any) => l.id),
        [list.id],
      );

      assert.equal((await api(org, 'DELETE', `/contact-lists/${list.id}`)).status, 200);
      assert.equal((await api(org, 'GET', `/contact-lists/${list.id}`)).status, 404);
      assert.equal((await api(org, 'GET', `/contacts/${a.id}`)).status, 200, 'contacts outlive their list');
    });

    test('adding an unknown contact adds nothing and is 404', async () => {
      const org = await tenant(t);
      const a = (await api(org, 'POST', '/contacts', { phone: '+12025550601' })).body.data;
      const list = (await api(org, 'POST', '/contact-lists', { name: 'L' })).body.data;
      const res = await api(org, 'POST', `/contact-lists/${list.id}/members`, {
        contactIds: [a.id, 'ct_missing'],
      });
      assert.equal(res.status, 404);
      assert.match(res.body.error, /ct_missing/);
      assert.equal((await api(org, 'GET', `/contact-lists/${list.id}`)).body.data.memberCount, 0);
    });

    test('lists page by offset only: a cursor has no effect', async () => {
      const org = await tenant(t);
      for (let i = 0; i < 3; i++) await api(org, 'POST', '/contact-lists', { name: `L${i}` });
      const res = await api(org, 'GET', '/contact-lists?limit=2&cursor=whatever');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.pagination, { page: 1, limit: 2, total: 3, totalPages: 2 });
      assert.equal(res.body.next_cursor, null);
      const members = await api(org, 'GET', `/contact-lists/${res.body.data[0].id}/members?cursor=abc`);
      assert.equal(members.status, 200);
    });

    test('invalid list input is 400', async () => {
      const org = await tenant(t);
      assert.equal((await api(org, 'POST', '/contact-lists', { name: '' })).status, 400);
      assert.equal((await api(org, 'POST', '/contact-lists', {})).status, 400);
      const list = (await api(org, 'POST', '/contact-lists', { name: 'L' })).body.data;
      assert.equal(
        (await api(org, 'POST', `/contact-lists/${list.id}/members`, { contactIds: [] })).status,
        400,
      );
      assert.equal((await api(org, 'PATCH', `/contact-lists/${list.id}`, {})).status, 400);
    });
  });

  test("another organization's contact and list ids answer 404 on every route", async () => {
    const c = (await api(acme, 'POST', '/contacts', { phone: '+12025550701' })).body.data;
    const list = (await api(acme, 'POST', '/contact-lists', { name: 'Private' })).body.data;
    const otherContact = (await api(other, 'POST', '/contacts', { phone: '+12025550702' })).body.data;
    const attempts: [string, string, unknown?][] = [
      ['GET', `/contacts/${c.id}`],
      ['PATCH', `/contacts/${c.id}`, { firstName: 'Mallory' }],
      ['DELETE', `/contacts/${c.id}`],
      ['POST', `/contacts/${c.id}/opt-out`, {}],
      ['POST', `/contacts/${c.id}/opt-in`, {}],
      ['GET', `/contacts/${c.id}/consent-history`],
      ['GET', `/contact-lists/${list.id}`],
      ['PATCH', `/contact-lists/${list.id}`, { name: 'Mine' }],
      ['DELETE', `/contact-lists/${list.id}`],
      ['GET', `/contact-lists/${list.id}/members`],
      ['POST', `/contact-lists/${list.id}/members`, { contactIds: [otherContact.id] }],
      ['DELETE', `/contact-lists/${list.id}/members`, { contactIds: [otherContact.id] }],
    ];
    for (const [method, path, body] of attempts) {
      const res = await api(other, method, path, body);
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.ok(isShapeB(res.body));
    }
    // And nothing changed for the owner.
    const mine = await api(acme, 'GET', `/contacts/${c.id}`);
    assert.equal(mine.body.data.firstName, null);
    assert.equal(mine.body.data.optedOut, false);
    assert.equal((await api(acme, 'GET', `/contact-lists/${list.id}`)).body.data.name, 'Private');
    // Another organization's contact cannot be put in my list either.
    const sneak = await api(acme, 'POST', `/contact-lists/${list.id}/members`, {
      contactIds: [otherContact.id],
    });
    assert.equal(sneak.status, 404);
  });
});

describe('contacts in the portal (the console twin)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('a signed-in member manages contacts with the session; errors are Shape A; opt-outs are manual', async () => {
    const { createUser, signIn } = await import('./helpers/portal.ts');
    const user = await createUser(t, { role: 'member' });
    const token = await signIn(t, user);
    const created = await t.request('POST', '/v2/portal/contacts', {
      token,
      body: { phone: '+12025550801', firstName: 'Pat' },
    });
    assert.equal(created.status, 201);
    const list = await t.request('GET', '/v2/portal/contacts', { token });
    assert.deepEqual(
      list.body.data.map((c: any) => c.id),
      [created.body.data.id],
    );
    const out = await t.request('POST', `/v2/portal/contacts/${created.body.data.id}/opt-out`, { token });
    assert.equal(out.body.data.optOutMethod, 'manual');
    const history = await t.request('GET', `/v2/portal/contacts/${created.body.data.id}/consent-history`, {
      token,
    });
    assert.equal(history.body.data[0].actor, `user:${user.id}`);

    const dup = await t.request('POST', '/v2/portal/contacts', { token, body: { phone: '+12025550801' } });
    assert.equal(dup.status, 409);
    assert.ok(isShapeA(dup.body));
    assert.equal(dup.body.code, 'CONTACT_EXISTS');
    const bad = await t.request('POST', '/v2/portal/contacts', { token, body: { phone: 'x' } });
    assert.equal(bad.status, 400);
    assert.ok(isShapeA(bad.body));
    const badZone = await t.request('POST', '/v2/portal/contacts', {
      token,
      body: { phone: '+12025550804', timezone: 'Mars/Olympus' },
    });
    assert.equal(badZone.status, 400);
    assert.ok(isShapeA(badZone.body));
    assert.match(badZone.body.message, /^timezone /);
    const importRes = await t.request('POST', '/v2/portal/contacts/import', {
      token,
      body: { contacts: [{ phone: '2025550802' }] },
    });
    assert.equal(importRes.body.data.imported, 1);
    const lists = await t.request('POST', '/v2/portal/contact-lists', {
      token,
      body: { name: 'Console list' },
    });
    assert.equal(lists.status, 201);
  });

  test('without a session: 401 AUTH_REQUIRED; an API key does not open the portal', async () => {
    const res = await t.request('GET', '/v2/portal/contacts');
    assert.equal(res.status, 401);
    assert.ok(isShapeA(res.body));
    assert.equal(res.body.code, 'AUTH_REQUIRED');
    const org = await createOrganization(t);
    const { secret } = await t.ctx.apiKeys.create(org.id, { name: 'k', scopes: ['*'] });
    assert.equal((await t.request('GET', '/v2/portal/contacts', { apiKey: secret })).status, 401);
  });

  test("another organization's contact is 404 through the portal too", async () => {
    const { createUser, signIn } = await import('./helpers/portal.ts');
    const mine = await createUser(t);
    const theirs = await createUser(t);
    const myToken = await signIn(t, mine);
    const theirToken = await signIn(t, theirs);
    const c = (
      await t.request('POST', '/v2/portal/contacts', { token: myToken, body: { phone: '+12025550803' } })
    ).body.data;
    for (const [method, path] of [
      ['GET', `/v2/portal/contacts/${c.id}`],
      ['DELETE', `/v2/portal/contacts/${c.id}`],
      ['POST', `/v2/portal/contacts/${c.id}/opt-out`],
    ] as const) {
      const res = await t.request(method, path, { token: theirToken });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.ok(isShapeA(res.body));
    }
  });
});
