// Regression tests for what a hostile or careless client found (issue 11), each fixed at its mechanism:
// secrets and personal data never reach the log; NUL and invalid Unicode are refused in every string before
// SQL; the router's own refusals come in our shapes with API-Version; a trickled request is cut off;
// integers beyond 32 bits and clock moves beyond a century are a 400, not a 500.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { serializeError } from '../src/platform/log.ts';
import { isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, sender } from './helpers/messaging.ts';
import { trickleRequest } from './helpers/raw-http.ts';

describe('finding 1: the log carries no secret, statement parameter or personal data', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      captureLog: true,
      extend: (app, ctx) => {
        // A real database error whose statement carries a customer's value.
        app.get('/api/v2/test/database-error', async () => {
          await ctx.db.query('SELECT $1::integer AS n', ['+12025550199 jane@example.com']);
          return { success: true };
        });
      },
    });
  });
  after(() => t.close());

  test('registering with a NUL in the name is refused, and neither the e-mail nor a hash is logged', async () => {
    const res = await t.request('POST', '/v2/portal/auth/register', {
      body: {
        email: 'leak@example.com',
        password: 'a-long-password-1',
        name: 'a\u0000b',
        organizationName: 'X',
      },
    });
    assert.equal(res.status, 400, res.text);
    assert.ok(isShapeA(res.body));
    const log = t.logs().join('\n');
    assert.doesNotMatch(log, /leak@example\.com/);
    assert.doesNotMatch(log, /\$argon2id\$/);
  });

  test('a database error is logged with its code, without the statement, its parameters or the value', async () => {
    const res = await t.request('GET', '/api/v2/test/database-error');
    assert.equal(res.status, 500);
    const line = t.logs().find((entry) => entry.includes('request failed'));
    assert.ok(line, 'the failure is logged');
    const logged = JSON.parse(line!);
    assert.match(logged.err.code, /^[0-9A-Z]{5}$/, 'the SQLSTATE stays: operators need it');
    assert.doesNotMatch(line!, /12025550199|jane@example\.com/);
    assert.deepEqual(Object.keys(logged.err).sort(), ['code', 'message', 'stack', 'type']);
  });

  test('the error serializer keeps type, message, code and stack only', () => {
    const error = Object.assign(
      new Error('duplicate key value violates unique constraint "contacts_phone_key"'),
      {
        code: '23505',
        severity: 'ERROR',
        detail: 'Key (phone)=(+12025550123) already exists.',
        query: 'INSERT INTO users (email, password_hash) VALUES ($1, $2)',
        params: ['jane@example.com', '$argon2id$v=19$m=19456'],
        parameters: ['x'],
        where: 'SQL statement',
      },
    );
    const serialized = serializeError(error);
    assert.deepEqual(Object.keys(serialized).sort(), ['code', 'message', 'stack', 'type']);
    assert.match(String(serialized.message), /"contacts_phone_key"/, 'identifiers are kept');
    const quoting = serializeError(
      Object.assign(new Error('invalid input syntax for type integer: "+1 202 555 0199"'), {
        severity: 'ERROR',
      }),
    );
    assert.equal(quoting.message, 'invalid input syntax for type integer: "[value]"');
  });
});

