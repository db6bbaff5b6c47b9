// Ending calls between two real softphones (issue 32): the hang-up scenarios of test/sip-hangups.test.ts, with
// baresip as both phones instead of SIPp. A caller hanging up, POST /calls/{id}/hangup, a ring timeout and a
// lost ACK (a lossy path between the PBX and the callee loses our first one), each proven on the wire from both
// ends: baresip's own SIP trace (what each phone received and answered) and the PBX's debug lines (each message
// in and out, with its peer), besides the call record. The strict checker (test/helpers/app.ts) fails the file
// on any message we send that breaks RFC 3261. The phones are driven through baresip's control interface, and
// every wait is for a condition, with room for a loaded machine.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestApp } from './helpers/app.ts';
import { baresipInstalled, type Softphone, softphone, type TracedMessage } from './helpers/baresip.ts';
import type { Sender } from './helpers/messaging.ts';
import { lossySipPath } from './helpers/sip-lossy-path.ts';
import { type SipExtension, sipOffice } from './helpers/sip-office.ts';

/** The callee's end of a call in `trace`: the 200s it sent to the INVITE, and the ACKs it received. */
function calleeAnswers(trace: TracedMessage[]) {
  const invite = trace.find((message) => message.direction === 'in' && message.method === 'INVITE');
  const ofInvite = (message: TracedMessage) => message.callId === invite?.callId;
  return {
    invite,
    oks: trace.filter(
      (message) =>
        ofInvite(message) &&
        message.direction === 'out' &&
        message.status === 200 &&
        message.cseq === invite?.cseq,
    ),
    acks: trace.filter(
      (message) => ofInvite(message) && message.direction === 'in' && message.method === 'ACK',
    ),
  };
}

/** Long enough for any wait of a loaded CI machine; nothing here is a measured time. */
const PATIENCE_MS = 30_000;

/** Polls `found` until it returns something; fails with `what` after PATIENCE_MS. */
async function until<Found>(what: string, found: () => Found | undefined | Promise<Found | undefined>) {
  for (let waited = 0; waited < PATIENCE_MS; waited += 50) {
    const value = await found();
    if (value !== undefined && value !== false) return value;
    await sleep(50);
  }
  throw new Error(`waited ${PATIENCE_MS} ms for ${what}`);
}

/** One of the PBX's debug lines for a SIP message in or out. */
interface WireLine {
  msg: 'SIP in' | 'SIP out';
  method?: string;
  status?: number;
  sipCallId: string;
  cseq: string;
  peer: string;
}

