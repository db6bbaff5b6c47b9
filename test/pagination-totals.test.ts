// Offset-mode `total` (spec "Pagination rules"; docs/pagination.md "What `total` costs"): the unfiltered
// totals of GET /api/v2/messages and GET /api/v2/contacts come from a per-organization counter kept by
// triggers in the writing transaction (migrations/012_list_counts.sql), the filtered ones from an indexed
// count. Every total is checked against a real count(*) after sends, inbound texts, creates, deletes and
// imports (including rows that update instead of insert); a refused or rolled-back write changes no total;
// two organizations never see each other's; statements spanning organizations, a TRUNCATE and a deleted
// organization keep the counters exact.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Queryable } from '../src/platform/db/index.ts';
import { createOrganization, startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, type Sender, send, sender } from './helpers/messaging.ts';

const onPostgres = Boolean(process.env.DATABASE_URL);

/** Inserts `count` outbound messages of `who` in one statement (a bulk write, like a campaign's). */
async function insertMessages(
  db: Queryable,
  who: { id: string; number: string },
  count: number,
  tag: string,
) {
  await db.query(
    `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                           encoding, status, status_updated_at, created_at)
     SELECT 'msg_' || $3 || lpad(g::text, 6, '0'), $1, 'outbound', 'api', $2, '+12025550100', 'bulk', 1,
            'GSM-7', CASE WHEN g % 3 = 0 THEN 'failed' ELSE 'delivered' END, now(), now() - g * interval '1 second'
       FROM generate_series(1, $4::int) AS g`,
    [who.id, who.number, tag, count],
  );
}

