// The fuzz harness (issue 11): every operation of /openapi.json is called with generated inputs, most of them
// malformed (wrong types, NUL, lone surrogates, huge numbers and strings, broken JSON, bodies nested thousands
// deep, wrong content types, odd ids), with a fixed seed and a bounded count. Whatever a client sends:
//   - no answer is a 5xx;
//   - every refusal has its interface's shape (Shape B under /api/v2, Shape A elsewhere) and API-Version;
//   - nothing the client sent, and no credential, reaches the log.
// Operations are read from the document, so a new route is fuzzed without a test written for it. Two test files
// share the harness (fuzz.test.ts: the developer API; fuzz-portal.test.ts: every other interface), so that each
// runs within the suite's time bound on a busy machine and the two run side by side.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { ADMIN_TOKEN, createOrganization, isShapeA, isShapeB, startTestApp, type TestApp } from './app.ts';
import { fetchHead, type Operation, operationsOf, type Schema } from './openapi.ts';
import { createUser, PASSWORD } from './portal.ts';

const SEED = 20261123;
// 50 requests per operation: with ~170 operations the run stays within CI's time budget on both engines.
const RUNS_PER_OPERATION = 50;
/** Marks every string the harness sends in a query or body, so its appearance in the log is caught. */
const CANARY = 'ZQXCANARY';
const nastyText = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udc00x',
    '%00',
    '%',
    '../../etc/passwd',
    "'; DROP TABLE contacts;--",
    '{{first_name}}',
    '{{nope}}',
    '+12025550123',
    '12025550123',
    '1e309',
    '-1',
    '2147483648',
    '9007199254740993',
    'null',
    'true',
    '[]',
    '{}',
    'x'.repeat(5_000),
    '😀'.repeat(300),
    'https://127.0.0.1/hook',
    'http://[::1]/x',
  ),
);
const canaried = nastyText.map((text) => `${CANARY}${text}`);
const text = fc.oneof(nastyText, canaried);
const leaf = fc.oneof(
  text,
  fc.integer(),
  fc.constantFrom(0, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e308, -0, 0.5),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
);
const anyJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(text, tie('value'), { maxKeys: 4 }),
})).value;

/** A value that mostly fits `schema`, so requests get past validation and reach the rules and the SQL. */
function fitting(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return anyJson;
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((option) => fitting(option, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      if (schema.format === 'email') return fc.oneof(fc.emailAddress(), text);
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      return schema.maxLength !== undefined ? text.map((s) => s.slice(0, schema.maxLength)) : text;
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1000, max: Math.min(schema.maximum ?? 1000, 2 ** 31 - 1) });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(fitting(schema.items, depth + 1), { maxLength: 3 });
    case 'object': {
      const properties = schema.properties ?? {};
      const names = Object.keys(properties);
      if (names.length === 0) return fc.dictionary(text, leaf, { maxKeys: 3 });
      return fc.record(
        Object.fromEntries(names.map((name) => [name, fitting(properties[name], depth + 1)])),
        { requiredKeys: schema.required?.filter((name) => names.includes(name)) ?? [] },
      );
    }
    default:
      return anyJson;
  }
}

/** One value that may or may not fit: each field is independently right-ish or garbage. */
function maybeFitting(schema: Schema | undefined): fc.Arbitrary<unknown> {
  if (schema?.type === 'object' && schema.properties) {
    const names = Object.keys(schema.properties);
    return fc.record(
      Object.fromEntries(names.map((name) => [name, fc.oneof(fitting(schema.properties![name]), anyJson)])),
      { requiredKeys: [] },
    );
  }
  return fc.oneof(fitting(schema), anyJson);
}

interface Generated {
  pathValues: Record<string, string>;
  query: [string, string][];
  body?: { raw: string; contentType: string };
  badVersion: boolean;
}