describe('ending calls between baresip phones', {
  skip: !baresipInstalled && 'baresip not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let office: Sender;
  let create: Awaited<ReturnType<typeof sipOffice>>['create'];
  const started: Softphone[] = [];
  before(async () => {
    ({ t, port, office, create } = await sipOffice({ captureLog: true }));
  });
  // Each test's phones quit with it (and each test has extensions of its own, so that no phone of an earlier
  // test is still bound to one and rings too).
  afterEach(async () => {
    for (const phone of started) phone.stop();
    await Promise.all(started.splice(0).map((phone) => phone.exited));
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await t.close();
  });

  /** A caller's and a callee's extensions, numbered `caller` and `callee`, without voicemail. */
  const extensions = async (caller: string, callee: string, calleeFields: Record<string, unknown> = {}) => [
    await create(caller, { voicemail: { enabled: false } }),
    await create(callee, { voicemail: { enabled: false }, ...calleeFields }),
  ];

  /** A baresip registered as `extension`, traced and under control; it answers at once unless `manual`. */
  const phone = async (extension: SipExtension, answerMode: 'auto' | 'manual' = 'auto', through = port) => {
    const sip = extension.sip as SipExtension['sip'] & { domain: string };
    const registered = await softphone({
      sipPort: through,
      ...sip,
      frequency: 440,
      seconds: 120,
      answerMode,
      trace: true,
      control: true,
    });
    started.push(registered);
    await registered.waitFor(/\[1 binding\]/, PATIENCE_MS);
    return registered;
  };

  /** Dials `callee` from `caller` and waits until both phones say the call is established. */
  const establish = async (caller: Softphone, callee: Softphone, number: string) => {
    await caller.command('dial', number);
    await caller.waitForEvent('CALL_ESTABLISHED', PATIENCE_MS);
    await callee.waitForEvent('CALL_ESTABLISHED', PATIENCE_MS);
  };

  const wire = () =>
    t
      .logs()
      .map((line) => JSON.parse(line) as WireLine)
      .filter((line) => line.msg === 'SIP in' || line.msg === 'SIP out');
  /** What the PBX sent to, or received from, `phone`'s SIP port (or the port it is seen at). */
  const pbxSent = (phone: Softphone, seenAt = phone.port) =>
    wire().filter((line) => line.msg === 'SIP out' && line.peer === `127.0.0.1:${seenAt}`);
  const pbxReceived = (phone: Softphone, seenAt = phone.port) =>
    wire().filter((line) => line.msg === 'SIP in' && line.peer === `127.0.0.1:${seenAt}`);

  /** A request `phone` received (its trace), once it has come. */
  const received = (phone: Softphone, method: string) =>
    until(`${method} at port ${phone.port}`, () =>
      phone.sipTrace().find((message) => message.direction === 'in' && message.method === method),
    );
  /** `phone`'s answer `status` to `request` (same Call-ID and CSeq), once it has sent it. */
  const answered = (phone: Softphone, request: TracedMessage, status: number) =>
    until(`${status} to ${request.method} from port ${phone.port}`, () =>
      phone
        .sipTrace()
        .find(
          (message) =>
            message.direction === 'out' &&
            message.status === status &&
            message.callId === request.callId &&
            message.cseq === request.cseq,
        ),
    );

  /** Both phones have closed their call and list none. */
  const bothIdle = async (...phones: Softphone[]) => {
    for (const each of phones) {
      await each.waitForEvent('CALL_CLOSED', PATIENCE_MS);
      assert.match(
        await each.command('listcalls'),
        /No active calls|Active calls \(0\)/,
        `port ${each.port} is idle`,
      );
    }
  };

  /** The organization's latest call, polled through the service (the key's requests a minute are few). */
  const latestCall = async () => {
    const [row] = await t.ctx.db.query<{ id: string }>(
      'SELECT id FROM calls WHERE organization_id = $1 ORDER BY created_at DESC LIMIT 1',
      [office.id],
    );
    return row ? ((await t.ctx.calls.get(office.id, row.id)) as Record<string, any>) : undefined;
  };
  /** The latest call once its record has its end (written just after the last SIP answer). */
  const endedCall = () =>
    until('the call record to end', async () => {
      const call = await latestCall();
      return call && !['queued', 'ringing', 'in_progress'].includes(call.status) ? call : undefined;
    });

  test('the caller hangs up: the callee gets our BYE and answers 200, both phones idle, the call completed', async () => {
    const [desk, sales] = await extensions('501', '502');
    const callee = await phone(sales!);
    const caller = await phone(desk!);
    await establish(caller, callee, '502');

    await caller.command('hangup');
    const callerBye = await until("the caller's phone to send its BYE", () =>
      caller.sipTrace().find((message) => message.direction === 'out' && message.method === 'BYE'),
    );
    await until("the caller's BYE answered 200", () =>
      caller
        .sipTrace()
        .find(
          (message) =>
            message.direction === 'in' && message.status === 200 && message.cseq === callerBye.cseq,
        ),
    );
    const bye = await received(callee, 'BYE');
    await answered(callee, bye, 200);
    // The PBX's side of the same exchange: its BYE to the callee's port, and the 200 from there.
    const byesOut = pbxSent(callee).filter((line) => line.method === 'BYE');
    assert.deepEqual(
      [...new Set(byesOut.map((line) => `${line.sipCallId} ${line.cseq}`))],
      [`${bye.callId} ${bye.cseq}`],
      'one BYE to the callee (retransmissions aside), the one it received',
    );
    await until('the PBX to receive the 200 to its BYE', () =>
      pbxReceived(callee).find((line) => line.status === 200 && line.cseq === bye.cseq),
    );
    await bothIdle(caller, callee);

    const call = await endedCall();
    assert.equal(call.from, '501');
    assert.equal(call.to, '502');
    assert.equal(call.status, 'completed');
    assert.equal(call.hangupCause, 'normal_clearing');
  });

  test('POST /calls/{id}/hangup on a live call: each phone gets a BYE and answers 200, the call completed', async () => {
    const [desk, sales] = await extensions('511', '512');
    const callee = await phone(sales!);
    const caller = await phone(desk!);
    await establish(caller, callee, '512');
    const live = await until('the call in progress', async () => {
      const call = await latestCall();
      return call?.to === '512' && call.status === 'in_progress' ? call : undefined;
    });

    const hungUp = await t.request('POST', `/api/v2/calls/${live.id}/hangup`, { apiKey: office.key });
    assert.equal(hungUp.status, 200, hungUp.text);
    for (const each of [caller, callee]) {
      const bye = await received(each, 'BYE');
      await answered(each, bye, 200);
      await until(`the PBX to receive the 200 to its BYE from port ${each.port}`, () =>
        pbxReceived(each).find(
          (line) => line.status === 200 && line.sipCallId === bye.callId && line.cseq === bye.cseq,
        ),
      );
      assert.ok(
        !each.sipTrace().some((message) => message.direction === 'out' && message.method === 'BYE'),
        `the phone on port ${each.port} was hung up on; it sent no BYE of its own`,
      );
    }
    await bothIdle(caller, callee);

    const call = await endedCall();
    assert.equal(call.id, live.id);
    assert.equal(call.status, 'completed');
    assert.equal(call.hangupCause, 'hangup_requested');
  });

  test('a ring timeout: our CANCEL is answered 200 and the INVITE 487; the caller gets 480 (no voicemail)', async () => {
    const [desk, sales] = await extensions('521', '522', { ringSeconds: 5 });
    const callee = await phone(sales!, 'manual');
    const caller = await phone(desk!);
    await caller.command('dial', '522');
    await callee.waitForEvent('CALL_INCOMING', PATIENCE_MS);

    // The callee rings until the extension's ring time is over, then is cancelled.
    const invite = await received(callee, 'INVITE');
    const cancel = await received(callee, 'CANCEL');
    assert.equal(cancel.callId, invite.callId);
    assert.equal(cancel.cseq, invite.cseq.replace('INVITE', 'CANCEL'), 'the CANCEL names the INVITE it ends');
    await answered(callee, cancel, 200);
    await answered(callee, invite, 487);
    await until("the PBX's ACK of the 487", () =>
      callee
        .sipTrace()
        .find(
          (message) =>
            message.direction === 'in' &&
            message.method === 'ACK' &&
            message.callId === invite.callId &&
            message.cseq === invite.cseq.replace('INVITE', 'ACK'),
        ),
    );
    await until('the PBX to receive the 200 to its CANCEL and the 487', () => {
      const answers = pbxReceived(callee).filter((line) => line.sipCallId === invite.callId);
      return (
        answers.some((line) => line.status === 200 && line.cseq === cancel.cseq) &&
        answers.some((line) => line.status === 487 && line.cseq === invite.cseq)
      );
    });
    assert.ok(
      !callee
        .sipTrace()
        .some(
          (message) => message.direction === 'out' && message.status === 200 && message.cseq === invite.cseq,
        ),
      'the callee never answered',
    );

    // The caller's final answer: 480, which its phone acknowledges.
    // (Its first INVITE was challenged: 401, which is not the answer meant here.)
    const final = await until("the caller's final answer", () =>
      caller
        .sipTrace()
        .find(
          (message) =>
            message.direction === 'in' &&
            (message.status ?? 0) >= 300 &&
            message.status !== 401 &&
            message.cseq.endsWith(' INVITE'),
        ),
    );
    assert.equal(final.status, 480);
    await until("the caller's ACK of the 480", () =>
      pbxReceived(caller).find(
        (line) => line.method === 'ACK' && line.sipCallId === final.callId && line.cseq.endsWith('ACK'),
      ),
    );
    await bothIdle(caller, callee);

    const call = await endedCall();
    assert.equal(call.to, '522');
    assert.equal(call.status, 'no_answer');
    assert.equal(call.hangupCause, 'ring_timeout');
  });

  test("the callee's first ACK is lost: it sends its 200 again, we ACK again, the call goes on and the caller's BYE reaches it", async () => {
    const [desk, sales] = await extensions('531', '532');
    let acks = 0;
    const path = await lossySipPath(port, (message) => message.startsWith('ACK ') && ++acks === 1);
    try {
      const callee = await phone(sales!, 'auto', path.port);
      const caller = await phone(desk!);
      await establish(caller, callee, '532');
      // The lost ACK is made up for: the callee's 200 again (RFC 3261 section 13.3.1.4), and our ACK of it.
      const answers = await until('the callee to get an ACK', () => {
        const seen = calleeAnswers(callee.sipTrace());
        return seen.acks.length > 0 ? seen : undefined;
      });
      assert.equal(path.lost().length, 1, 'the first ACK was lost on the way');
      assert.ok(path.lost()[0]!.includes(`\nCall-ID: ${answers.invite!.callId}\r\n`), 'the ACK of this call');
      assert.ok(answers.oks.length >= 2, `the callee sent its 200 ${answers.oks.length} times`);
      const acksOut = pbxSent(callee, path.port).filter(
        (line) => line.method === 'ACK' && line.sipCallId === answers.invite!.callId,
      );
      assert.ok(acksOut.length >= 2, `we ACKed ${acksOut.length} times: the 200 and its retransmission`);
      const live = await latestCall();
      assert.equal(live?.status, 'in_progress', 'the call went on');

      await caller.command('hangup');
      const bye = await received(callee, 'BYE');
      await answered(callee, bye, 200);
      await until('the PBX to receive the 200 to its BYE', () =>
        pbxReceived(callee, path.port).find((line) => line.status === 200 && line.cseq === bye.cseq),
      );
      assert.ok(
        !callee.sipTrace().some((message) => message.direction === 'out' && message.method === 'BYE'),
        'the callee did not give up on the call (it sends a BYE when its 200 is never ACKed)',
      );
      await bothIdle(caller, callee);
      const call = await endedCall();
      assert.equal(call.to, '532');
      assert.equal(call.status, 'completed');
      assert.equal(call.hangupCause, 'normal_clearing');
    } finally {
      path.close();
    }
  });
});
