// The secret box (src/platform/crypto.ts) that keeps TOTP (and later webhook) secrets encrypted at rest.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createSecretBox } from '../src/platform/crypto.ts';

describe('secret box', () => {
  const root = 'a-root-secret-of-at-least-32-characters!';

  test('opens what it sealed; each seal differs (random IV)', () => {
    const box = createSecretBox(root, 'totp-secret');
    const a = box.seal('JBSWY3DPEHPK3PXP', 'usr_1');
    const b = box.seal('JBSWY3DPEHPK3PXP', 'usr_1');
    assert.notEqual(a, b);
    assert.ok(a.startsWith('v1.'));
    assert.ok(!a.includes('JBSWY3DPEHPK3PXP'));
    assert.equal(box.open(a, 'usr_1'), 'JBSWY3DPEHPK3PXP');
  });

  test('refuses an altered ciphertext, another purpose, another root secret or other associated data', () => {
    const sealed = createSecretBox(root, 'totp-secret').seal('secret', 'usr_1');
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    raw[raw.length - 1]! ^= 1;
    const altered = `v1.${raw.toString('base64url')}`;
    assert.throws(() => createSecretBox(root, 'totp-secret').open(altered, 'usr_1'));
    assert.throws(() => createSecretBox(root, 'webhook-secret').open(sealed, 'usr_1'));
    assert.throws(() => createSecretBox(`${root}x`, 'totp-secret').open(sealed, 'usr_1'));
    assert.throws(() => createSecretBox(root, 'totp-secret').open(sealed, 'usr_2'));
    assert.throws(() => createSecretBox(root, 'totp-secret').open('v2.abc'));
    assert.throws(() => createSecretBox(root, 'totp-secret').open('v1.abc'));
  });
});