function requestFor(operation: Operation): fc.Arbitrary<Generated> {
  const pathNames = operation.parameters.filter((p) => p.in === 'path').map((p) => p.name);
  const queryParams = operation.parameters.filter((p) => p.in === 'query');
  const pathValue = fc.oneof(
    fc.constantFrom('ct_0000000000000000000000000', 'msg_missing', 'wh_x', 'org_x', '0', '-1'),
    nastyText.map((s) => encode(s.slice(0, 300))),
    fc.constantFrom('%ff%fe', '%E0%A4%A', '..%2F..', 'a'.repeat(250)),
  );
  const queryValue = fc.oneof(
    text.map((s) => s.slice(0, 200)),
    fc.integer().map(String),
    fc.constantFrom('', '0', '-5', '101', '2147483648', 'true', 'abc'),
  );
  const query = fc.array(
    fc.tuple(
      queryParams.length > 0 ? fc.oneof(fc.constantFrom(...queryParams.map((p) => p.name)), text) : text,
      queryValue,
    ),
    { maxLength: 4 },
  );
  const body = operation.body
    ? fc.oneof(
        maybeFitting(operation.body).map((value) => ({
          raw: JSON.stringify(value),
          contentType: 'application/json',
        })),
        anyJson.map((value) => ({ raw: JSON.stringify(value) ?? 'null', contentType: 'application/json' })),
        fc.constantFrom(
          { raw: '{"unterminated": ', contentType: 'application/json' },
          // Nesting deeper than any walk of ours may recurse (issue 31: 8,000 brackets overflowed the stack).
          { raw: `${'['.repeat(8_000)}${']'.repeat(8_000)}`, contentType: 'application/json' },
          { raw: `${'{"a":'.repeat(5_000)}null${'}'.repeat(5_000)}`, contentType: 'application/json' },
          { raw: `{"name":${'['.repeat(70)}${']'.repeat(70)}}`, contentType: 'application/json' },
          { raw: '', contentType: 'application/json' },
          { raw: `${CANARY}=1`, contentType: 'application/x-www-form-urlencoded' },
          { raw: `just ${CANARY} text`, contentType: 'text/plain' },
          {
            raw: `--x\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\nphone\r\n+1202`,
            contentType: 'multipart/form-data; boundary=x',
          },
          { raw: 'garbage', contentType: 'multipart/form-data' },
          { raw: '--y\r\n\r\n--y--', contentType: 'multipart/form-data; boundary=wrong' },
        ),
      )
    : fc.option(
        anyJson.map((value) => ({ raw: JSON.stringify(value) ?? 'null', contentType: 'application/json' })),
        {
          nil: undefined,
        },
      );
  return fc.record({
    pathValues: fc.record(Object.fromEntries(pathNames.map((name) => [name, pathValue]))) as fc.Arbitrary<
      Record<string, string>
    >,
    query,
    body,
    badVersion: fc.integer({ min: 0, max: 29 }).map((n) => n === 0),
  });
}

/** encodeURIComponent, except that a lone surrogate is sent as its (invalid) UTF-8 bytes instead of throwing. */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...text]
      .map((character) => (/[\uD800-\uDFFF]/.test(character) ? '%ED%A0%80' : encodeURIComponent(character)))
      .join('');
  }
}

/**
 * Fuzzes the operations of /openapi.json whose path `include` takes; at least `minimum` operations and fifty
 * requests for each (so a filter that stopped matching fails instead of passing on nothing).
 */
