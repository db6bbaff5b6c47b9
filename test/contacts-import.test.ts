// Contact import (issue: contacts, CSV import): real-world-shaped CSVs (Google Contacts, Outlook, a BOM and
// CRLF, quoted commas and newlines, semicolons and tabs), JSON arrays, updates that never clear an opt-out,
// every refusal code with nothing imported, the 20-row error cap, one transaction, and a large file.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOrganization, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';

describe('contact import', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  async function tenant(fields: Record<string, unknown> = {}) {
    const org = await createOrganization(t, fields);
    const { secret } = await t.ctx.apiKeys.create(org.id, { name: 'k', scopes: ['*'] });
    return { id: org.id, key: secret };
  }

  async function uploadCsv(key: string, csv: string | Uint8Array, field = 'file') {
    const form = new FormData();
    form.append(field, new Blob([csv as BlobPart], { type: 'text/csv' }), 'contacts.csv');
    const response = await fetch(`${t.url}/api/v2/contacts/import`, {
      method: 'POST',
      body: form,
      headers: { 'x-api-key': key },
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  async function contactCount(organizationId: string) {
    const [row] = await t.ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE organization_id = $1',
      [organizationId],
    );
    return row!.n;
  }

  async function contactByPhone(organizationId: string, phone: string) {
    return t.ctx.contacts.findByPhone(organizationId, phone);
  }

  test('a Google Contacts export: names, e-mail, company and the first of several phones', async () => {
    const org = await tenant();
    const csv = [
      'Name,Given Name,Additional Name,Family Name,Nickname,E-mail 1 - Type,E-mail 1 - Value,Phone 1 - Type,Phone 1 - Value,Phone 2 - Type,Phone 2 - Value,Organization 1 - Type,Organization 1 - Name,Notes',
      'Grace Hopper,Grace,,Hopper,,* Home,grace@example.com,Mobile,+1 202-555-0111 ::: +1 202-555-0112,Work,+1 202-555-0113,,Navy,Admiral',
      'Alan Turing,Alan,M,Turing,,* Work,alan@example.org,Mobile,(202) 555-0114,,,,Bletchley,',
    ].join('\n');
    const res = await uploadCsv(org.key, csv);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data, { imported: 2, updated: 0, rejected: 0, errors: [] });
    const grace = await contactByPhone(org.id, '+12025550111');
    assert.equal(grace?.firstName, 'Grace');
    assert.equal(grace?.lastName, 'Hopper');
    assert.equal(grace?.email, 'grace@example.com');
    assert.equal(grace?.company, 'Navy');
    assert.equal(grace?.customFields.Notes, 'Admiral');
    assert.equal((await contactByPhone(org.id, '+12025550114'))?.company, 'Bletchley');
  });

  test('an Outlook export: the mobile phone wins, another phone is the fallback', async () => {
    const org = await tenant();
    const csv = [
      'First Name,Middle Name,Last Name,Title,E-mail Address,Home Phone,Business Phone,Mobile Phone,Primary Phone,Company,Job Title',
      'Katherine,,Johnson,Dr,kj@example.com,+12025550121,+12025550122,+12025550123,,NASA,Mathematician',
      'Dorothy,,Vaughan,,,,+12025550124,,,NASA,',
    ].join('\r\n');
    const res = await uploadCsv(org.key, csv);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.imported, 2);
    const katherine = await contactByPhone(org.id, '+12025550123');
    assert.equal(katherine?.email, 'kj@example.com');
    assert.equal(katherine?.customFields['Job Title'], 'Mathematician');
    assert.equal((await contactByPhone(org.id, '+12025550124'))?.firstName, 'Dorothy');
  });

  test('a BOM, CRLF line ends, quoted fields with commas, quotes and newlines', async () => {
    const org = await tenant();
    const csv =
      '\ufeffphone,first_name,company,notes\r\n' +
      '2025550131,"Smith, Jr.","Acme, Inc.","line one\r\nline two"\r\n' +
      '2025550132,"O""Brien",Beta,\r\n';
    const res = await uploadCsv(org.key, csv);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.imported, 2);
    const smith = await contactByPhone(org.id, '+12025550131');
    assert.equal(smith?.firstName, 'Smith, Jr.');
    assert.equal(smith?.company, 'Acme, Inc.');
    assert.equal(smith?.customFields.notes, 'line one\r\nline two');
    assert.equal((await contactByPhone(org.id, '+12025550132'))?.firstName, 'O"Brien');
  });

  test('semicolon-separated (European spreadsheets) and tab-separated files', async () => {
    const org = await tenant();
    const semicolons = 'Handy;Vorname;Téléphone;Firma\n;Jörg;+49 170 1234567;"Muster; GmbH"\n';
    const semi = await uploadCsv(org.key, semicolons);
    assert.equal(semi.status, 200, JSON.stringify(semi.body));
    const jorg = await contactByPhone(org.id, '+491701234567');
    assert.equal(jorg?.company, 'Muster; GmbH');
    assert.equal(jorg?.firstName, 'Jörg');
    const tabs = 'mobile\tfirst name\tlast name\n2025550141\tTab\tSeparated\n';
    const tab = await uploadCsv(org.key, tabs);
    assert.equal(tab.status, 200);
    assert.equal((await contactByPhone(org.id, '+12025550141'))?.lastName, 'Separated');
  });

  test('header names in any case and spacing; consent columns validated and stored', async () => {
    const org = await tenant();
    const csv =
      'PHONE_NUMBER,First Name,Consent,Consent Date,consent method\n2025550151,Ann,yes,2026-03-01,web form\n';
    const res = await uploadCsv(org.key, csv);
    assert.equal(res.status, 200);
    const ann = await contactByPhone(org.id, '+12025550151');
    assert.deepEqual(ann?.consent, {
      status: 'granted',
      date: '2026-03-01T00:00:00.000Z',
      method: 'web_form',
    });
  });

  test('existing phones are updated, not duplicated; empty cells keep what was there; an opt-out survives', async () => {
    const org = await tenant();
    const created = await t.request('POST', '/api/v2/contacts', {
      apiKey: org.key,
      body: { phone: '+12025550161', firstName: 'Old', email: 'keep@example.com' },
    });
    await t.request('POST', `/api/v2/contacts/${created.body.data.id}/opt-out`, { apiKey: org.key });
    const csv = 'phone,first_name,email,consent\n+12025550161,New,,yes\n+12025550162,Fresh,,\n';
    const res = await uploadCsv(org.key, csv);
    assert.deepEqual(res.body.data, { imported: 1, updated: 1, rejected: 0, errors: [] });
    const contact = await contactByPhone(org.id, '+12025550161');
    assert.equal(contact?.id, created.body.data.id);
    assert.equal(contact?.firstName, 'New');
    assert.equal(contact?.email, 'keep@example.com');
    assert.equal(contact?.consent.status, 'granted');
    assert.equal(contact?.optedOut, true, 'an import never clears an opt-out');
    assert.equal(await contactCount(org.id), 2);
  });

  test('a phone twice in one file: the later row wins', async () => {
    const org = await tenant();
    const res = await uploadCsv(org.key, 'phone,first_name\n2025550171,First\n(202) 555-0171,Second\n');
    assert.equal(res.status, 200);
    assert.equal(res.body.data.imported, 1);
    assert.equal((await contactByPhone(org.id, '+12025550171'))?.firstName, 'Second');
  });

  test('a phone twice in one file, thousands of rows apart: the later row wins, counted once', async () => {
    // Far enough apart to fall in different staging batches on either engine.
    const org = await tenant();
    const rows = ['phone,first_name,email,consent', '+12025550172,Early,early@example.com,yes'];
    for (let i = 0; i < 6000; i++) rows.push(`+1203555${String(i).padStart(4, '0')},Row ${i},,`);
    rows.push('+12025550172,Late,,yes');
    const res = await uploadCsv(org.key, rows.join('\n'));
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data, { imported: 6001, updated: 0, rejected: 0, errors: [] });
    const contact = await contactByPhone(org.id, '+12025550172');
    assert.equal(contact?.firstName, 'Late');
    assert.equal(contact?.email, null, 'the later row replaces the earlier one; it is not merged with it');
    const [events] = await t.ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM consent_events WHERE organization_id = $1 AND phone = $2',
      [org.id, '+12025550172'],
    );
    assert.equal(events!.n, 1);
    assert.equal(await contactCount(org.id), 6001);
  });

  test('rejected rows are reported with their row numbers and reasons, at most 20', async () => {
    const org = await tenant();
    const rows = ['phone,name,consent'];
    for (let i = 0; i < 30; i++) rows.push(`not-a-phone-${i},Bad,`);
    rows.push('2025550181,Good,');
    rows.push('2025550182,Bad consent,perhaps');
    const res = await uploadCsv(org.key, rows.join('\n'));
    assert.equal(res.status, 200);
    assert.equal(res.body.data.imported, 1);
    assert.equal(res.body.data.rejected, 31);
    assert.equal(res.body.data.errors.length, 20);
    assert.deepEqual(res.body.data.errors[0], { row: 2, reason: 'invalid phone number "not-a-phone-0"' });
    assert.equal(res.body.data.errors[19].row, 21);
  });

  test('a JSON contacts array, with camelCase or CSV-style keys', async () => {
    const org = await tenant();
    const res = await t.request('POST', '/api/v2/contacts/import', {
      apiKey: org.key,
      body: {
        contacts: [
          { phone: '2025550191', firstName: 'Json', lastName: 'Camel', plan: 'gold' },
          { phone_number: '+12025550192', first_name: 'Snake', consent: 'no' },
          { phone: 'nope' },
        ],
      },
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.imported, 2);
    assert.deepEqual(res.body.data.errors, [{ row: 3, reason: 'invalid phone number "nope"' }]);
    const camel = await contactByPhone(org.id, '+12025550191');
    assert.equal(camel?.lastName, 'Camel');
    assert.equal(camel?.customFields.plan, 'gold');
    assert.equal((await contactByPhone(org.id, '+12025550192'))?.consent.status, 'denied');
  });

  test('a timezone column: stored as Intl spells it, an unknown zone rejects its row, an empty cell is none', async () => {
    const org = await tenant();
    const kept = await t.request('POST', '/api/v2/contacts', {
      apiKey: org.key,
      body: { phone: '+12025550401', timezone: 'Asia/Tokyo' },
    });
    assert.equal(kept.status, 201);
    const csv = [
      'phone,first_name,Time Zone',
      '+12025550401,Kept,', // an existing contact: the empty cell keeps its zone
      '+12025550402,Lower,america/chicago',
      '+12025550403,Bad,Mars/Olympus',
      '+12025550404,None,',
      '+12025550405,Utc,UTC',
      '+12025550406,Offset,+05:00',
    ].join('\n');
    const res = await uploadCsv(org.key, csv);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data, {
      imported: 3,
      updated: 1,
      rejected: 2,
      errors: [
        {
          row: 4,
          reason: 'timezone "Mars/Olympus" is not an IANA time zone name (such as America/New_York)',
        },
        { row: 7, reason: 'timezone "+05:00" is not an IANA time zone name (such as America/New_York)' },
      ],
    });
    assert.equal((await contactByPhone(org.id, '+12025550401'))?.timezone, 'Asia/Tokyo');
    assert.equal((await contactByPhone(org.id, '+12025550401'))?.firstName, 'Kept');
    assert.equal((await contactByPhone(org.id, '+12025550402'))?.timezone, 'America/Chicago');
    assert.equal(await contactByPhone(org.id, '+12025550403'), undefined, 'the rejected row changed nothing');
    assert.equal((await contactByPhone(org.id, '+12025550404'))?.timezone, null);
    assert.equal((await contactByPhone(org.id, '+12025550405'))?.timezone, 'UTC');
    assert.deepEqual(
      (await contactByPhone(org.id, '+12025550402'))?.customFields,
      {},
      'a recognised column, not a custom field',
    );

    // A later import with a zone replaces the stored one.
    const again = await uploadCsv(org.key, 'phone,timezone\n+12025550401,Europe/Berlin\n');
    assert.deepEqual(again.body.data, { imported: 0, updated: 1, rejected: 0, errors: [] });
    assert.equal((await contactByPhone(org.id, '+12025550401'))?.timezone, 'Europe/Berlin');
    const read = await t.request('GET', `/api/v2/contacts/${kept.body.data.id}`, { apiKey: org.key });
    assert.equal(read.body.data.timezone, 'Europe/Berlin');
  });

  test('a JSON contacts array with timezone: null is none, an unknown zone is reported', async () => {
    const org = await tenant();
    const res = await t.request('POST', '/api/v2/contacts/import', {
      apiKey: org.key,
      body: {
        contacts: [
          { phone: '2025550411', timezone: 'Europe/London' },
          { phone: '2025550412', timezone: null },
          { phone: '2025550413', timezone: 'Atlantis/Capital' },
          { phone: '2025550414', timezone: 42 },
        ],
      },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data, {
      imported: 2,
      updated: 0,
      rejected: 2,
      errors: [
        {
          row: 3,
          reason: 'timezone "Atlantis/Capital" is not an IANA time zone name (such as America/New_York)',
        },
        { row: 4, reason: 'timezone "42" is not an IANA time zone name (such as America/New_York)' },
      ],
    });
    assert.equal((await contactByPhone(org.id, '+12025550411'))?.timezone, 'Europe/London');
    assert.equal((await contactByPhone(org.id, '+12025550412'))?.timezone, null);
    assert.equal(await contactByPhone(org.id, '+12025550413'), undefined);
  });

  test('every row with an unknown time zone: CONTACTS_IMPORT_NO_VALID_ROWS, nothing imported', async () => {
    const org = await tenant();
    const res = await uploadCsv(org.key, 'phone,tz\n+12025550421,Nowhere/Land\n+12025550422,Eastern\n');
    assert.equal(res.status, 400);
    assert.ok(isShapeB(res.body));
    assert.equal(res.body.code, 'CONTACTS_IMPORT_NO_VALID_ROWS');
    assert.equal(res.body.data.errors.length, 2);
    assert.match(res.body.data.errors[0].reason, /^timezone "Nowhere\/Land"/);
    assert.equal(await contactCount(org.id), 0);
  });

  describe('refusals: the spec codes, and nothing imported', () => {
    test('CONTACTS_IMPORT_NO_INPUT: no body, an empty object, an empty array, a multipart form without `file`', async () => {
      const org = await tenant();
      for (const body of [undefined, {}, { contacts: [] }]) {
        const res = await t.request('POST', '/api/v2/contacts/import', { apiKey: org.key, body });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.ok(isShapeB(res.body));
        assert.equal(res.body.code, 'CONTACTS_IMPORT_NO_INPUT');
      }
      const wrongField = await uploadCsv(org.key, 'phone\n2025550199\n', 'attachment');
      assert.equal(wrongField.status, 400);
      assert.equal(wrongField.body.code, 'CONTACTS_IMPORT_NO_INPUT');
      assert.equal(await contactCount(org.id), 0);
    });

    test('CONTACTS_IMPORT_EMPTY_FILE: an empty file, a header only, every phone blank', async () => {
      const org = await tenant();
      for (const csv of ['', '\ufeff', 'phone,name\n', 'phone,name\r\n\r\n', 'phone,name\n,Ann\n  ,Bob\n']) {
        const res = await uploadCsv(org.key, csv);
        assert.equal(res.status, 400, JSON.stringify(csv));
        assert.equal(res.body.code, 'CONTACTS_IMPORT_EMPTY_FILE');
      }
      assert.equal(await contactCount(org.id), 0);
    });

    test('CONTACTS_IMPORT_NO_VALID_ROWS: every row rejected, with data.errors (first 20)', async () => {
      const org = await tenant();
      const cases = [
        'phone\n12\n34\n',
        'phone,consent\n2025550201,maybe\n',
        'phone,consent_date\n2025550202,not a date\n',
        'phone,consent_date\n2025550203,2999-01-01\n',
        'phone,consent_method\n2025550204,carrier pigeon\n',
        'name,email\nAnn,ann@example.com\n',
      ];
      for (const csv of cases) {
        const res = await uploadCsv(org.key, csv);
        assert.equal(res.status, 400, csv);
        assert.ok(isShapeB(res.body));
        assert.equal(res.body.code, 'CONTACTS_IMPORT_NO_VALID_ROWS');
        assert.ok(Array.isArray(res.body.data.errors) && res.body.data.errors.length > 0);
        assert.equal(typeof res.body.data.errors[0].row, 'number');
        assert.equal(typeof res.body.data.errors[0].reason, 'string');
      }
      const many = ['phone', ...Array.from({ length: 25 }, (_, i) => `bad${i}`)].join('\n');
      const res = await uploadCsv(org.key, many);
      assert.equal(res.body.data.errors.length, 20);
      assert.match(res.body.error, /25 rows/);
      const noColumn = await uploadCsv(org.key, 'name,email\nAnn,ann@example.com\n');
      assert.match(noColumn.body.data.errors[0].reason, /no recognised phone column/);
      assert.equal(await contactCount(org.id), 0);
    });

    test('a malformed JSON contacts field is 400', async () => {
      const org = await tenant();
      for (const contacts of ['phone', [1, 2], [null]]) {
        const res = await t.request('POST', '/api/v2/contacts/import', {
          apiKey: org.key,
          body: { contacts },
        });
        assert.equal(res.status, 400, JSON.stringify(contacts));
      }
    });

    test('one transaction: a file that breaks after the first batch imports nothing', async () => {
      const org = await tenant();
      const rows = ['phone,name'];
      for (let i = 0; i < 1500; i++) rows.push(`+1202555${String(1000 + i).padStart(4, '0')},Row ${i}`);
      rows.push(`+12025559999,"${'x'.repeat(1_100_000)}"`); // one record over the 1 MB record limit
      const res = await uploadCsv(org.key, rows.join('\n'));
      assert.equal(res.status, 400);
      assert.match(res.body.error, /could not be read/);
      assert.equal(await contactCount(org.id), 0);
    });
  });

  test('the import-completed event is recorded', async () => {
    const org = await tenant();
    await uploadCsv(org.key, 'phone\n2025550211\n2025550212\nbad\n');
    const rows = await t.ctx.db.query<any>(
      "SELECT data FROM events WHERE organization_id = $1 AND type = 'contact.import_completed'",
      [org.id],
    );
    assert.deepEqual(
      rows.map((r) => r.data),
      [{ imported: 2, updated: 0, rejected: 1 }],
    );
  });

  test('imports are per organization: the same phones elsewhere are untouched', async () => {
    const a = await tenant();
    const b = await tenant();
    await uploadCsv(a.key, 'phone,first_name\n2025550221,A\n');
    await uploadCsv(b.key, 'phone,first_name\n2025550221,B\n');
    assert.equal((await contactByPhone(a.id, '+12025550221'))?.firstName, 'A');
    assert.equal((await contactByPhone(b.id, '+12025550221'))?.firstName, 'B');
  });

  test('a CSV of 100,000 rows imports in one request', async () => {
    const org = await tenant();
    const lines = ['phone,first_name,last_name,email'];
    for (let i = 0; i < 100_000; i++) {
      // Valid US numbers: area codes 201-299 with exchange 555 and four digits.
      const area = 201 + Math.floor(i / 10_000);
      lines.push(`+1${area}555${String(i % 10_000).padStart(4, '0')},First${i},Last${i},u${i}@example.com`);
    }
    const res = await uploadCsv(org.key, lines.join('\n'));
    assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 500));
    assert.equal(res.body.data.imported + res.body.data.rejected, 100_000);
    assert.equal(await contactCount(org.id), res.body.data.imported);
    assert.ok(res.body.data.imported > 90_000, `imported ${res.body.data.imported}`);
  });
});