describe('findings 3 and 6: unstorable text and malformed paths are 400 in the right shape', () => {
  let t: TestApp;
  let apiKey: string;
  before(async () => {
    t = await startTestApp();
    apiKey = (await sender(t, {}, { number: null })).key;
  });
  after(() => t.close());

  const refusals: [string, string, Record<string, unknown> | string | undefined][] = [
    ['a NUL in a path id', '/api/v2/contacts/%00', undefined],
    ['a NUL in a query string', '/api/v2/contacts?search=a%00b', undefined],
    ['a NUL in a JSON string', '/api/v2/contacts', { phone: '+12025550123', firstName: 'a\u0000b' }],
    ['a NUL in a JSON key', '/api/v2/contacts', { phone: '+12025550123', customFields: { 'a\u0000': 'x' } }],
    ['a lone surrogate in JSON', '/api/v2/contacts', '{"phone":"+12025550123","firstName":"\\ud800x"}'],
  ];
  for (const [name, path, body] of refusals) {
    test(name, async () => {
      const res =
        body === undefined
          ? await t.request('GET', path, { apiKey })
          : await t.request('POST', path, {
              apiKey,
              ...(typeof body === 'string'
                ? { rawBody: body, headers: { 'content-type': 'application/json' } }
                : { body }),
            });
      assert.equal(res.status, 400, res.text);
      assert.ok(isShapeB(res.body), res.text);
      assert.match(res.body.error, /NUL characters or invalid Unicode/);
      assert.equal(await countRows(t, 'SELECT 1 FROM contacts'), 0, 'nothing was written');
    });
  }

  test('a path that is not valid percent-encoding is a 400 in Shape B with API-Version', async () => {
    const res = await t.request('GET', '/api/v2/contacts/%ff%fe', { apiKey });
    assert.equal(res.status, 400);
    assert.ok(isShapeB(res.body), res.text);
    assert.equal(res.headers.get('api-version'), '2026-09-01');
  });

  test('the same on a Shape A path', async () => {
    const res = await t.request('GET', '/v2/portal/contacts/%ff%fe');
    assert.equal(res.status, 400);
    assert.ok(isShapeA(res.body), res.text);
    assert.equal(res.headers.get('api-version'), '2026-09-01');
  });

  test('an 8,000-character path is a 414 in our shape that does not echo the path', async () => {
    const long = 'a'.repeat(8000);
    const res = await t.request('GET', `/api/v2/contacts/${long}`, { apiKey });
    assert.equal(res.status, 414);
    assert.ok(isShapeB(res.body), res.text.slice(0, 200));
    assert.equal(res.headers.get('api-version'), '2026-09-01');
    assert.ok(!res.text.includes('aaaaaaaaaa'), 'the path is not echoed');
  });
});

describe('finding 7: a client that trickles its request is cut off', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { requestTimeoutSeconds: 1 } });
  });
  after(() => t.close());

  test('a body sent a byte at a time never finishes: the server answers 408 and closes the connection', async () => {
    const { head } = await trickleRequest(t.url, '/v2/portal/auth/login');
    assert.match(head, /^HTTP\/1\.1 408/);
  });
});

describe('finding 8: the operator API bounds what it takes', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('an integer of 2^31 or more is a 400, and no organization is created', async () => {
    for (const field of ['dailyLimitSegments', 'monthlyAllowanceSegments', 'trialMessageLimit']) {
      const before = await t.ctx.organizations.count();
      const res = await t.admin('POST', '/organizations', { name: 'Big', [field]: 2 ** 31 });
      assert.equal(res.status, 400, res.text);
      assert.ok(isShapeA(res.body));
      assert.equal(await t.ctx.organizations.count(), before);
    }
    const ok = await t.admin('POST', '/organizations', { name: 'Fits', dailyLimitSegments: 2 ** 31 - 1 });
    assert.equal(ok.status, 201, ok.text);
  });

  test('moving the test clock past the representable range is a 400 and leaves the clock alone', async () => {
    const before = t.ctx.clock.nowMs();
    const res = await t.admin('POST', '/test/clock', { advanceSeconds: 1e14 });
    assert.equal(res.status, 400, res.text);
    assert.ok(Math.abs(t.ctx.clock.nowMs() - before) < 60_000);
  });
});

