// ENCRYPTION_KEY, the key ring for stored secrets (issue 11): separate from JWT_SECRET, new secrets are sealed
// with the newest key, every listed key still opens what it sealed, secrets sealed before the ring (from
// JWT_SECRET) still open, and `npm run reseal-secrets` moves every stored secret to the newest key so the old
// ones can be dropped.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { MODULES } from '../src/modules.ts';
import { createSecretBox, encryptionKeyId } from '../src/platform/crypto.ts';
import type { ModuleDefinition } from '../src/platform/module.ts';
import { resealSecrets } from '../src/platform/reseal.ts';
import { createOrganization, startTestApp, type TestApp } from './helpers/app.ts';
import { createUser } from './helpers/portal.ts';

const OLD = 'the-old-encryption-key-0123456789abcdef';
const NEW = 'the-new-encryption-key-0123456789abcdef';
const key = (secret: string) => ({ id: encryptionKeyId(secret), secret });

describe('the key ring', () => {
  const legacy = 'jwt-secret-of-at-least-32-characters-long';

  test('seals with the newest key, names it, and opens with any listed key or the legacy root', () => {
    const before = createSecretBox(legacy, 'webhook-secret').seal('whsec_a', 'wh_1');
    const oldRing = createSecretBox({ keys: [key(OLD)], legacy }, 'webhook-secret');
    const sealedOld = oldRing.seal('whsec_b', 'wh_1');
    assert.ok(sealedOld.startsWith(`v2.${encryptionKeyId(OLD)}.`));
    const ring = createSecretBox({ keys: [key(NEW), key(OLD)], legacy }, 'webhook-secret');
    const sealedNew = ring.seal('whsec_c', 'wh_1');
    assert.ok(sealedNew.startsWith(`v2.${encryptionKeyId(NEW)}.`));
    assert.equal(ring.open(before, 'wh_1'), 'whsec_a');
    assert.equal(ring.open(sealedOld, 'wh_1'), 'whsec_b');
    assert.equal(ring.open(sealedNew, 'wh_1'), 'whsec_c');
    assert.deepEqual(
      [before, sealedOld, sealedNew].map((c) => ring.isStale(c)),
      [true, true, false],
    );
  });

  test('a key dropped from the ring no longer opens; a wrong binding never opens', () => {
    const sealedOld = createSecretBox({ keys: [key(OLD)], legacy }, 'totp-secret').seal('SECRET', 'usr_1');
    const onlyNew = createSecretBox({ keys: [key(NEW)], legacy }, 'totp-secret');
    assert.throws(() => onlyNew.open(sealedOld, 'usr_1'), /no longer lists/);
    const both = createSecretBox({ keys: [key(NEW), key(OLD)], legacy }, 'totp-secret');
    assert.throws(() => both.open(sealedOld, 'usr_2'));
  });

  test('the configuration reads ENCRYPTION_KEY newest first and refuses short or repeated keys', () => {
    const config = loadConfig({ DATA_DIR: 'memory://', ENCRYPTION_KEY: `${NEW}, ${OLD}` });
    assert.deepEqual(config.encryptionKeys, [key(NEW), key(OLD)]);
    assert.throws(() => loadConfig({ DATA_DIR: 'memory://', ENCRYPTION_KEY: 'short' }), /at least 32/);
    assert.throws(() => loadConfig({ DATA_DIR: 'memory://', ENCRYPTION_KEY: `${OLD},${OLD}` }), /twice/);
  });
});

