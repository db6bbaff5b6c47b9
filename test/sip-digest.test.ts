// Digest replay on the SIP listener (issue 32): each nonce count is accepted once per nonce (RFC 7616 section
// 3.3). A phone made of a bare UDP socket, computing its digest answers with node:crypto as a phone does,
// captures its own Authorization and replays it: on REGISTER and on INVITE the replay (same nonce, same nc) and
// a lower nc get a fresh 401 challenge, the next nc with a right answer passes; an expired nonce is challenged
// with `stale=true`; an answer without `qop` is refused; copies of one Authorization sent at once to two
// instances on one database pass exactly once; the counts of expired nonces are cleaned up.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { sipOffice } from './helpers/sip-office.ts';
import { freePort } from './helpers/sipp.ts';
import { UdpPhone } from './helpers/udp-phone.ts';

describe('digest nonce counts on the SIP listener', () => {
  let t: TestApp;
  let port: number;
  let sip: { username: string; password: string };
  const phones: UdpPhone[] = [];
  const phone = async (server = port) => {
    const opened = await UdpPhone.open(server, sip.username, sip.password);
    phones.push(opened);
    return opened;
  };
  before(async () => {
    let create: Awaited<ReturnType<typeof sipOffice>>['create'];
    ({ t, port, create } = await sipOffice());
    sip = (await create('101', { name: 'Desk' })).sip;
  });
  after(async () => {
    for (const each of phones) each.close();
    t.ctx.sipListener.stop();
    await t.close();
  });

  test('REGISTER: a captured Authorization replayed gets a fresh challenge; the next nc passes, a lower one does not', async () => {
    const desk = await phone();
    const challenge = await desk.register();
    assert.equal(challenge.status, 401);
    assert.equal(challenge.challenge('qop'), 'auth');
    const first = desk.authorization('REGISTER', 'sip:localhost', challenge, 1);
    assert.equal((await desk.register(first)).status, 200);

    const replay = await desk.register(first);
    assert.equal(replay.status, 401, 'the same nonce and nc again');
    assert.ok(replay.challenge('nonce'), 'a fresh challenge');
    assert.notEqual(replay.challenge('nonce'), challenge.challenge('nonce'));
    assert.equal(replay.challenge('stale'), undefined);

    // The phone itself goes on with the nonce it has: the next count, a right answer.
    assert.equal(
      (await desk.register(desk.authorization('REGISTER', 'sip:localhost', challenge, 2))).status,
      200,
    );
    assert.equal(
      (await desk.register(desk.authorization('REGISTER', 'sip:localhost', challenge, 2))).status,
      401,
    );
    // Lower than the highest used: refused even with a new cnonce and a right answer.
    const lower = await desk.register(desk.authorization('REGISTER', 'sip:localhost', challenge, 1));
    assert.equal(lower.status, 401);
    // Counts may skip (RFC 7616 only asks that they grow); the fresh challenge works from 1.
    assert.equal(
      (await desk.register(desk.authorization('REGISTER', 'sip:localhost', challenge, 9))).status,
      200,
    );
    assert.equal(
      (await desk.register(desk.authorization('REGISTER', 'sip:localhost', lower, 1))).status,
      200,
    );

    const [row] = await t.ctx.db.query<{ nc: string }>('SELECT nc FROM sip_digest_nonces WHERE nonce = $1', [
      challenge.challenge('nonce'),
    ]);
    assert.equal(Number(row!.nc), 9);
  });

  test('INVITE: a replayed Authorization gets a fresh challenge; the next nc is authenticated', async () => {
    const desk = await phone();
    const challenge = await desk.invite('999');
    assert.equal(challenge.status, 401);
    const first = desk.authorization('INVITE', 'sip:999@localhost', challenge, 1);
    // 404: authenticated, and extension 999 does not exist.
    assert.equal((await desk.invite('999', first)).status, 404);
    const replay = await desk.invite('999', first);
    assert.equal(replay.status, 401);
    assert.notEqual(replay.challenge('nonce'), challenge.challenge('nonce'));
    const next = desk.authorization('INVITE', 'sip:999@localhost', challenge, 2);
    assert.equal((await desk.invite('999', next)).status, 404);
    assert.equal((await desk.invite('999', next)).status, 401);
    // A REGISTER's count and an INVITE's share the nonce: lower than 2 is refused on either.
    assert.equal(
      (await desk.register(desk.authorization('REGISTER', 'sip:localhost', challenge, 1))).status,
      401,
    );
  });

  test('an answer without qop (RFC 2069, no nonce count) is refused', async () => {
    const desk = await phone();
    const challenge = await desk.register();
    const refused = await desk.register(desk.authorizationWithoutQop('REGISTER', 'sip:localhost', challenge));
    assert.equal(refused.status, 403);
  });

  test('copies of one Authorization sent at once to two instances on one database: exactly one passes', async () => {
    // Another instance: the same database and secrets (the nonce key and the sealed SIP passwords).
    const { jwtSecret, encryptionKeys } = t.ctx.config;
    const second = await startTestApp({ database: t.database, config: { jwtSecret, encryptionKeys } });
    const secondPort = await freePort();
    second.ctx.sipListener.start({ port: secondPort, host: '127.0.0.1' });
    try {
      const desk = await phone();
      const challenge = await desk.register();
      const captured = desk.authorization('REGISTER', 'sip:localhost', challenge, 1);
      // Twelve copies, more than the failed-attempt limit (10): a replay is not counted as a failure.
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => desk.register(captured, i % 2 === 0 ? port : secondPort)),
      );
      const statuses = answers.map((answer) => answer.status).sort();
      assert.deepEqual(statuses, [200, ...Array(11).fill(401)], statuses.join(' '));
      // The phone is not locked out: its next count passes on either instance.
      const next = desk.authorization('REGISTER', 'sip:localhost', challenge, 2);
      assert.equal((await desk.register(next, secondPort)).status, 200);
    } finally {
      second.ctx.sipListener.stop();
      await second.close();
    }
  });

  test('an expired nonce is challenged with stale=true; the counts of expired nonces are cleaned up', async () => {
    const desk = await phone();
    const challenge = await desk.register();
    assert.equal(
      (await desk.register(desk.authorization('REGISTER', 'sip:localhost', challenge, 1))).status,
      200,
    );
    t.ctx.clock.advance(301);
    const stale = await desk.register(desk.authorization('REGISTER', 'sip:localhost', challenge, 2));
    assert.equal(stale.status, 401);
    assert.equal(stale.challenge('stale'), 'true');
    assert.equal(
      (await desk.register(desk.authorization('REGISTER', 'sip:localhost', stale, 1))).status,
      200,
    );

    const count = async () =>
      (await t.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sip_digest_nonces'))[0]!.n;
    const before = await count();
    // Every nonce but the last is past its five minutes and the minute of skew allowed between instances.
    t.ctx.clock.advance(60);
    assert.equal(await t.ctx.registrar.removeExpiredNonces(t.ctx.clock.now()), before - 1);
    assert.equal(await count(), 1);
    // The hourly clean-up of the registrar's rows takes them too.
    t.ctx.clock.advance(301);
    await t.ctx.registrar.removeExpired(t.ctx.clock.now());
    assert.equal(await count(), 0);
  });
});
