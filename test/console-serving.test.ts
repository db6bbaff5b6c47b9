// How the server serves the web console (src/platform/http/console.ts): the HTML shell at `/` and at any
// path of the console's own (SPA fallback) with a strict Content-Security-Policy and no caching, hashed assets
// cached for a year, and API paths untouched: an unknown API path is still a 404 in that API's error shape.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CONSOLE_DIST } from '../src/platform/http/console.ts';
import { isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';

describe('serving the console', () => {
  let t: TestApp;
  before(async () => {
    assert.ok(
      existsSync(path.join(CONSOLE_DIST, 'index.html')),
      'the console is built (npm ci runs its build)',
    );
    t = await startTestApp();
  });
  after(() => t.close());

  test('/ is the HTML shell with a strict CSP, revalidated on every load', async () => {
    const res = await t.request('GET', '/');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/, 'no inline or remote scripts');
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.match(res.text, /<div id="root"><\/div>/);
    assert.ok(!/<script>(?!<\/script>)/.test(res.text), 'no inline script the CSP would block');
  });

  test("the console's own paths get the shell, so a page can be reloaded or linked to", async () => {
    for (const page of ['/login', '/campaigns/cmp_123', '/settings?tab=2fa', '/reset-password?token=prt_x']) {
      const res = await t.request('GET', page);
      assert.equal(res.status, 200, page);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/, page);
      assert.ok(res.headers.get('content-security-policy'), page);
    }
    const head = await t.request('HEAD', '/voicemail');
    assert.equal(head.status, 200);
  });

  test('hashed assets are cached for a year; a missing one is a plain 404, not the shell', async () => {
    const script = readdirSync(path.join(CONSOLE_DIST, 'assets')).find((name) => name.endsWith('.js'));
    assert.ok(script);
    const res = await t.request('GET', `/assets/${script}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.match(res.headers.get('content-type') ?? '', /javascript/);
    const missing = await t.request('GET', '/assets/index-deadbeef.js');
    assert.equal(missing.status, 404);
    assert.doesNotMatch(missing.text, /<div id="root">/);
  });

  test('API paths are never the shell: unknown ones keep their 404 and error shape', async () => {
    const portal = await t.request('GET', '/v2/portal/nothing-here');
    assert.equal(portal.status, 404);
    assert.ok(isShapeA(portal.body), portal.text);
    const developer = await t.request('GET', '/api/v2/nothing-here');
    assert.equal(developer.status, 404);
    assert.ok(isShapeB(developer.body), developer.text);
    const admin = await t.request('GET', '/admin/v1/nothing-here');
    assert.equal(admin.status, 404);
    // A write to a console path is not served the shell either.
    const post = await t.request('POST', '/campaigns', { body: {} });
    assert.equal(post.status, 404);
    assert.ok(isShapeA(post.body), post.text);
  });

  test('the OpenAPI document does not list the console', async () => {
    const document = (await t.request('GET', '/openapi.json')).body;
    assert.equal(document.paths['/'], undefined);
    assert.ok(!Object.keys(document.paths).some((p) => p.startsWith('/assets')));
  });
});