describe('findings 4 and 5: imports obey the contact rules, and a broken upload is a 400', () => {
  let t: TestApp;
  let apiKey: string;
  before(async () => {
    t = await startTestApp();
    apiKey = (await sender(t, {}, { number: null })).key;
  });
  after(() => t.close());

  const contacts = () => countRows(t, 'SELECT 1 FROM contacts');

  test('a JSON import refuses every row a PATCH would refuse, and stores none of them', async () => {
    const manyFields = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`field${i}`, 'x']));
    const res = await t.request('POST', '/api/v2/contacts/import', {
      apiKey,
      body: {
        contacts: [
          { phone: '+12025550101', firstName: 'x'.repeat(100_000) },
          { phone: '+12025550102', email: 'not an e-mail' },
          { phone: '+12025550103', notes: 'y'.repeat(1_000_000) },
          { phone: '+12025550104', ...manyFields },
        ],
      },
    });
    assert.equal(res.status, 400, res.text.slice(0, 300));
    assert.equal(res.body.code, 'CONTACTS_IMPORT_NO_VALID_ROWS');
    const reasons = res.body.data.errors.map((error: { reason: string }) => error.reason);
    assert.equal(reasons.length, 4);
    assert.match(reasons[0], /firstName/);
    assert.match(reasons[1], /email/);
    assert.match(reasons[2], /customFields/);
    assert.match(reasons[3], /customFields/);
    assert.equal(await contacts(), 0);
  });

  test('the same field rules hold for create and PATCH', async () => {
    const created = await t.request('POST', '/api/v2/contacts', { apiKey, body: { phone: '+12025550105' } });
    assert.equal(created.status, 201);
    const patched = await t.request('PATCH', `/api/v2/contacts/${created.body.data.id}`, {
      apiKey,
      body: { customFields: { [`${'k'.repeat(101)}`]: 'v' } },
    });
    assert.equal(patched.status, 400, patched.text);
  });

  test('a CSV cell holding NUL rejects its row instead of failing the import', async () => {
    const csv = 'phone,first_name\n+12025550106,Ann\n+12025550107,B\u0000b\n';
    const boundary = 'hardening';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="c.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`;
    const res = await t.request('POST', '/api/v2/contacts/import', {
      apiKey,
      rawBody: body,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.imported, 1);
    assert.equal(res.body.data.rejected, 1);
    assert.match(res.body.data.errors[0].reason, /NUL/);
  });

  for (const [name, contentType, body] of [
    ['without a boundary', 'multipart/form-data', 'garbage'],
    ['with the wrong boundary', 'multipart/form-data; boundary=right', '--wrong\r\n\r\nx\r\n--wrong--'],
    [
      'cut short',
      'multipart/form-data; boundary=x',
      '--x\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\nphone\r\n+1202',
    ],
  ] as const) {
    test(`a multipart body ${name} is a 400 in Shape B`, async () => {
      const before = await contacts();
      const res = await t.request('POST', '/api/v2/contacts/import', {
        apiKey,
        rawBody: body,
        headers: { 'content-type': contentType },
      });
      assert.equal(res.status, 400, res.text);
      assert.ok(isShapeB(res.body), res.text);
      assert.equal(await contacts(), before);
    });
  }
});

describe('finding 2: one import does not stall every tenant', () => {
  let t: TestApp;
  let apiKey: string;
  before(async () => {
    t = await startTestApp();
    apiKey = (await sender(t, {}, { number: null })).key;
  });
  after(() => t.close());

  const multipart = (csv: string) => {
    const boundary = 'bulk';
    return {
      rawBody: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="c.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    };
  };
  const csvOf = (rows: number, from = 0) =>
    `phone,first_name\n${Array.from({ length: rows }, (_, i) => `+1202${String(5_000_000 + from + i).slice(-7)},N${i}`).join('\n')}\n`;
  const contacts = () => countRows(t, 'SELECT 1 FROM contacts');

  test('an upload that declares more than the limit is refused with 413 before it is read', async () => {
    const { port } = new URL(t.url);
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString();
    });
    const answered = new Promise<void>((resolve) => socket.on('data', () => resolve()));
    socket.write(
      `POST /api/v2/contacts/import HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\n` +
        'Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 55574528\r\n\r\n--b\r\n',
    );
    await answered;
    socket.destroy();
    assert.match(received, /^HTTP\/1\.1 413/);
    assert.match(received, /"success":false/);
  });

  test('other requests are served while a large import is in progress', async () => {
    const importing = t.request('POST', '/api/v2/contacts/import', { apiKey, ...multipart(csvOf(30_000)) });
    let settled = false;
    void importing.then(() => {
      settled = true;
    });
    // Wait until the import is under way (rows staged or applied), then ask for something else.
    for (let i = 0; i < 2000 && !settled; i++) {
      const [staged] = await t.ctx.db.query<{ n: number }>(
        'SELECT (SELECT count(*) FROM contact_import_rows) + (SELECT count(*) FROM contacts) AS n',
      );
      if (staged!.n > 0) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const health = await t.request('GET', '/health');
    assert.equal(health.status, 200);
    assert.equal(settled, false, 'the health check had to wait for the whole import');
    const res = await importing;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.imported, 30_000);
    assert.equal(await contacts(), 30_000);
    assert.equal(await countRows(t, 'SELECT 1 FROM contact_import_rows'), 0, 'nothing staged is left behind');
  });

  test('a file that turns out unreadable after thousands of good rows changes no contact', async () => {
    const before = await contacts();
    const csv = `${csvOf(3000, 100_000)}+12025550999,${'z'.repeat(1_100_000)}\n`;
    const res = await t.request('POST', '/api/v2/contacts/import', { apiKey, ...multipart(csv) });
    assert.equal(res.status, 400, res.text.slice(0, 200));
    assert.ok(isShapeB(res.body));
    assert.equal(await contacts(), before);
    assert.equal(await countRows(t, 'SELECT 1 FROM contact_import_rows'), 0);
  });
});
