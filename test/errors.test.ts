// Error shapes (spec "Errors", CONTRACT section 2). Shape A on the portal, key/webhook management and
// operator paths; Shape B on the developer API. Each rule gets a test: validation joins messages without a
// code, a malformed body is a 400, unknown routes are 404 in the right shape, and 5xx responses of
// Shape A hide everything but the four token/session codes, for thrown errors of every kind.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Type } from 'typebox';
import { ApiError, renderError } from '../src/platform/errors.ts';
import { ADMIN_TOKEN, isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';

const SHAPE_A_PREFIXES = [
  '/v2/portal/test',
  '/api/api-keys/test',
  '/api/webhooks/test',
  '/admin/v1/test-errors',
];
const SHAPE_B_PREFIX = '/api/v2/test';

describe('error shapes', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      extend: (app) => {
        // Routes that fail on purpose, one set under each prefix, so the renderer is exercised for real.
        for (const prefix of [...SHAPE_A_PREFIXES, SHAPE_B_PREFIX]) {
          app.get(`${prefix}/type-error`, async () => {
            const missing: any = undefined;
            return missing.property; // a bug's TypeError
          });
          app.get(`${prefix}/coded-503`, async () => {
            throw new ApiError(503, 'Trial limit could not be checked', {
              code: 'TRIAL_LIMIT_REACHED',
              data: { secret: 'internal detail' },
              headers: { 'Retry-After': '2' },
            });
          });
          app.get(`${prefix}/token-expired-500`, async () => {
            throw new ApiError(500, 'odd', { code: 'TOKEN_EXPIRED', data: { x: 1 } });
          });
          app.get(`${prefix}/conflict`, async () => {
            throw new ApiError(409, 'Extension 101 is in use', {
              code: 'DUPLICATE',
              data: { field: 'number' },
            });
          });
          app.post(
            `${prefix}/validate`,
            {
              schema: {
                body: Type.Object({
                  name: Type.String({ minLength: 2 }),
                  count: Type.Integer({ minimum: 1 }),
                }),
              },
            },
            async () => ({ ok: true }),
          );
        }
      },
    });
  });
  after(() => t.close());

  for (const prefix of SHAPE_A_PREFIXES) {
    const headers: Record<string, string> = prefix.startsWith('/admin')
      ? { authorization: `Bearer ${ADMIN_TOKEN}` }
      : {};

    test(`Shape A ${prefix}: a TypeError is a generic 500 with nothing leaked`, async () => {
      const res = await t.request('GET', `${prefix}/type-error`, { headers });
      assert.equal(res.status, 500);
      assert.deepEqual(res.body, { message: 'Internal server error', error: 'Internal server error' });
    });

    test(`Shape A ${prefix}: a coded 5xx keeps neither its code nor its data, but keeps its headers`, async () => {
      const res = await t.request('GET', `${prefix}/coded-503`, { headers });
      assert.equal(res.status, 503);
      assert.deepEqual(res.body, { message: 'Internal server error', error: 'Internal server error' });
      assert.equal(res.headers.get('retry-after'), '2');
    });

    test(`Shape A ${prefix}: a 5xx keeps TOKEN_EXPIRED but not its data`, async () => {
      const res = await t.request('GET', `${prefix}/token-expired-500`, { headers });
      assert.equal(res.status, 500);
      assert.deepEqual(res.body, {
        message: 'Internal server error',
        error: 'Internal server error',
        code: 'TOKEN_EXPIRED',
      });
    });

    test(`Shape A ${prefix}: a 4xx carries message, error, code and data unchanged`, async () => {
      const res = await t.request('GET', `${prefix}/conflict`, { headers });
      assert.equal(res.status, 409);
      assert.deepEqual(res.body, {
        message: 'Extension 101 is in use',
        error: 'Extension 101 is in use',
        code: 'DUPLICATE',
        data: { field: 'number' },
      });
    });

    test(`Shape A ${prefix}: validation failures are a 400 with every message joined and no code`, async () => {
      const res = await t.request('POST', `${prefix}/validate`, { headers, body: { name: 'x', count: 0 } });
      assert.equal(res.status, 400);
      assert.ok(isShapeA(res.body), res.text);
      assert.equal(res.body.code, undefined);
      assert.match(res.body.message, /body\.name/);
      assert.match(res.body.message, /body\.count/);
      assert.match(res.body.message, /; /);
    });
  }

  test('Shape A: a malformed JSON body is a 400 without code', async () => {
    const res = await t.request('POST', '/v2/portal/test/validate', {
      rawBody: '{"name": "ab", ',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 400);
    assert.ok(isShapeA(res.body), res.text);
    assert.equal(res.body.code, undefined);
  });

  test('Shape A: a missing required field names the field', async () => {
    const res = await t.request('POST', '/v2/portal/test/validate', { body: { count: 2 } });
    assert.equal(res.status, 400);
    assert.match(res.body.message, /body\.name is required/);
  });

  test('Shape A: unknown routes answer 404 in Shape A, with no statusCode field', async () => {
    // (A GET of any other path without a file extension is the console's page shell: console-serving.test.ts.)
    for (const path of ['/v2/portal/nothing-here', '/nothing.txt', '/api/api-keys/x/y/z']) {
      const res = await t.request('GET', path);
      assert.equal(res.status, 404, path);
      assert.ok(isShapeA(res.body), res.text);
      assert.equal(res.body.statusCode, undefined);
    }
  });

  test('Shape B: a TypeError is a generic 500', async () => {
    const res = await t.request('GET', `${SHAPE_B_PREFIX}/type-error`);
    assert.equal(res.status, 500);
    assert.deepEqual(res.body, { success: false, error: 'Internal server error' });
  });

  test('Shape B: a deliberate 503 keeps its code so the client knows to back off', async () => {
    const res = await t.request('GET', `${SHAPE_B_PREFIX}/coded-503`);
    assert.equal(res.status, 503);
    assert.equal(res.body.success, false);
    assert.equal(res.body.code, 'TRIAL_LIMIT_REACHED');
    assert.equal(res.headers.get('retry-after'), '2');
  });

  test('Shape B: validation failures are a 400 with messages joined', async () => {
    const res = await t.request('POST', `${SHAPE_B_PREFIX}/validate`, { body: { name: 'x', count: 0 } });
    assert.equal(res.status, 400);
    assert.ok(isShapeB(res.body), res.text);
    assert.match(res.body.error, /body\.name.*; .*body\.count/);
  });

  test('Shape B: a malformed JSON body is a 400', async () => {
    const res = await t.request('POST', `${SHAPE_B_PREFIX}/validate`, {
      rawBody: 'not json',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 400);
    assert.ok(isShapeB(res.body), res.text);
  });

  test('Shape B: unknown developer API routes answer 404 in Shape B', async () => {
    const res = await t.request('GET', '/api/v2/no-such-thing');
    assert.equal(res.status, 404);
    assert.ok(isShapeB(res.body), res.text);
  });
});

describe('a real fault: the database goes away', () => {
  test('a lost database gives a generic 500 in Shape A and leaks no driver text', async () => {
    const t = await startTestApp();
    try {
      await t.ctx.db.close();
      const res = await t.request('GET', '/health');
      assert.equal(res.status, 500);
      assert.deepEqual(res.body, { message: 'Internal server error', error: 'Internal server error' });
    } finally {
      await t.app.close();
      await t.database.drop().catch(() => {});
    }
  });
});

describe('renderError', () => {
  test('never renders a non-ApiError message', () => {
    const rendered = renderError(new Error('password=hunter2 in connection string'), 'B');
    assert.equal(JSON.stringify(rendered.body).includes('hunter2'), false);
    const renderedA = renderError(new Error('password=hunter2'), 'A');
    assert.equal(JSON.stringify(renderedA.body).includes('hunter2'), false);
  });
});