async function counted(db: Queryable, sql: string, params: unknown[]): Promise<number> {
  const [row] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) rows`, params);
  return row!.n;
}

/** The counter row itself (null when the organization has none yet). */
async function counter(db: Queryable, organizationId: string, list: string): Promise<number | null> {
  const [row] = await db.query<{ count: number }>(
    'SELECT count FROM list_counts WHERE organization_id = $1 AND list = $2',
    [organizationId, list],
  );
  return row ? Number(row.count) : null;
}

describe('offset totals', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  /** `pagination` of one offset page of `path` (e.g. '/messages?status=failed'), as the API answers it. */
  async function page(who: { key: string }, path: string, pageNumber = 1, limit = 10) {
    const separator = path.includes('?') ? '&' : '?';
    const res = await t.request('GET', `/api/v2${path}${separator}page=${pageNumber}&limit=${limit}`, {
      apiKey: who.key,
    });
    assert.equal(res.status, 200, res.text);
    return res.body as { data: { id: string }[]; pagination: { total: number; totalPages: number } };
  }
  const total = async (who: { key: string }, path: string) => (await page(who, path)).pagination.total;

  const messagesIn = (organizationId: string, condition = 'TRUE', params: unknown[] = []) =>
    counted(t.ctx.db, `SELECT 1 FROM messages WHERE organization_id = $1 AND ${condition}`, [
      organizationId,
      ...params,
    ]);
  const contactsIn = (organizationId: string) =>
    counted(t.ctx.db, 'SELECT 1 FROM contacts WHERE organization_id = $1', [organizationId]);

  /** The unfiltered message total through the API, the counter and count(*) all agree, and equal `expected`. */
  async function assertMessageTotal(who: Sender, expected: number) {
    assert.equal(await messagesIn(who.id), expected, 'count(*)');
    assert.equal(await total(who, '/messages'), expected, 'API total');
    assert.equal((await counter(t.ctx.db, who.id, 'messages')) ?? 0, expected, 'counter');
  }
  async function assertContactTotal(who: { id: string; key: string }, expected: number) {
    assert.equal(await contactsIn(who.id), expected, 'count(*)');
    assert.equal(await total(who, '/contacts'), expected, 'API total');
    assert.equal((await counter(t.ctx.db, who.id, 'contacts')) ?? 0, expected, 'counter');
  }

  async function uploadCsv(key: string, csv: string) {
    const form = new FormData();
    form.append('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv');
    const response = await fetch(`${t.url}/api/v2/contacts/import`, {
      method: 'POST',
      body: form,
      headers: { 'x-api-key': key },
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  const createContact = (who: { key: string }, body: Record<string, unknown>) =>
    t.request('POST', '/api/v2/contacts', { apiKey: who.key, body });

  test('a new organization: total 0, no pages, and no counter row needed', async () => {
    const fresh = await sender(t);
    assert.equal(await counter(t.ctx.db, fresh.id, 'messages'), null);
    const first = await page(fresh, '/messages');
    assert.deepEqual(first.pagination, { page: 1, limit: 10, total: 0, totalPages: 0 });
    assert.deepEqual(first.data, []);
    await assertContactTotal(fresh, 0);
  });

  test('messages: sends, inbound texts with their automatic replies and bulk inserts keep the total exact', async () => {
    const acme = await sender(t);
    for (let i = 0; i < 5; i++) {
      assert.equal((await send(t, acme, { to: freshNumber(), message: `hello ${i}` })).status, 202);
    }
    await assertMessageTotal(acme, 5);

    // HELP: the inbound text and its automatic reply, two inserts in one transaction.
    const inbound = await t.admin('POST', '/test/carrier/inbound', {
      from: freshNumber(),
      to: acme.number,
      text: 'HELP',
    });
    assert.equal(inbound.status, 201, inbound.text);
    assert.ok(inbound.body.data.reply);
    await assertMessageTotal(acme, 7);

    await insertMessages(t.ctx.db, acme, 250, `${acme.id}_a`);
    await assertMessageTotal(acme, 257);

    // totalPages and the pages themselves follow the total; a page past the end is empty with the totals.
    const last = await page(acme, '/messages', 26);
    assert.deepEqual(last.pagination, { page: 26, limit: 10, total: 257, totalPages: 26 });
    assert.equal(last.data.length, 7);
    const beyond = await page(acme, '/messages', 27);
    assert.equal(beyond.data.length, 0);
    assert.equal(beyond.pagination.total, 257);
  });

  test('the unfiltered total is read from the counter, not counted', async () => {
    const acme = await sender(t);
    await insertMessages(t.ctx.db, acme, 12, `${acme.id}_c`);
    await t.ctx.db.query(
      "UPDATE list_counts SET count = count + 1000 WHERE organization_id = $1 AND list = 'messages'",
      [acme.id],
    );
    try {
      assert.equal(await total(acme, '/messages'), 1012);
      // A filter is counted, so it is unaffected.
      assert.equal(await total(acme, '/messages?direction=outbound'), 12);
    } finally {
      await t.ctx.db.query(
        "UPDATE list_counts SET count = count - 1000 WHERE organization_id = $1 AND list = 'messages'",
        [acme.id],
      );
    }
    await assertMessageTotal(acme, 12);
  });

  test('message filters: every total equals count(*) of the matching rows, alone and combined', async () => {
    const acme = await sender(t);
    const partner = freshNumber();
    await insertMessages(t.ctx.db, acme, 90, `${acme.id}_f`);
    for (let i = 0; i < 3; i++) {
      assert.equal((await send(t, acme, { to: partner, message: `to partner ${i}` })).status, 202);
    }
    for (const text of ['hi', 'HELP']) {
      const res = await t.admin('POST', '/test/carrier/inbound', { from: partner, to: acme.number, text });
      assert.equal(res.status, 201, res.text);
    }
    const since = new Date(Date.now() - 30_000).toISOString();
    const until = new Date(Date.now() - 10_000).toISOString();
    const cases: [string, string, unknown[]][] = [
      ['direction=inbound', "direction = 'inbound'", []],
      ['direction=outbound', "direction = 'outbound'", []],
      ['status=failed', "status = 'failed'", []],
      ['status=received', "status = 'received'", []],
      [`number=${encodeURIComponent(partner)}`, '(from_number = $2 OR to_number = $2)', [partner]],
      [`since=${since}`, 'created_at >= $2', [since]],
      [`until=${until}`, 'created_at < $2', [until]],
      [`since=${since}&until=${until}`, 'created_at >= $2 AND created_at < $3', [since, until]],
      ['direction=outbound&status=failed', "direction = 'outbound' AND status = 'failed'", []],
      [
        `direction=outbound&number=${encodeURIComponent(partner)}`,
        "direction = 'outbound' AND (from_number = $2 OR to_number = $2)",
        [partner],
      ],
      ['status=sent&direction=inbound', "status = 'sent' AND direction = 'inbound'", []],
    ];
    for (const [query, condition, params] of cases) {
      const expected = await messagesIn(acme.id, condition, params);
      assert.equal(await total(acme, `/messages?${query}`), expected, query);
    }
    // The cases are not vacuous: two texts in, HELP's automatic reply (outbound) and three sends out.
    assert.equal(await total(acme, '/messages?direction=inbound'), 2);
    assert.equal(await total(acme, '/messages?status=failed'), 30);
    assert.equal(await total(acme, `/messages?number=${encodeURIComponent(partner)}`), 6);
    assert.ok((await total(acme, `/messages?since=${since}&until=${until}`)) > 0);
  });

  test('a refused send (opted out, over the daily limit, invalid) changes no total', async () => {
    t.ctx.clock.set(new Date('2026-11-10T12:00:00.000Z'));
    const limited = await sender(t, { dailyLimitSegments: 2, createdAt: '2026-01-01T00:00:00.000Z' });
    const optedOut = freshNumber();
    const contact = await createContact(limited, { phone: optedOut });
    assert.equal(contact.status, 201, contact.text);
    await t.request('POST', `/api/v2/contacts/${contact.body.data.id}/opt-out`, { apiKey: limited.key });

    assert.equal((await send(t, limited, { to: optedOut, message: 'hi' })).status, 403);
    await assertMessageTotal(limited, 0);
    assert.equal((await send(t, limited, { to: freshNumber(), message: 'one' })).status, 202);
    assert.equal((await send(t, limited, { to: freshNumber(), message: 'two' })).status, 202);
    const over = await send(t, limited, { to: freshNumber(), message: 'three' });
    assert.equal(over.status, 429, over.text);
    assert.equal((await send(t, limited, { to: 'not a number', message: 'x' })).status, 400);
    await assertMessageTotal(limited, 2);
    await assertContactTotal(limited, 1);
  });

  test('a rolled-back transaction rolls its count back', async () => {
    const acme = await sender(t);
    await insertMessages(t.ctx.db, acme, 4, `${acme.id}_r`);
    await assert.rejects(
      t.ctx.db.transaction(async (tx) => {
        await insertMessages(tx, acme, 10, `${acme.id}_rb`);
        await t.ctx.contacts.ensureContact(tx, acme.id, freshNumber());
        assert.equal(await counter(tx, acme.id, 'messages'), 14, 'counted inside the transaction');
        throw new Error('roll back');
      }),
      /roll back/,
    );
    await assertMessageTotal(acme, 4);
    await assertContactTotal(acme, 0);
  });

  test('contacts: creates, a refused duplicate, deletes and a deleted contact list keep the total exact', async () => {
    const org = await sender(t);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await createContact(org, { phone: freshNumber(), firstName: `C${i}` });
      assert.equal(res.status, 201, res.text);
      ids.push(res.body.data.id);
    }
    await assertContactTotal(org, 6);

    const [first] = (await t.ctx.db.query<{ phone: string }>('SELECT phone FROM contacts WHERE id = $1', [
      ids[0],
    ]))!;
    const duplicate = await createContact(org, { phone: first!.phone });
    assert.equal(duplicate.status, 409, duplicate.text);
    await assertContactTotal(org, 6);

    for (const id of ids.slice(0, 2)) {
      const res = await t.request('DELETE', `/api/v2/contacts/${id}`, { apiKey: org.key });
      assert.equal(res.status, 200, res.text);
    }
    assert.equal((await t.request('DELETE', `/api/v2/contacts/${ids[0]}`, { apiKey: org.key })).status, 404);
    await assertContactTotal(org, 4);

    // A contact list groups contacts; deleting it deletes none of them.
    const list = await t.request('POST', '/api/v2/contact-lists', { apiKey: org.key, body: { name: 'VIP' } });
    assert.equal(list.status, 201, list.text);
    const added = await t.request('POST', `/api/v2/contact-lists/${list.body.data.id}/members`, {
      apiKey: org.key,
      body: { contactIds: ids.slice(2) },
    });
    assert.equal(added.status, 200, added.text);
    assert.equal(
      (await t.request('DELETE', `/api/v2/contact-lists/${list.body.data.id}`, { apiKey: org.key })).status,
      200,
    );
    await assertContactTotal(org, 4);

    // STOP from an unknown number creates its contact in the inbound transaction.
    const stop = await t.admin('POST', '/test/carrier/inbound', {
      from: freshNumber(),
      to: org.number,
      text: 'STOP',
    });
    assert.equal(stop.status, 201, stop.text);
    await assertContactTotal(org, 5);
  });

  test('imports: new rows count, rows that update an existing contact do not, rejected rows do not', async () => {
    const org = await sender(t);
    const existing: string[] = [];
    for (let i = 0; i < 5; i++) {
      const phone = `+1202555${String(3000 + i).padStart(4, '0')}`;
      assert.equal((await createContact(org, { phone })).status, 201);
      existing.push(phone);
    }
    await assertContactTotal(org, 5);

    // 1,200 new phones, the 5 existing ones again (updates), one phone twice (one contact), two bad rows.
    const lines = ['phone,first_name'];
    for (let i = 0; i < 1200; i++) lines.push(`+1303555${String(i).padStart(4, '0')},New${i}`);
    for (const phone of existing) lines.push(`${phone},Updated`);
    lines.push('+13035550000,Again', 'not a phone,Bad', ',Empty');
    const res = await uploadCsv(org.key, lines.join('\n'));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.imported, 1200, JSON.stringify(res.body.data));
    assert.equal(res.body.data.rejected, 2, JSON.stringify(res.body.data));
    await assertContactTotal(org, 1205);

    // The same file again: every row updates, nothing is added.
    const again = await uploadCsv(org.key, lines.join('\n'));
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.data.imported, 0);
    await assertContactTotal(org, 1205);
    assert.equal(
      await counted(
        t.ctx.db,
        "SELECT 1 FROM contacts WHERE organization_id = $1 AND first_name = 'Updated'",
        [org.id],
      ),
      5,
    );
  });

  test('contact filters: opted out or not and a search each total exactly what count(*) finds', async () => {
    const org = await sender(t);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await createContact(org, {
        phone: freshNumber(),
        firstName: i % 4 === 0 ? `Zed${i}` : `Amy${i}`,
      });
      ids.push(res.body.data.id);
    }
    for (const id of ids.slice(0, 5)) {
      const res = await t.request('POST', `/api/v2/contacts/${id}/opt-out`, { apiKey: org.key });
      assert.equal(res.status, 200, res.text);
    }
    // An opt-out without a contact is not a contact: it appears in no list.
    await t.ctx.db.query(
      "INSERT INTO opt_outs (organization_id, phone, method, opted_out_at) VALUES ($1, $2, 'manual', now())",
      [org.id, freshNumber()],
    );
    const optedOutCount = (optedOut: boolean) =>
      counted(
        t.ctx.db,
        `SELECT 1 FROM contacts c WHERE c.organization_id = $1
            AND ${optedOut ? '' : 'NOT '}EXISTS (SELECT 1 FROM opt_outs o
                  WHERE o.organization_id = c.organization_id AND o.phone = c.phone)`,
        [org.id],
      );
    assert.equal(await optedOutCount(true), 5);
    assert.equal(await total(org, '/contacts?optedOut=true'), 5);
    assert.equal(await optedOutCount(false), 7);
    assert.equal(await total(org, '/contacts?optedOut=false'), 7);
    assert.equal(await total(org, '/contacts?search=zed'), 3);
    assert.equal(await total(org, '/contacts?search=zed&optedOut=true'), 2);
    await assertContactTotal(org, 12);
  });

  test("two organizations' totals are independent", async () => {
    const [one, two] = [await sender(t), await sender(t)];
    await insertMessages(t.ctx.db, one, 30, `${one.id}_i`);
    await insertMessages(t.ctx.db, two, 7, `${two.id}_i`);
    assert.equal((await createContact(two, { phone: freshNumber() })).status, 201);
    await assertMessageTotal(one, 30);
    await assertMessageTotal(two, 7);
    await assertContactTotal(one, 0);
    await assertContactTotal(two, 1);
    // The same phone is a contact of each, separately.
    const shared = freshNumber();
    assert.equal((await createContact(one, { phone: shared })).status, 201);
    assert.equal((await createContact(two, { phone: shared })).status, 201);
    await assertContactTotal(one, 1);
    await assertContactTotal(two, 2);
    assert.equal(await total(one, '/messages?status=failed'), 10);
    assert.equal(await total(two, '/messages?status=failed'), 2);
  });
});

describe('list counters under any write', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  /** Every counter of the database equals count(*) of its rows, and no organization with rows lacks one. */
  async function assertAllExact() {
    for (const list of ['messages', 'contacts']) {
      const drift = await t.ctx.db.query(
        `SELECT organization_id, actual, counted FROM (
           SELECT organization_id, count(*) AS actual FROM ${list} GROUP BY organization_id) a
           FULL JOIN (SELECT organization_id, count AS counted FROM list_counts WHERE list = $1) c
           USING (organization_id)
          WHERE COALESCE(actual, 0) <> COALESCE(counted, 0)`,
        [list],
      );
      assert.deepEqual(drift, [], `${list} counters drifted`);
    }
  }

  const organization = async () => {
    const org = await createOrganization(t);
    return { id: org.id, number: freshNumber() };
  };

  test('one statement across several organizations counts each; a delete across them subtracts each', async () => {
    const orgs = [await organization(), await organization(), await organization()];
    await t.ctx.db.query(
      `INSERT INTO contacts (id, organization_id, phone, created_at, updated_at)
       SELECT 'ct_multi_' || o.ordinality || '_' || g, o.id, '+1404555' || lpad((o.ordinality * 100 + g)::text, 4, '0'),
              now(), now()
         FROM unnest($1::text[]) WITH ORDINALITY AS o(id, ordinality), generate_series(1, o.ordinality::int * 10) AS g`,
      [orgs.map((org) => org.id)],
    );
    for (const [index, org] of orgs.entries()) {
      assert.equal(await counter(t.ctx.db, org.id, 'contacts'), (index + 1) * 10);
      await insertMessages(t.ctx.db, org, 5 + index, `${org.id}_m`);
    }
    await assertAllExact();
    await t.ctx.db.query(
      "DELETE FROM contacts WHERE organization_id = ANY($1) AND right(id, 1) IN ('1', '2', '3')",
      [orgs.map((org) => org.id)],
    );
    await t.ctx.db.query("DELETE FROM messages WHERE organization_id = ANY($1) AND right(id, 1) = '1'", [
      orgs.map((org) => org.id),
    ]);
    await assertAllExact();
    assert.equal(await counter(t.ctx.db, orgs[2]!.id, 'messages'), 6);
  });

  test('moving a row to another organization is refused, so no counter can drift', async () => {
    const [one, two] = [await organization(), await organization()];
    await insertMessages(t.ctx.db, one, 2, `${one.id}_mv`);
    await assert.rejects(
      t.ctx.db.query('UPDATE messages SET organization_id = $2 WHERE organization_id = $1', [one.id, two.id]),
      /organization_id cannot change/,
    );
    // Updating other columns (as every status change does) is not affected.
    await t.ctx.db.query("UPDATE messages SET status = 'failed' WHERE organization_id = $1", [one.id]);
    await assertAllExact();
  });

  test('deleting an organization takes its counters with it', async () => {
    const gone = await organization();
    await insertMessages(t.ctx.db, gone, 3, `${gone.id}_gone`);
    await t.ctx.db.query(
      "INSERT INTO contacts (id, organization_id, phone, created_at, updated_at) VALUES ($1, $2, '+14045559999', now(), now())",
      [`ct_${gone.id}`, gone.id],
    );
    await t.ctx.db.query('DELETE FROM organizations WHERE id = $1', [gone.id]);
    assert.equal(
      await counted(t.ctx.db, 'SELECT 1 FROM list_counts WHERE organization_id = $1', [gone.id]),
      0,
    );
    await assertAllExact();
  });

  test('concurrent writers of one organization add up exactly', {
    skip: !onPostgres && 'PGlite has one connection',
  }, async () => {
    const org = await organization();
    const others = Array.from({ length: 4 }, () => t.database.connectAgain());
    try {
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          others[i % others.length]!.transaction(async (tx) => {
            await insertMessages(tx, org, 1 + (i % 5), `${org.id}_p${i}_`);
            if (i % 4 === 0) throw new Error('rolled back');
          }).catch((error: Error) => assert.equal(error.message, 'rolled back')),
        ),
      );
    } finally {
      for (const db of others) await db.close();
    }
    // 40 transactions of 1..5 rows each; every fourth (i = 0, 4, …: 1 or 5 rows) rolled back.
    const expected = Array.from({ length: 40 }, (_, i) => (i % 4 === 0 ? 0 : 1 + (i % 5))).reduce(
      (a, b) => a + b,
    );
    assert.equal(await counter(t.ctx.db, org.id, 'messages'), expected);
    await assertAllExact();
  });

  test('TRUNCATE clears the counters of the truncated table only', async () => {
    const org = await organization();
    await insertMessages(t.ctx.db, org, 3, `${org.id}_t`);
    await t.ctx.db.query(
      "INSERT INTO contacts (id, organization_id, phone, created_at, updated_at) VALUES ($1, $2, '+14045558888', now(), now())",
      [`ct_${org.id}`, org.id],
    );
    await t.ctx.db.exec('TRUNCATE messages CASCADE');
    assert.equal(await counted(t.ctx.db, "SELECT 1 FROM list_counts WHERE list = 'messages'", []), 0);
    assert.equal(await counter(t.ctx.db, org.id, 'contacts'), 1);
    await insertMessages(t.ctx.db, org, 2, `${org.id}_t2`);
    assert.equal(await counter(t.ctx.db, org.id, 'messages'), 2);
    await assertAllExact();
  });
});
