// Calls between SIP phones on the SIP listener, proven with real SIP peers (SIPp): extension 102's phone
// registers and answers; extension 101's phone authenticates its INVITE with digest credentials, talks, puts
// the callee on hold (a re-INVITE) and hangs up; both legs are carried back to back and the platform keeps the
// same call record and events as for a simulated call. Refusals: a wrong password, an extension that does not exist, a callee with no phone.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestApp } from './helpers/app.ts';
import type { Sender } from './helpers/messaging.ts';
import { type SipExtension, sipOffice } from './helpers/sip-office.ts';
import {
  answeringPhone,
  answeringScenario,
  callScenario,
  freePort,
  ringUntilCancelled,
  runSipp,
  sippInstalled,
} from './helpers/sipp.ts';

describe('calls between SIP phones (SIPp)', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let office: Sender;
  type Extension = SipExtension;
  let desk: Extension;
  let sales: Extension;
  before(async () => {
    let create: (extension: string) => Promise<Extension>;
    ({ t, port, office, create } = await sipOffice());
    desk = await create('101');
    sales = await create('102');
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await t.close();
  });

  const calls = async () =>
    (await t.request('GET', '/api/v2/calls', { apiKey: office.key })).body.data as Record<string, unknown>[];
  /**
   * The latest call once its record has its end: it is written just after the last SIP answer, so the phones
   * may be done a moment before it is (a loaded PostgreSQL run once read it still in_progress).
   */
  const endedCall = async () => {
    let [call] = await calls();
    for (let i = 0; i < 200 && ['queued', 'ringing', 'in_progress'].includes(String(call?.status)); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      [call] = await calls();
    }
    return call;
  };

  test('extension calls extension: answered, put on hold by a re-INVITE (answered recvonly), hung up; a completed internal call with its events', async () => {
    const phonePort = await freePort();
    assert.equal(
      await runSipp(port, {
        username: sales.sip.username,
        password: sales.sip.password,
        localPort: phonePort,
      }),
      0,
      'extension 102 registers',
    );
    const phone = answeringPhone(phonePort);
    await phone.bound;
    const caller = await runSipp(port, {
      username: desk.sip.username,
      password: desk.sip.password,
      scenario: callScenario(200, { hold: true }),
      callee: '102',
    });
    assert.equal(caller, 0, 'the caller’s phone went through INVITE, 200, ACK, re-INVITE, 200, ACK, BYE');
    assert.equal(await phone.done, 0, 'the callee’s phone rang, answered and was hung up');

    const call = await endedCall();
    assert.equal(call!.direction, 'internal');
    assert.equal(call!.from, '101');
    assert.equal(call!.to, '102');
    assert.equal(call!.status, 'completed');
    assert.equal(call!.hangupCause, 'normal_clearing');
    assert.equal(call!.extensionId, desk.id);
    assert.ok(call!.answeredAt);
    assert.ok((call!.durationSeconds as number) >= 1);
    const events = await t.ctx.db.query<{ type: string }>(
      "SELECT type FROM events WHERE data->>'id' = $1 ORDER BY created_at, id",
      [call!.id],
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['call.ringing', 'call.answered', 'call.completed'],
    );
  });

  test('an extension with two phones: both ring, the first to answer takes the call and the other is cancelled', async () => {
    const created = await t.request('POST', '/api/v2/extensions', {
      apiKey: office.key,
      body: { extension: '103', name: 'Support' },
    });
    assert.equal(created.status, 201, created.text);
    const support = created.body.data as Extension;
    const deskPhonePort = await freePort();
    const mobilePort = await freePort();
    for (const localPort of [deskPhonePort, mobilePort]) {
      assert.equal(await runSipp(port, { ...support.sip, localPort }), 0, 'a phone of 103 registers');
    }
    const ringsOnly = answeringPhone(deskPhonePort, { scenario: ringUntilCancelled() });
    const answers = answeringPhone(mobilePort, { scenario: answeringScenario({ answerAfterMs: 500 }) });
    await Promise.all([ringsOnly.bound, answers.bound]);
    const caller = await runSipp(port, { ...desk.sip, scenario: callScenario(200), callee: '103' });
    assert.equal(caller, 0, 'the caller reached 103 and talked');
    assert.equal(await answers.done, 0, 'one phone rang, answered and was hung up');
    assert.equal(await ringsOnly.done, 0, 'the other rang and was cancelled (200 to the CANCEL, 487, ACK)');
    const call = await endedCall();
    assert.equal(call!.to, '103');
    assert.equal(call!.status, 'completed');
    assert.equal(call!.hangupCause, 'normal_clearing');
  });

  test('refused: a wrong password (403), an extension that does not exist (404), a callee with no phone nor voicemail (480)', async () => {
    const before = (await calls()).length;
    assert.equal(
      await runSipp(port, {
        username: desk.sip.username,
        password: 'guess',
        scenario: callScenario(403),
        callee: '102',
      }),
      0,
    );
    assert.equal(
      await runSipp(port, {
        username: desk.sip.username,
        password: desk.sip.password,
        scenario: callScenario(404),
        callee: '109',
      }),
      0,
    );
    assert.equal((await calls()).length, before, 'no call was recorded');
    // 102's binding is gone and its voicemail off: the call is recorded and ends unanswered. (With voicemail
    // on, the box answers: test/sip-voicemail.test.ts.)
    await t.ctx.db.query('DELETE FROM sip_registrations');
    const off = await t.request('PATCH', `/api/v2/extensions/${sales.id}`, {
      apiKey: office.key,
      body: { voicemail: { enabled: false } },
    });
    assert.equal(off.status, 200, off.text);
    assert.equal(
      await runSipp(port, {
        username: desk.sip.username,
        password: desk.sip.password,
        scenario: callScenario(480),
        callee: '102',
      }),
      0,
    );
    const call = await endedCall();
    assert.equal(call!.status, 'no_answer');
    assert.equal(call!.hangupCause, 'not_registered');
  });
});
