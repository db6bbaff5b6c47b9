// Configuration, the clock and the API description: production refuses to start without JWT_SECRET; the
// clock moves only under APP_ENV=test; /openapi.json is a valid OpenAPI 3.1 document and /docs renders it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ConfigError, loadConfig } from '../src/config.ts';
import { Clock } from '../src/platform/clock.ts';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';

describe('configuration', () => {
  test('defaults match CONTRACT section 1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'comms-config-'));
    try {
      const config = loadConfig({ DATA_DIR: dir });
      assert.equal(config.port, 3000);
      assert.equal(config.appEnv, 'development');
      assert.equal(config.databaseUrl, undefined);
      assert.equal(config.adminToken, undefined);
      assert.equal(config.redisUrl, undefined);
      assert.deepEqual(config.roles, ['api', 'worker']);
      // Development generates a signing secret once and keeps it in DATA_DIR.
      assert.equal(readFileSync(join(dir, 'jwt-secret'), 'utf8'), config.jwtSecret);
      assert.equal(loadConfig({ DATA_DIR: dir }).jwtSecret, config.jwtSecret);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('production refuses to start without JWT_SECRET, or with a short one', () => {
    assert.throws(() => loadConfig({ APP_ENV: 'production' }), ConfigError);
    assert.throws(() => loadConfig({ APP_ENV: 'production', JWT_SECRET: 'short' }), /at least 32/);
    const config = loadConfig({ APP_ENV: 'production', JWT_SECRET: 'x'.repeat(40) });
    assert.equal(config.jwtSecret, 'x'.repeat(40));
  });

  test('SHUTDOWN_GRACE_SECONDS is 30 by default, a whole number of seconds from 0 to 3600', () => {
    const base = { DATA_DIR: 'memory://' };
    assert.equal(loadConfig(base).shutdownGraceSeconds, 30);
    assert.equal(loadConfig({ ...base, SHUTDOWN_GRACE_SECONDS: '0' }).shutdownGraceSeconds, 0);
    assert.equal(loadConfig({ ...base, SHUTDOWN_GRACE_SECONDS: '120' }).shutdownGraceSeconds, 120);
    for (const wrong of ['-1', '2.5', '3601', 'soon']) {
      assert.throws(() => loadConfig({ ...base, SHUTDOWN_GRACE_SECONDS: wrong }), /SHUTDOWN_GRACE_SECONDS/);
    }
  });

  test('CARRIER=smpp needs an smpp:// URL with a system id; the window is bounded; other carriers are refused', () => {
    assert.throws(
      () => loadConfig({ CARRIER: 'smpp' }),
      /SMPP_URL must be smpp:\/\/system_id:password@host:port/,
    );
    assert.throws(() => loadConfig({ CARRIER: 'smpp', SMPP_URL: 'http://u:p@h:1' }), /SMPP_URL/);
    assert.throws(
      () => loadConfig({ CARRIER: 'smpp', SMPP_URL: 'smpp://u:p@h:1', SMPP_WINDOW: '0' }),
      /SMPP_WINDOW/,
    );
    assert.throws(() => loadConfig({ CARRIER: 'kannel' }), /CARRIER must be simulated, smpp or http/);
    const config = loadConfig({ CARRIER: 'smpp', SMPP_URL: 'smpp://u:p@h:2775', SMPP_SYSTEM_TYPE: 'cp' });
    assert.deepEqual(config.smpp, { url: 'smpp://u:p@h:2775', systemType: 'cp', window: 10 });
    assert.equal(loadConfig({}).smpp, undefined);
  });

  test('CARRIER=http needs the provider URL, key and a 32-byte Ed25519 public key', () => {
    try {
      loadConfig({ CARRIER: 'http', CARRIER_HTTP_PUBLIC_KEY: 'c2hvcnQ=' });
      assert.fail('should have thrown');
    } catch (error) {
      for (const name of ['CARRIER_HTTP_URL', 'CARRIER_HTTP_API_KEY', 'CARRIER_HTTP_PUBLIC_KEY']) {
        assert.match(String(error), new RegExp(name));
      }
    }
    const key = Buffer.alloc(32, 1).toString('base64');
    const config = loadConfig({
      CARRIER: 'http',
      CARRIER_HTTP_URL: 'https://api.example.com',
      CARRIER_HTTP_API_KEY: 'k',
      CARRIER_HTTP_PUBLIC_KEY: key,
    });
    assert.deepEqual(config.httpCarrier, { baseUrl: 'https://api.example.com', apiKey: 'k', publicKey: key });
  });

  test('every invalid variable is reported at once', () => {
    try {
      loadConfig({
        APP_ENV: 'staging',
        PORT: 'eighty',
        DATABASE_URL: 'mysql://x',
        REDIS_URL: 'http://x',
        SMTP_URL: 'ftp://x',
        ROLES: 'api,cron',
        SIP_PORT: '70000',
        SIP_TRUNK_URI: 'http://trunk.example.com',
        SIP_MEDIA_ADDRESS: 'media.example.com',
        TRANSCRIPTION_URL: 'ftp://x',
      });
      assert.fail('should have thrown');
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      for (const name of [
        'APP_ENV',
        'PORT',
        'DATABASE_URL',
        'REDIS_URL',
        'SMTP_URL',
        'ROLES',
        'SIP_PORT',
        'SIP_TRUNK_URI',
        'SIP_MEDIA_ADDRESS',
        'TRANSCRIPTION_URL',
      ]) {
        assert.match(error.message, new RegExp(name));
      }
    }
  });

  test('voice defaults: no SIP listener, no transcription service, the whisper-1 model', () => {
    const config = loadConfig({ DATA_DIR: 'memory://' });
    assert.equal(config.sipPort, undefined);
    assert.equal(config.sipHost, '0.0.0.0');
    assert.equal(config.transcriptionUrl, undefined);
    assert.equal(config.transcriptionModel, 'whisper-1');
    const set = loadConfig({
      DATA_DIR: 'memory://',
      SIP_PORT: '5060',
      TRANSCRIPTION_URL: 'https://api.example.com/v1',
    });
    assert.equal(set.sipPort, 5060);
    assert.equal(set.transcriptionUrl, 'https://api.example.com/v1');
    assert.equal(config.sipTrunk, undefined);
    assert.deepEqual(loadConfig({ DATA_DIR: 'memory://', SIP_TRUNK_URI: 'sip:trunk.example.com' }).sipTrunk, {
      host: 'trunk.example.com',
      port: undefined,
    });
    assert.deepEqual(
      loadConfig({ DATA_DIR: 'memory://', SIP_TRUNK_URI: 'sip:acme@192.0.2.10:5080;transport=udp' }).sipTrunk,
      { host: '192.0.2.10', port: 5080 },
    );
  });

  test('memory:// keeps no secret on disk', () => {
    const a = loadConfig({ DATA_DIR: 'memory://' });
    const b = loadConfig({ DATA_DIR: 'memory://' });
    assert.notEqual(a.jwtSecret, b.jwtSecret);
  });
});

describe('clock', () => {
  test('a clock outside test cannot be moved', () => {
    const clock = new Clock(false);
    assert.throws(() => clock.advance(10), /APP_ENV=test/);
    assert.throws(() => clock.set(new Date(0)), /APP_ENV=test/);
  });

  describe('POST /admin/v1/test/clock', () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp();
    });
    after(() => t.close());

    test('advances the server clock by seconds', async () => {
      const before = t.ctx.clock.nowMs();
      const res = await t.admin('POST', '/test/clock', { advanceSeconds: 86_400 });
      assert.equal(res.status, 200);
      const now = Date.parse(res.body.data.now);
      assert.ok(now - before >= 86_400_000 && now - before < 86_410_000);
      assert.ok(t.ctx.clock.nowMs() >= now);
    });

    test('sets the server clock to an instant', async () => {
      const res = await t.admin('POST', '/test/clock', { now: '2030-01-01T00:00:00.000Z' });
      assert.equal(res.status, 200);
      assert.ok(res.body.data.now.startsWith('2030-01-01T00:00:0'));
      assert.equal(new Date(t.ctx.clock.nowMs()).getUTCFullYear(), 2030);
    });

    test('bad input is 400 and leaves the clock alone', async () => {
      const before = t.ctx.clock.nowMs();
      for (const body of [{}, { advanceSeconds: 'soon' }, { now: 'tomorrow' }]) {
        const res = await t.admin('POST', '/test/clock', body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.ok(isShapeA(res.body));
      }
      assert.ok(Math.abs(t.ctx.clock.nowMs() - before) < 5000);
    });
  });

  test('outside APP_ENV=test the clock route does not exist', async () => {
    const t = await startTestApp({ config: { appEnv: 'development' } });
    try {
      const res = await t.admin('POST', '/test/clock', { advanceSeconds: 10 });
      assert.equal(res.status, 404);
    } finally {
      await t.close();
    }
  });
});

