// The Standard Webhooks signature made with node:crypto (signature.ts) against the reference implementation
// (the `standardwebhooks` package): the same `v1,` signature for every secret, byte for byte, and headers a
// verifier accepts, on generated ids, times and bodies (multi-byte text included), with a rotation's two
// secrets, and past the bound of the decoded-key cache.
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret } from '../src/modules/webhooks/service.ts';
import { signedHeaders } from '../src/modules/webhooks/signature.ts';

const texts = ['', 'a', '{"type":"message.sent","data":{"n":1}}', 'émoji 📞 ☎︎ 电话', '\u0000\u00ff\uffff'];

/** A JSON body (the verifier parses what it verified), of text from `texts` and random base64. */
function randomBody(): string {
  const pick = texts[randomInt(texts.length)]!;
  return JSON.stringify({ text: `${pick}${randomBytes(randomInt(0, 64)).toString('base64')}${pick}` });
}

test('each signature is the reference implementation’s, and a verifier accepts the headers', () => {
  for (let i = 0; i < 500; i++) {
    const secrets = Array.from({ length: randomInt(1, 3) }, () => newWebhookSecret());
    const id = `evt_${randomBytes(8).toString('hex')}`;
    const at = new Date(randomInt(0, 2 ** 40));
    const body = randomBody();
    const headers = signedHeaders(id, at, body, secrets);
    assert.equal(headers['webhook-id'], id);
    assert.equal(headers['webhook-timestamp'], String(Math.floor(at.getTime() / 1000)));
    assert.deepEqual(
      headers['webhook-signature'].split(' '),
      secrets.map((secret) => new Webhook(secret).sign(id, at, body)),
    );
    // Verified as a receiver would, against each secret it may hold (its timestamp check set to this time).
    for (const secret of secrets) {
      const verifier = new Webhook(secret);
      (verifier as unknown as { verifyTimestamp: () => Date }).verifyTimestamp = () => at;
      assert.doesNotThrow(() => verifier.verify(body, headers));
    }
  }
});

test('a secret signs the same after a thousand others pushed it out of the decoded keys', () => {
  const first = newWebhookSecret();
  const at = new Date('2026-11-27T12:00:00Z');
  const before = signedHeaders('msg_1', at, 'body', [first])['webhook-signature'];
  for (let i = 0; i < 1_100; i++) signedHeaders('msg_2', at, 'body', [newWebhookSecret()]);
  assert.equal(signedHeaders('msg_1', at, 'body', [first])['webhook-signature'], before);
  assert.equal(before, new Webhook(first).sign('msg_1', at, 'body'));
});