export function fuzzSuite(name: string, include: (path: string) => boolean, minimum: number): void {
  describe(name, () => {
    let t: TestApp;
    let operations: Operation[];
    let apiKey: string;
    let sessionToken: string;
    let user: { id: string; organizationId: string };
    const secrets: string[] = [ADMIN_TOKEN, PASSWORD];

    before(async () => {
      t = await startTestApp({ captureLog: true });
      const org = await createOrganization(t, {
        plan: 'enterprise',
        subscriptionState: 'paid',
        cardVerified: true,
      });
      await t.admin('POST', `/organizations/${org.id}/numbers`, { number: '+12025550100', type: 'local' });
      const created = await createUser(t, { role: 'owner', organizationIds: [org.id] });
      user = { id: created.id, organizationId: org.id };
      apiKey = (await t.ctx.apiKeys.create(org.id, { name: 'fuzz', scopes: ['*'] })).secret;
      secrets.push(apiKey);
      await mintSession();
      const document = (await t.request('GET', '/openapi.json')).body;
      operations = operationsOf(document).filter((operation) => include(operation.path));
    });
    after(() => t.close());

    /** A session made directly, without HTTP sign-in, so its limits never stop the harness. */
    async function mintSession() {
      const { issued } = await t.ctx.sessions.create({
        userId: user.id,
        organizationId: user.organizationId,
        remember: true,
      });
      sessionToken = issued.token;
      secrets.push(issued.token);
    }

    test('no 5xx, no wrong shape, no leaked input or secret', async () => {
      const failures: string[] = [];
      let sent = 0;
      const timing: [number, string][] = [];
      for (const [index, operation] of operations.entries()) {
        const startedAt = performance.now();
        const samples = fc.sample(requestFor(operation), { seed: SEED + index, numRuns: RUNS_PER_OPERATION });
        for (const sample of samples) {
          // Request-rate windows would otherwise refuse everything after the first minute's budget.
          if (sent % 25 === 0) t.ctx.clock.advance(61);
          sent++;
          let path = operation.path.replace(
            /\{(\w+)\}/g,
            (_, name: string) => sample.pathValues[name] ?? 'x',
          );
          if (sample.query.length > 0) {
            path += `?${sample.query.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&')}`;
          }
          const headers: Record<string, string> = {};
          if (path.startsWith('/api/v2/')) headers['x-api-key'] = apiKey;
          else if (path.startsWith('/admin/v1/')) headers.authorization = `Bearer ${ADMIN_TOKEN}`;
          else headers.authorization = `Bearer ${sessionToken}`;
          if (sample.badVersion) headers['api-version'] = `${CANARY}-1999`;
          if (sample.body) headers['content-type'] = sample.body.contentType;
          let res: Response;
          let textBody: string;
          try {
            // An event stream that opens is not read: its body never ends (its refusals are read as any).
            ({ res, text: textBody } = await fetchHead(`${t.url}${path}`, {
              method: operation.method.toUpperCase(),
              headers,
              body: sample.body && operation.method !== 'get' ? sample.body.raw : undefined,
            }));
          } catch (error) {
            // fetch itself refuses some inputs (e.g. a body on GET); those never reach the server.
            if (error instanceof TypeError) continue;
            throw error;
          }
          const where = `${operation.method.toUpperCase()} ${path.slice(0, 120)} (${operation.id})`;
          if (res.status >= 500) failures.push(`${where}: ${res.status} ${textBody.slice(0, 200)}`);
          if (!res.headers.get('api-version')) failures.push(`${where}: no API-Version`);
          if (res.status >= 400 && operation.id !== 'system.health') {
            let parsed: any;
            try {
              parsed = JSON.parse(textBody);
            } catch {
              failures.push(`${where}: ${res.status} is not JSON: ${textBody.slice(0, 100)}`);
              continue;
            }
            const shapeB = path.startsWith('/api/v2/');
            if (!(shapeB ? isShapeB(parsed) : isShapeA(parsed))) {
              failures.push(
                `${where}: ${res.status} not Shape ${shapeB ? 'B' : 'A'}: ${textBody.slice(0, 200)}`,
              );
            }
          }
          // A person's session may end by the harness's own hand (logout, sign-out everywhere, a moved clock).
          if (res.status === 401 && !path.startsWith('/api/v2/') && !path.startsWith('/admin/'))
            await mintSession();
          // The key may be revoked by a lucky id; take a new one.
          if (res.status === 401 && path.startsWith('/api/v2/')) {
            apiKey = (await t.ctx.apiKeys.create(user.organizationId, { name: 'fuzz', scopes: ['*'] }))
              .secret;
            secrets.push(apiKey);
          }
        }
        timing.push([performance.now() - startedAt, operation.id]);
      }
      timing.sort((a, b) => b[0] - a[0]);
      // FUZZ_TIMING=1 prints the slowest operations, to find where a slow run spends its time.
      if (process.env.FUZZ_TIMING)
        console.log(
          timing
            .slice(0, 15)
            .map(([ms, id]) => `${Math.round(ms)} ${id}`)
            .join('\n'),
        );
      assert.ok(operations.length >= minimum, `only ${operations.length} operations`);
      assert.ok(sent >= minimum * RUNS_PER_OPERATION * 0.9, `only ${sent} requests`);
      assert.deepEqual(failures.slice(0, 20), [], `${failures.length} failures`);
      const log = t.logs().join('\n');
      assert.ok(log.length > 0, 'the log was captured');
      assert.ok(!log.includes(CANARY), 'a value the client sent reached the log');
      for (const secret of secrets) assert.ok(!log.includes(secret), 'a credential reached the log');
    });
  });
}