describe('rotating ENCRYPTION_KEY on a running database', () => {
  let first: TestApp;
  before(async () => {
    first = await startTestApp(); // no ENCRYPTION_KEY: secrets sealed from JWT_SECRET, as before the ring
  });
  after(() => first.close());

  test('old secrets keep working through the rotation, and re-sealing moves every one to the newest key', async () => {
    const org = await createOrganization(first);
    const { endpoint, secret } = await first.ctx.webhooks.create(org.id, {
      url: 'https://hooks.example.com/rotation',
      events: ['message.sent'],
    });
    const user = await createUser(first, { organizationIds: [org.id] });
    await first.ctx.twoFactor.setup(user.id, user.email);
    const extension = await first.ctx.extensions.create(await first.ctx.organizations.get(org.id), {
      extension: '101',
      name: 'Desk',
      userId: user.id,
    });
    // The console phone's credentials (a session's, for the user's extension).
    const { session } = await first.ctx.sessions.create({
      userId: user.id,
      organizationId: org.id,
      remember: false,
    });
    const phone = await first.ctx.phoneCredentials.issue({
      organizationId: org.id,
      userId: user.id,
      sessionId: session.id,
    });
    const flowApp = await first.ctx.flowAppSecrets.read(org.id);
    const jwtSecret = first.ctx.config.jwtSecret;

    let flowAppRotated = '';
    // Step 1: the first key. Existing secrets still open; new ones are sealed with it.
    const withOld = await startTestApp({
      database: first.database,
      config: { jwtSecret, encryptionKeys: [key(OLD)] },
    });
    try {
      const [row] = await withOld.ctx.db.query<{ secret_sealed: string }>(
        'SELECT secret_sealed FROM webhook_endpoints WHERE id = $1',
        [endpoint.id],
      );
      assert.ok(row!.secret_sealed.startsWith('v1.'));
      assert.equal(withOld.ctx.webhooks.openSecret(endpoint.id, row!.secret_sealed), secret);
      const rotated = await withOld.ctx.webhooks.rotateSecret(org.id, endpoint.id);
      const [after] = await withOld.ctx.db.query<{ secret_sealed: string; previous_secret_sealed: string }>(
        'SELECT secret_sealed, previous_secret_sealed FROM webhook_endpoints WHERE id = $1',
        [endpoint.id],
      );
      assert.ok(after!.secret_sealed.startsWith(`v2.${encryptionKeyId(OLD)}.`));
      assert.equal(withOld.ctx.webhooks.openSecret(endpoint.id, after!.secret_sealed), rotated.secret);
      // The flow app secret made under the legacy key reads under the first; rotating seals the new one with it.
      assert.equal((await withOld.ctx.flowAppSecrets.read(org.id)).secret, flowApp.secret);
      flowAppRotated = (await withOld.ctx.flowAppSecrets.rotate(org.id)).secret;
    } finally {
      await withOld.close();
    }

    // Step 2: a new key first, the old one kept; re-seal; then the old key can go.
    const ring = { keys: [key(NEW), key(OLD)], legacy: jwtSecret };
    const declarations = (MODULES as readonly ModuleDefinition<string, unknown>[]).flatMap(
      (m) => m.sealed ?? [],
    );
    assert.deepEqual(declarations.map((d) => `${d.table}:${d.columns.join(',')}`).sort(), [
      'extensions:sip_password_sealed',
      'flow_app_secrets:secret_sealed,previous_secret_sealed',
      'phone_credentials:password_sealed',
      'user_two_factor:secret_sealed',
      'webhook_endpoints:secret_sealed,previous_secret_sealed',
    ]);
    const reports = await resealSecrets(first.ctx.db, declarations, (purpose) =>
      createSecretBox(ring, purpose),
    );
    const resealed = Object.fromEntries(reports.map((r) => [`${r.table}.${r.column}`, r.resealed]));
    assert.deepEqual(resealed, {
      'extensions.sip_password_sealed': 1,
      'flow_app_secrets.secret_sealed': 1,
      'flow_app_secrets.previous_secret_sealed': 1,
      'phone_credentials.password_sealed': 1,
      'user_two_factor.secret_sealed': 1,
      'webhook_endpoints.secret_sealed': 1,
      'webhook_endpoints.previous_secret_sealed': 1,
    });
    const again = await resealSecrets(first.ctx.db, declarations, (purpose) =>
      createSecretBox(ring, purpose),
    );
    assert.ok(
      again.every((report) => report.resealed === 0),
      'a second run has nothing left to do',
    );

    const onlyNew = await startTestApp({
      database: first.database,
      config: { jwtSecret, encryptionKeys: [key(NEW)] },
    });
    try {
      const [hook] = await onlyNew.ctx.db.query<{ secret_sealed: string; previous_secret_sealed: string }>(
        'SELECT secret_sealed, previous_secret_sealed FROM webhook_endpoints WHERE id = $1',
        [endpoint.id],
      );
      assert.ok(hook!.secret_sealed.startsWith(`v2.${encryptionKeyId(NEW)}.`));
      assert.equal(onlyNew.ctx.webhooks.openSecret(endpoint.id, hook!.previous_secret_sealed), secret);
      const [totp] = await onlyNew.ctx.db.query<{ secret_sealed: string }>(
        'SELECT secret_sealed FROM user_two_factor WHERE user_id = $1',
        [user.id],
      );
      assert.match(onlyNew.ctx.secretBox('totp-secret').open(totp!.secret_sealed, user.id), /^[A-Z2-7]+=*$/);
      const [sip] = await onlyNew.ctx.db.query('SELECT * FROM extensions WHERE id = $1', [extension.id]);
      assert.equal(onlyNew.ctx.extensions.sipPassword(sip as never), extension.sip.password);
      assert.equal((await onlyNew.ctx.flowAppSecrets.read(org.id)).secret, flowAppRotated);
      assert.equal((await onlyNew.ctx.phoneCredentials.forDigest(phone.username))?.password, phone.password);
      const [app] = await onlyNew.ctx.db.query<{ previous_secret_sealed: string }>(
        'SELECT previous_secret_sealed FROM flow_app_secrets WHERE organization_id = $1',
        [org.id],
      );
      const flowAppBox = onlyNew.ctx.secretBox('flow-app-secret');
      assert.equal(flowAppBox.open(app!.previous_secret_sealed, org.id), flowApp.secret);
    } finally {
      await onlyNew.close();
    }
  });
});
