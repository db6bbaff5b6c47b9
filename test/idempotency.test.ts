// Idempotency-Key on every write of the developer API (issue 31 finding 6; docs/idempotency.md), over a real
// socket, on contacts (create, delete, a multipart import), number purchase, click-to-call and campaign
// launch: the same key and request answer the first answer again, marked replayed, and act once; the same
// key on another request is 422 and changes nothing; concurrent twins act once; a refusal frees its key; a
// reservation left by a crashed process expires; keys are per organization and expire with retention.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, freshNumber, type Sender, sender } from './helpers/messaging.ts';

/** Noon in Washington, DC on a weekday: campaigns may send to Eastern numbers. */
const NOON_EASTERN = new Date('2026-11-24T17:00:00.000Z');

describe('Idempotency-Key on every developer-API write', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown, key?: string) =>
    t.request(method, `/api/v2${path}`, {
      apiKey: who.key,
      body,
      headers: key === undefined ? {} : { 'idempotency-key': key },
    });
  const contactsWith = (who: Sender, phone: string) =>
    countRows(t, 'SELECT 1 FROM contacts WHERE organization_id = $1 AND phone = $2', [who.id, phone]);

  /** Asserts `again` is `first` given again: same status and body text, marked replayed (and `first` not). */
  function assertReplayed(first: { status: number; text: string; headers: Headers }, again: typeof first) {
    assert.equal(again.status, first.status, again.text);
    assert.equal(again.text, first.text);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.headers.get('content-type'), first.headers.get('content-type'));
  }

  test('contacts.create: one contact for two requests; another body is 422; another organization is its own', async () => {
    const acme = await sender(t);
    const phone = freshNumber();
    const first = await api(acme, 'POST', '/contacts', { phone, firstName: 'Ann' }, 'create-ann');
    assert.equal(first.status, 201, first.text);
    // The same body with its keys in another order is the same request.
    const again = await api(acme, 'POST', '/contacts', { firstName: 'Ann', phone }, 'create-ann');
    assertReplayed(first, again);
    assert.equal(await contactsWith(acme, phone), 1);

    const otherPhone = freshNumber();
    const reused = await api(acme, 'POST', '/contacts', { phone: otherPhone, firstName: 'Bo' }, 'create-ann');
    assert.equal(reused.status, 422);
    assert.equal(reused.body.success, false);
    assert.equal(reused.body.code, 'IDEMPOTENCY_KEY_REUSED');
    assert.equal(await contactsWith(acme, otherPhone), 0, 'nothing created');

    // The same key on another operation is another key: the path and operation are part of the request.
    const list = await api(acme, 'POST', '/contact-lists', { name: 'VIP' }, 'create-ann');
    assert.equal(list.status, 201, list.text);
    assert.equal(list.headers.get('idempotent-replayed'), null);

    // Another organization's same key and body: its own contact, not acme's answer.
    const globex = await sender(t);
    const theirs = await api(globex, 'POST', '/contacts', { phone, firstName: 'Ann' }, 'create-ann');
    assert.equal(theirs.status, 201, theirs.text);
    assert.equal(theirs.headers.get('idempotent-replayed'), null);
    assert.notEqual(theirs.body.data.id, first.body.data.id);
    assert.equal(await contactsWith(globex, phone), 1);
  });

  test('contacts.delete and PATCH: a retried delete answers its 200 again instead of a 404', async () => {
    const acme = await sender(t);
    const created = await api(acme, 'POST', '/contacts', { phone: freshNumber() });
    assert.equal(created.status, 201, created.text);
    const id = created.body.data.id as string;

    const renamed = await api(acme, 'PATCH', `/contacts/${id}`, { firstName: 'Cy' }, 'rename-1');
    assert.equal(renamed.status, 200, renamed.text);
    assertReplayed(renamed, await api(acme, 'PATCH', `/contacts/${id}`, { firstName: 'Cy' }, 'rename-1'));

    const deleted = await api(acme, 'DELETE', `/contacts/${id}`, undefined, 'delete-1');
    assert.equal(deleted.status, 200, deleted.text);
    assertReplayed(deleted, await api(acme, 'DELETE', `/contacts/${id}`, undefined, 'delete-1'));
    assert.equal((await api(acme, 'DELETE', `/contacts/${id}`)).status, 404, 'without the key: gone');
  });

  test('a refusal is not recorded: the key is free for the corrected request', async () => {
    const acme = await sender(t);
    const refused = await api(acme, 'POST', '/contacts', { phone: 'not a phone' }, 'fix-me');
    assert.equal(refused.status, 400, refused.text);
    const phone = freshNumber();
    const fixed = await api(acme, 'POST', '/contacts', { phone }, 'fix-me');
    assert.equal(fixed.status, 201, fixed.text);
    assert.equal(fixed.headers.get('idempotent-replayed'), null);
    assert.equal(await contactsWith(acme, phone), 1);
  });

  test('the key: 1–255 printable ASCII characters, else 400 and nothing reserved', async () => {
    const acme = await sender(t);
    for (const key of ['x'.repeat(256), '', 'caf\u00e9']) {
      const phone = freshNumber();
      const res = await api(acme, 'POST', '/contacts', { phone }, key);
      assert.equal(res.status, 400, `${JSON.stringify(key)}: ${res.text}`);
      assert.match(res.body.error, /idempotency-key/);
      assert.equal(await contactsWith(acme, phone), 0);
    }
    const longest = await api(acme, 'POST', '/contacts', { phone: freshNumber() }, 'k'.repeat(255));
    assert.equal(longest.status, 201, longest.text);
    assert.equal(
      await countRows(t, 'SELECT 1 FROM idempotency_keys WHERE organization_id = $1', [acme.id]),
      1,
      'only the valid key was kept',
    );
  });

  test('numbers.buy: one purchase for two requests; another number with the key is 422 and not bought', async () => {
    const acme = await sender(t, {}, { number: null });
    const found = await api(acme, 'GET', '/numbers/available?areaCode=312&limit=2');
    assert.equal(found.status, 200, found.text);
    const [one, two] = found.body.data as { number: string }[];
    const owned = (number: string) =>
      countRows(t, 'SELECT 1 FROM phone_numbers WHERE organization_id = $1 AND number = $2', [
        acme.id,
        number,
      ]);

    const bought = await api(acme, 'POST', '/numbers', { number: one!.number }, 'buy-1');
    assert.equal(bought.status, 201, bought.text);
    assertReplayed(bought, await api(acme, 'POST', '/numbers', { number: one!.number }, 'buy-1'));
    assert.equal(await owned(one!.number), 1);
    assert.equal(await countRows(t, 'SELECT 1 FROM phone_numbers WHERE organization_id = $1', [acme.id]), 1);

    const reused = await api(acme, 'POST', '/numbers', { number: two!.number }, 'buy-1');
    assert.equal(reused.status, 422);
    assert.equal(reused.body.code, 'IDEMPOTENCY_KEY_REUSED');
    assert.equal(await owned(two!.number), 0);
  });

  test('calls.create: a retried call rings once; concurrent twins place one call', async () => {
    const acme = await sender(t);
    const extension = await api(acme, 'POST', '/extensions', { extension: '101', name: 'Desk' });
    assert.equal(extension.status, 201, extension.text);
    const call = { from: acme.number, to: '(415) 555-0123', extensionId: extension.body.data.id };
    const callsOf = () => countRows(t, 'SELECT 1 FROM calls WHERE organization_id = $1', [acme.id]);

    const placed = await api(acme, 'POST', '/calls', call, 'call-1');
    assert.equal(placed.status, 202, placed.text);
    assertReplayed(placed, await api(acme, 'POST', '/calls', call, 'call-1'));
    assert.equal(await callsOf(), 1);

    const twins = await Promise.all([1, 2, 3, 4].map(() => api(acme, 'POST', '/calls', call, 'call-2')));
    for (const twin of twins) {
      assert.ok(twin.status === 202 || twin.status === 409, twin.text);
      if (twin.status === 409) {
        assert.equal(twin.body.code, 'IDEMPOTENCY_KEY_IN_USE');
        assert.equal(twin.headers.get('retry-after'), '1');
      }
    }
    const answered = twins.filter((twin) => twin.status === 202);
    assert.ok(answered.length >= 1);
    assert.equal(new Set(answered.map((twin) => twin.text)).size, 1, 'every 202 is the one call');
    assert.equal(await callsOf(), 2, 'the first call and one of the twins');
    // Once the first has answered, a retry is its answer.
    const later = await api(acme, 'POST', '/calls', call, 'call-2');
    assert.equal(later.text, answered[0]!.text);
  });

  test('campaigns.launch: launched once; the key on another campaign is 422 and it stays a draft', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const list = await api(acme, 'POST', '/contact-lists', { name: 'Launch list' });
    const phones = [freshNumber(), freshNumber()];
    const imported = await api(acme, 'POST', '/contacts/import', {
      contacts: phones.map((phone) => ({ phone })),
    });
    assert.equal(imported.status, 200, imported.text);
    const contacts = await t.ctx.db.query<{ id: string }>(
      'SELECT id FROM contacts WHERE organization_id = $1 AND phone = ANY($2::text[])',
      [acme.id, phones],
    );
    const members = await api(acme, 'POST', `/contact-lists/${list.body.data.id}/members`, {
      contactIds: contacts.map((contact) => contact.id),
    });
    assert.equal(members.status, 200, members.text);
    const draft = async () => {
      const created = await api(acme, 'POST', '/campaigns', {
        name: 'Promo',
        message: 'Hello',
        contactListIds: [list.body.data.id],
      });
      assert.equal(created.status, 201, created.text);
      return created.body.data.id as string;
    };
    const first = await draft();
    const second = await draft();
    const recipientsOf = (id: string) =>
      countRows(t, 'SELECT 1 FROM campaign_recipients WHERE campaign_id = $1', [id]);

    const launched = await api(acme, 'POST', `/campaigns/${first}/launch`, undefined, 'launch-1');
    assert.equal(launched.status, 200, launched.text);
    assert.equal(launched.body.data.status, 'sending');
    assertReplayed(launched, await api(acme, 'POST', `/campaigns/${first}/launch`, undefined, 'launch-1'));
    assert.equal(await recipientsOf(first), 2, 'each recipient once');

    const reused = await api(acme, 'POST', `/campaigns/${second}/launch`, undefined, 'launch-1');
    assert.equal(reused.status, 422);
    assert.equal(reused.body.code, 'IDEMPOTENCY_KEY_REUSED');
    assert.equal((await api(acme, 'GET', `/campaigns/${second}`)).body.data.status, 'draft');
    assert.equal(await recipientsOf(second), 0);
  });

  test('contacts.import, multipart: the same file re-encoded is replayed; another file is 422', async () => {
    const acme = await sender(t);
    const [ann, bo] = [freshNumber(), freshNumber()];
    // Sent with fetch's own multipart encoding: a new random boundary each time, as a client re-encoding
    // its retry would send.
    const fetchForm = async (form: FormData, key: string) => {
      const response = await fetch(`${t.url}/api/v2/contacts/import`, {
        method: 'POST',
        body: form,
        headers: { 'x-api-key': acme.key, 'idempotency-key': key },
      });
      const text = await response.text();
      return { status: response.status, headers: response.headers, text, body: JSON.parse(text) };
    };

    const csvA = `phone,first_name\n${ann},Ann\n`;
    const form = (csv: string) => {
      const each = new FormData();
      each.append('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv');
      return each;
    };
    const first = await fetchForm(form(csvA), 'import-1');
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.data.imported, 1);
    const again = await fetchForm(form(csvA), 'import-1');
    assertReplayed(first, again);

    const other = await fetchForm(form(`phone,first_name\n${bo},Bo\n`), 'import-1');
    assert.equal(other.status, 422, other.text);
    assert.equal(other.body.code, 'IDEMPOTENCY_KEY_REUSED');
    assert.equal(await contactsWith(acme, bo), 0, 'the other file was not imported');

    // The same key on the JSON form of the import is another request too.
    const json = await api(acme, 'POST', '/contacts/import', { contacts: [{ phone: ann }] }, 'import-1');
    assert.equal(json.status, 422, json.text);
    assert.equal(await contactsWith(acme, ann), 1);
  });

  test('a twin arriving while the first still runs is 409 and changes nothing; then it is the answer', async () => {
    const acme = await sender(t);
    const phone = freshNumber();
    // The first request's upload arrives slowly: its handler is still reading when the twin comes.
    const boundary = 'slowly-sent-form-0123456789';
    const csv = `phone\r\n${phone}\r\n`;
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.csv"\r\n` +
      `Content-Type: text/csv\r\n\r\n${csv}\r\n`;
    const tail = `--${boundary}--\r\n`;
    const slow = httpRequest(`${t.url}/api/v2/contacts/import`, {
      method: 'POST',
      headers: {
        'x-api-key': acme.key,
        'idempotency-key': 'slow-import',
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': Buffer.byteLength(head + tail),
      },
    });
    const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
      slow.on('response', (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, text }));
      });
      slow.on('error', reject);
    });
    answered.catch(() => {}); // awaited below; a failure before then destroys the request
    try {
      slow.write(head);
      const reserved = () =>
        countRows(t, "SELECT 1 FROM idempotency_keys WHERE key = 'slow-import' AND reservation IS NOT NULL");
      for (let waited = 0; (await reserved()) === 0; waited += 10) {
        assert.ok(waited < 10_000, 'the first request reserved its key');
        await sleep(10);
      }

      const form = new FormData();
      form.append('file', new Blob([csv], { type: 'text/csv' }), 'slow.csv');
      const twin = await fetch(`${t.url}/api/v2/contacts/import`, {
        method: 'POST',
        body: form,
        headers: { 'x-api-key': acme.key, 'idempotency-key': 'slow-import' },
      });
      assert.equal(twin.status, 409);
      assert.equal(((await twin.json()) as { code: string }).code, 'IDEMPOTENCY_KEY_IN_USE');
      assert.equal(twin.headers.get('retry-after'), '1');
      assert.equal(await contactsWith(acme, phone), 0, 'the twin imported nothing');

      slow.end(tail);
      const first = await answered;
      assert.equal(first.status, 200, first.text);
      assert.equal(JSON.parse(first.text).data.imported, 1);
      const retry = await fetch(`${t.url}/api/v2/contacts/import`, {
        method: 'POST',
        body: form,
        headers: { 'x-api-key': acme.key, 'idempotency-key': 'slow-import' },
      });
      assert.equal(retry.status, 200);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      assert.equal(await retry.text(), first.text);
      assert.equal(await contactsWith(acme, phone), 1);
    } finally {
      slow.destroy();
    }
  });

  test('a reservation left by a crashed process: 409 while it is fresh, taken over after a minute', async () => {
    const acme = await sender(t);
    // A process reserved the key and died before it answered: nothing refreshes the reservation.
    const reservation = await t.ctx.idempotency.reserve(
      { organizationId: acme.id, operation: 'contacts.create', key: 'crashed' },
      'the request of the process that died',
    );
    assert.equal(reservation.reserved, true);
    const phone = freshNumber();
    const busy = await api(acme, 'POST', '/contacts', { phone }, 'crashed');
    assert.equal(busy.status, 409, busy.text);
    assert.equal(busy.body.code, 'IDEMPOTENCY_KEY_IN_USE');
    assert.equal(busy.headers.get('retry-after'), '1');
    assert.equal(await contactsWith(acme, phone), 0, 'nothing changed');

    t.ctx.clock.advance(61);
    const retried = await api(acme, 'POST', '/contacts', { phone }, 'crashed');
    assert.equal(retried.status, 201, retried.text);
    assert.equal(await contactsWith(acme, phone), 1);
  });

  test('after 24 hours retention removes the recorded answers and the key acts anew', async () => {
    const acme = await sender(t);
    const phone = freshNumber();
    const first = await api(acme, 'POST', '/contacts', { phone, firstName: 'Di' }, 'day-old');
    assert.equal(first.status, 201, first.text);
    const kept = () =>
      countRows(t, "SELECT 1 FROM idempotency_keys WHERE organization_id = $1 AND key = 'day-old'", [
        acme.id,
      ]);
    assert.equal(await kept(), 1);

    t.ctx.clock.advance(24 * 3600 + 1);
    assert.ok((await t.ctx.idempotency.removeExpired(t.ctx.clock.now())) >= 1);
    assert.equal(await kept(), 0);
    // The key is free: another request with it is acted on, not refused as a reuse nor replayed.
    const later = await api(acme, 'POST', '/contacts', { phone: freshNumber() }, 'day-old');
    assert.equal(later.status, 201, later.text);
    assert.equal(later.headers.get('idempotent-replayed'), null);
  });

  test('the OpenAPI document names the header, 409 and 422 on every write of the developer API', async () => {
    const document = (await t.request('GET', '/openapi.json')).body;
    let writes = 0;
    for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
      if (!path.startsWith('/api/v2/')) continue;
      for (const method of ['post', 'put', 'patch', 'delete']) {
        const operation = item[method];
        if (!operation) continue;
        writes++;
        const header = (operation.parameters ?? []).find(
          (each: { in: string; name: string }) => each.in === 'header' && each.name === 'idempotency-key',
        );
        assert.ok(header, `${method.toUpperCase()} ${path} names Idempotency-Key`);
        assert.equal(header.schema.maxLength, 255);
        assert.ok(operation.responses['422'], `${method.toUpperCase()} ${path} documents 422`);
        // A send (and a reply in a conversation, which is one) keeps its key in its own transaction: a twin
        // waits for the first instead of a 409.
        if (!['messages.send', 'conversations.reply'].includes(operation.operationId)) {
          assert.ok(operation.responses['409'], `${method.toUpperCase()} ${path} documents 409`);
        }
      }
    }
    assert.ok(writes > 40, `${writes} writes`);
  });
});
