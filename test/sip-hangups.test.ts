// Ending calls the way a standards-strict softphone sees it (issue 32). Every message the PBX sends here is
// also checked by the strict checker (test/helpers/app.ts fails the file on any breach): Max-Forwards on ACK,
// BYE and CANCEL, tagged To on responses, CSeq and branch rules. Proven with SIPp phones: a callee whose first
// ACK is lost retransmits its 200 and stays in the call (alone, and as the winner of two forks); the caller's
// BYE reaches the callee; POST /calls/{id}/hangup sends each phone a BYE; a ring timeout's CANCEL is answered
// 200 and the INVITE 487; SIP_DOMAIN equal to the phones' address still reaches them; the log tells each
// message at debug and each dialog's end at info, with no credential in it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
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

type Extension = SipExtension;

describe('ending SIP calls with strict phones (SIPp)', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let office: Sender;
  let create: Awaited<ReturnType<typeof sipOffice>>['create'];
  let desk: Extension;
  before(async () => {
    ({ t, port, office, create } = await sipOffice({ captureLog: true }));
    desk = await create('101');
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await t.close();
  });

  const latestCall = async () =>
    (await t.request('GET', '/api/v2/calls', { apiKey: office.key })).body.data[0] as Record<string, any>;
  /** The latest call once its record has its end (written just after the last SIP answer; slower on PostgreSQL). */
  const endedCall = async () => {
    const [row] = await t.ctx.db.query<{ id: string }>(
      'SELECT id FROM calls WHERE organization_id = $1 ORDER BY created_at DESC LIMIT 1',
      [office.id],
    );
    let call = await t.ctx.calls.get(office.id, row!.id);
    for (let i = 0; i < 200 && ['queued', 'ringing', 'in_progress'].includes(call.status); i++) {
      await sleep(25);
      call = await t.ctx.calls.get(office.id, row!.id);
    }
    return call as Record<string, any>;
  };

  /** Registers a phone of `extension` on a fresh port; the port. */
  const register = async (extension: Extension) => {
    const localPort = await freePort();
    assert.equal(
      await runSipp(port, { ...extension.sip, localPort }),
      0,
      `a phone of ${extension.extension} registers`,
    );
    return localPort;
  };

  test("the callee's first ACK is lost: its 200 again is ACKed again, the call goes on, and the caller's BYE reaches it", async () => {
    const sales = await create('102');
    const phone = answeringPhone(await register(sales), {
      scenario: answeringScenario({ ackLost: true }),
      ignoreUnexpected: true,
    });
    await phone.bound;
    const caller = await runSipp(port, { ...desk.sip, scenario: callScenario(200), callee: '102' });
    assert.equal(
      caller,
      0,
      'the caller talked and its BYE was answered 200 (not 481: the call was still ours)',
    );
    assert.equal(await phone.done, 0, 'the callee took both ACKs and then the BYE, and answered it 200');
    const call = await endedCall();
    assert.equal(call.status, 'completed');
    assert.equal(call.hangupCause, 'normal_clearing');

    // The log: each message at debug (method or status, Call-ID, CSeq, peer, transport), the dialogs' ends at
    // info, and never a credential (the caller's INVITE carried a digest response).
    const lines = t.logs().map((line) => JSON.parse(line) as Record<string, any>);
    const inviteIn = lines.find(
      (line) => line.msg === 'SIP in' && line.method === 'INVITE' && line.level === 20,
    );
    assert.ok(inviteIn, 'a debug line for the INVITE in');
    assert.ok(
      inviteIn.sipCallId && inviteIn.cseq && inviteIn.peer && inviteIn.transport,
      JSON.stringify(inviteIn),
    );
    assert.ok(
      lines.some(
        (line) =>
          line.msg === 'SIP out' &&
          line.status === 200 &&
          line.sipCallId === inviteIn.sipCallId &&
          line.cseq.endsWith('INVITE'),
      ),
      'a debug line for its 200 out',
    );
    const calleeLeg = lines.find((line) => line.msg === 'SIP dialog started' && line.side === 'callee');
    assert.ok(calleeLeg, 'an info line for the callee dialog start');
    const acks = lines.filter(
      (line) => line.msg === 'SIP out' && line.method === 'ACK' && line.sipCallId === calleeLeg.sipCallId,
    );
    assert.equal(acks.length, 2, 'the 200 and its retransmission were each ACKed');
    const byes = new Set(
      lines
        .filter(
          (line) => line.msg === 'SIP out' && line.method === 'BYE' && line.sipCallId === calleeLeg.sipCallId,
        )
        .map((line) => line.cseq),
    );
    assert.equal(
      byes.size,
      1,
      "one BYE to the callee: the caller's, passed on (the retransmission ended nothing)",
    );
    assert.ok(
      lines.some((line) => line.msg === 'SIP dialog ended' && line.level === 30 && line.side === 'caller'),
      "an info line for the caller's dialog end",
    );
    const text = t.logs().join('');
    assert.doesNotMatch(text, /response=/i, 'no digest response in the log');
    assert.ok(!text.includes(desk.sip.password), 'no password in the log');
  });

  test('the callee, whose first ACK was lost, hangs up later itself: its BYE is answered 200 and the caller gets ours', async () => {
    const sales = await create('106');
    const phone = answeringPhone(await register(sales), {
      scenario: answeringScenario({ ackLost: true, hangUpAfterMs: 1500 }),
      ignoreUnexpected: true,
    });
    await phone.bound;
    const caller = await runSipp(port, {
      ...desk.sip,
      scenario: callScenario(200, { untilBye: true }),
      callee: '106',
    });
    assert.equal(caller, 0, 'the caller was in the call until our BYE, and answered it');
    assert.equal(
      await phone.done,
      0,
      'the callee was not hung up on, and its own BYE was answered 200 (not 481)',
    );
    const call = await endedCall();
    assert.equal(call.status, 'completed');
    assert.ok((call.durationSeconds as number) >= 1);
  });

  test('an extension with two phones: the winner retransmits its 200 and keeps the call; the other is cancelled', async () => {
    const support = await create('103');
    const ringsOnly = answeringPhone(await register(support), { scenario: ringUntilCancelled() });
    const answers = answeringPhone(await register(support), {
      scenario: answeringScenario({ answerAfterMs: 500, ackLost: true }),
      ignoreUnexpected: true,
    });
    await Promise.all([ringsOnly.bound, answers.bound]);
    const caller = await runSipp(port, { ...desk.sip, scenario: callScenario(200), callee: '103' });
    assert.equal(caller, 0, 'the caller reached 103, talked and hung up');
    assert.equal(await answers.done, 0, 'the winner was ACKed twice and hung up by the BYE');
    assert.equal(await ringsOnly.done, 0, 'the other was cancelled (200 to the CANCEL, 487, ACK)');
    assert.equal((await endedCall()).status, 'completed');
  });

  test('POST /calls/{id}/hangup sends a BYE to each phone and each answers 200', async () => {
    const sales = await create('104');
    const phone = answeringPhone(await register(sales));
    await phone.bound;
    const caller = runSipp(port, {
      ...desk.sip,
      scenario: callScenario(200, { untilBye: true }),
      callee: '104',
      timeoutSeconds: 30,
    });
    // Polled through the service, not the API: the key's requests a minute are few.
    const before = (await latestCall()).id;
    let call: Record<string, any> | undefined;
    for (let i = 0; i < 400 && call?.status !== 'in_progress'; i++) {
      await sleep(50);
      const [row] = await t.ctx.db.query<{ id: string }>(
        'SELECT id FROM calls WHERE organization_id = $1 ORDER BY created_at DESC LIMIT 1',
        [office.id],
      );
      if (row && row.id !== before) call = await t.ctx.calls.get(office.id, row.id);
    }
    assert.equal(call?.status, 'in_progress');
    const hungUp = await t.request('POST', `/api/v2/calls/${call!.id}/hangup`, { apiKey: office.key });
    assert.equal(hungUp.status, 200, hungUp.text);
    assert.equal(await caller, 0, "the caller's phone got our BYE and answered 200");
    assert.equal(await phone.done, 0, "the callee's phone got our BYE and answered 200");
    const ended = await endedCall();
    assert.equal(ended.status, 'completed');
    assert.equal(ended.hangupCause, 'hangup_requested');
  });

  test('a ring timeout: our CANCEL is answered 200 and the INVITE 487; the caller hears 480', async () => {
    const sales = await create('105', { ringSeconds: 5, voicemail: { enabled: false } });
    const phone = answeringPhone(await register(sales), { scenario: ringUntilCancelled() });
    await phone.bound;
    const caller = await runSipp(port, { ...desk.sip, scenario: callScenario(480), callee: '105' });
    assert.equal(caller, 0, 'the caller was answered 480 when the ringing ended');
    assert.equal(
      await phone.done,
      0,
      'the phone got our CANCEL, answered it 200 and its INVITE 487, and got the ACK',
    );
    const call = await endedCall();
    assert.equal(call.status, 'no_answer');
    assert.equal(call.hangupCause, 'ring_timeout');
  });
});

describe('SIP_DOMAIN equal to the phones’ address (SIPp)', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  test('a call to a phone on 127.0.0.1 with SIP_DOMAIN 127.0.0.1 reaches the phone (was: back to ourselves, 404)', async () => {
    const { t, port, create } = await sipOffice({ config: { sipDomain: '127.0.0.1' } });
    try {
      const desk = await create('101');
      const sales = await create('102', { voicemail: { enabled: false } });
      const phonePort = await freePort();
      assert.equal(await runSipp(port, { ...sales.sip, localPort: phonePort }), 0, 'extension 102 registers');
      const phone = answeringPhone(phonePort);
      await phone.bound;
      const caller = await runSipp(port, { ...desk.sip, scenario: callScenario(200), callee: '102' });
      assert.equal(caller, 0, 'the call was answered by the phone, not refused');
      assert.equal(await phone.done, 0);
    } finally {
      t.ctx.sipListener.stop();
      await t.close();
    }
  });
});