describe('API description', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('/openapi.json is a valid OpenAPI 3.1 document describing the routes', async () => {
    const res = await t.request('GET', '/openapi.json');
    assert.equal(res.status, 200);
    assert.equal(res.body.openapi, '3.1.0');
    const result = await new Validator().validate(res.body);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.ok(res.body.paths['/api/version']);
    assert.ok(res.body.paths['/admin/v1/organizations']);
  });

  test('/docs serves a browsable reference', async () => {
    const res = await t.request('GET', '/docs/');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
    assert.match(res.text, /openapi\.json|scalar/i);
    // The page's script and the redirect of /docs, forwarded from the reference loaded on first use.
    const script = await t.request('GET', '/docs/js/scalar.js');
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /javascript/);
    assert.ok(script.text.length > 100_000, "the reference's browser bundle");
    const bare = await t.request('GET', '/docs');
    assert.equal(bare.status, 301);
    assert.equal(bare.headers.get('location'), '/docs/');
  });
});

describe('behind a proxy', () => {
  test('TRUST_PROXY counts hops: the client is the address our proxy saw, not one the client wrote', async () => {
    assert.equal(loadConfig({ TRUST_PROXY: 'true', DATA_DIR: 'memory://' }).trustProxy, 1);
    assert.equal(loadConfig({ TRUST_PROXY: '2', DATA_DIR: 'memory://' }).trustProxy, 2);
    assert.equal(loadConfig({ DATA_DIR: 'memory://' }).trustProxy, false);
    const t = await startTestApp({
      config: { trustProxy: 1 },
      extend: (app) => app.get('/v2/portal/test-client-address', async (request) => ({ ip: request.ip })),
    });
    try {
      const res = await t.request('GET', '/v2/portal/test-client-address', {
        headers: { 'x-forwarded-for': '6.6.6.6, 10.1.2.3' },
      });
      assert.equal(res.body.ip, '10.1.2.3');
    } finally {
      await t.close();
    }
  });
});
