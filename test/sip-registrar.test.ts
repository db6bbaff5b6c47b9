// The SIP registrar on a real socket, proven with a real SIP peer (SIPp, Debian's `sip-tester`): a phone
// registers with its extension's digest credentials and the binding is in the database; a wrong password, a
// stranger's address of record and a forged nonce are refused; a scanner's burst of failed REGISTERs gets the
// address refused outright. The digest arithmetic is checked on its own against RFC 2617's formulas (replays of
// nonce counts: test/sip-digest.test.ts).
import assert from 'node:assert/strict';
import { createHash, createHmac, hkdfSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { DigestAuth } from '../src/modules/voice/sip/digest.ts';
import type { TestApp } from './helpers/app.ts';
import type { Sender } from './helpers/messaging.ts';
import { sipOffice } from './helpers/sip-office.ts';
import { runSipp, sippInstalled as sipp } from './helpers/sipp.ts';

describe('digest authentication', () => {
  const digest = new DigestAuth('a root secret of at least thirty-two characters', 'sip.example.com');
  const md5 = (...parts: string[]) => createHash('md5').update(parts.join(':')).digest('hex');
  const answer = (nonce: string, password: string, qop = true) => {
    const ha1 = md5('101_abc', 'sip.example.com', password);
    const ha2 = md5('REGISTER', 'sip:sip.example.com');
    return {
      username: '"101_abc"',
      realm: '"sip.example.com"',
      nonce: `"${nonce}"`,
      uri: '"sip:sip.example.com"',
      ...(qop
        ? {
            qop: 'auth',
            nc: '00000001',
            cnonce: '"xyz"',
            response: `"${md5(ha1, nonce, '00000001', 'xyz', 'auth', ha2)}"`,
          }
        : { response: `"${md5(ha1, nonce, ha2)}"` }),
    };
  };

  test('the right password passes with qop=auth; without qop, a wrong one, another realm or a forged nonce do not', () => {
    const now = Date.now();
    const nonce = digest.nonce(now);
    assert.equal(digest.verify(answer(nonce, 'secret'), 'REGISTER', 'secret', now), 'ok');
    // RFC 2069's answer has no nonce count, so its replay could not be refused (test/sip-digest.test.ts).
    assert.equal(digest.verify(answer(nonce, 'secret', false), 'REGISTER', 'secret', now), 'invalid');
    assert.equal(
      digest.verify({ ...answer(nonce, 'secret'), nc: '1' }, 'REGISTER', 'secret', now),
      'invalid',
    );
    assert.notEqual(digest.nonce(now), nonce, 'two challenges in one millisecond, two nonces');
    assert.equal(digest.verify(answer(nonce, 'guess'), 'REGISTER', 'secret', now), 'invalid');
    assert.equal(
      digest.verify({ ...answer(nonce, 'secret'), realm: '"other"' }, 'REGISTER', 'secret', now),
      'invalid',
    );
    const forged = Buffer.from(nonce, 'base64url');
    forged[0] = forged[0]! ^ 1;
    const forgedNonce = forged.toString('base64url');
    assert.equal(digest.verify(answer(forgedNonce, 'secret'), 'REGISTER', 'secret', now), 'invalid');
    const otherServer = new DigestAuth('another root secret of thirty-two characters!', 'sip.example.com');
    assert.equal(otherServer.verify(answer(nonce, 'secret'), 'REGISTER', 'secret', now), 'invalid');
    assert.equal(
      digest.verify({ ...answer(nonce, 'secret'), algorithm: 'SHA-256' }, 'REGISTER', 'secret', now),
      'invalid',
    );
  });

  test('a nonce older than five minutes is stale: the phone is challenged again, not refused', () => {
    const issued = Date.now() - 6 * 60_000;
    const nonce = digest.nonce(issued);
    assert.equal(digest.verify(answer(nonce, 'secret'), 'REGISTER', 'secret', Date.now()), 'stale');
    assert.equal(digest.verify(answer(nonce, 'guess'), 'REGISTER', 'secret', Date.now()), 'invalid');
    assert.equal(digest.challenge(Date.now(), true).stale, 'true');
  });

  test('a nonce of the form before random bytes (time and tag) is stale, so phones holding one re-answer', () => {
    const time = Buffer.alloc(8);
    time.writeBigUInt64BE(BigInt(Date.now()));
    const key = Buffer.from(
      hkdfSync(
        'sha256',
        'a root secret of at least thirty-two characters',
        'commsplatform',
        'sip-digest-nonce v1',
        32,
      ),
    );
    const tag = createHmac('sha256', key).update(time).update('sip.example.com').digest().subarray(0, 16);
    const legacy = Buffer.concat([time, tag]).toString('base64url');
    assert.equal(digest.verify(answer(legacy, 'secret'), 'REGISTER', 'secret', Date.now()), 'stale');
    assert.equal(digest.verify(answer(legacy, 'guess'), 'REGISTER', 'secret', Date.now()), 'invalid');
    assert.equal(digest.rememberUntil(legacy), undefined);
  });
});

describe('the SIP registrar with SIPp', { skip: !sipp && 'SIPp (sip-tester) not installed' }, () => {
  let t: TestApp;
  let port: number;
  let office: Sender;
  let extension: { id: string; sip: { username: string; password: string } };
  before(async () => {
    let create: Awaited<ReturnType<typeof sipOffice>>['create'];
    ({ t, port, office, create } = await sipOffice());
    extension = await create('101', { name: 'Desk' });
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await t.close();
  });

  const bindings = () =>
    t.ctx.db.query<{ contact: string; source: string; user_agent: string; expires_at: Date }>(
      'SELECT contact, source, user_agent, expires_at FROM sip_registrations WHERE extension_id = $1',
      [extension.id],
    );

  test('a phone registers with its credentials; the binding is kept with its expiry', async () => {
    const { username, password } = extension.sip;
    assert.equal(await runSipp(port, { username, password, final: 200 }), 0);
    // SIPp holds the registrar to the script: the same phone expecting a refusal fails its run.
    assert.notEqual(await runSipp(port, { username, password, final: 403 }), 0);
    const [binding] = await bindings();
    assert.ok(binding, 'a binding');
    assert.match(binding.contact, new RegExp(`^sip:${username}@127\\.0\\.0\\.1:\\d+$`));
    assert.match(binding.source, /^udp:127\.0\.0\.1:\d+$/);
    assert.equal(binding.user_agent, 'SIPp');
    const lifetime = (binding.expires_at.getTime() - t.ctx.clock.nowMs()) / 1000;
    assert.ok(lifetime > 100 && lifetime <= 120, String(lifetime));
    // A rotated password stops working at once.
    const rotated = await t.request('POST', `/api/v2/extensions/${extension.id}/rotate-password`, {
      apiKey: office.key,
    });
    assert.equal(await runSipp(port, { username, password, final: 403 }), 0);
    extension.sip.password = rotated.body.data.sip.password;
    assert.equal(await runSipp(port, { username, password: extension.sip.password, final: 200 }), 0);
  });

  test('refused: a wrong password, an unknown user, another extension’s address of record', async () => {
    const other = (
      await t.request('POST', '/api/v2/extensions', {
        apiKey: office.key,
        body: { extension: '102', name: 'B' },
      })
    ).body.data;
    const before = (await bindings()).length;
    assert.equal(await runSipp(port, { username: extension.sip.username, password: 'guess', final: 403 }), 0);
    assert.equal(await runSipp(port, { username: '999_0000000000', password: 'guess', final: 403 }), 0);
    // Right credentials, but registering extension 102's address.
    assert.equal(
      await runSipp(port, {
        username: extension.sip.username,
        password: extension.sip.password,
        final: 403,
        aor: other.sip.username,
      }),
      0,
    );
    assert.equal((await bindings()).length, before);
    const [row] = await t.ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM sip_registrations WHERE extension_id = $1',
      [other.id],
    );
    assert.equal(row!.n, 0);
  });

  test("a scanner's burst of failed REGISTERs gets its address refused without a challenge", async () => {
    // Three failures so far from 127.0.0.1 (the test above); the limit is 10 in five minutes.
    assert.equal(
      await runSipp(port, { username: extension.sip.username, password: 'guess', final: 403, calls: 7 }),
      0,
    );
    // Now even the right password from this address is refused, and no challenge is given.
    assert.equal(
      await runSipp(port, {
        username: extension.sip.username,
        password: extension.sip.password,
        final: 403,
        authenticate: false,
      }),
      0,
    );
    t.ctx.clock.advance(301);
    assert.equal(
      await runSipp(port, { username: extension.sip.username, password: extension.sip.password, final: 200 }),
      0,
    );
    // Bindings run out with their Expires; the hourly clean-up deletes them.
    t.ctx.clock.advance(121);
    assert.ok((await t.ctx.registrar.removeExpired(t.ctx.clock.now())) >= 1);
    assert.deepEqual(await bindings(), []);
  });
});
