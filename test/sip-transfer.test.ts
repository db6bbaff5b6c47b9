// Transfers by phones over real SIP (issue 33; docs/voice.md "Transfers"): SIPp plays the trunk calling one of
// our numbers, routed to the front desk; the desk's and the other extensions' phones are raw UDP phones
// (helpers/sip-phone.ts) that register and call with digest, answer, and send REFER in their dialog. Proven:
// a blind REFER is 202, NOTIFY `SIP/2.0 100 Trying` then `SIP/2.0 200 OK` (Event refer;id, sipfrag,
// Subscription-State active then terminated), the target rings and answers, the desk gets our BYE, the caller
// talks with the target on the same call, whose record and call.transferred say so; an attended REFER (Replaces
// naming the desk's second call) joins the caller to that call's other party with a re-INVITE and ends both of
// the desk's dialogs, the second call ending `transferred`; refusals: Replaces naming no dialog is NOTIFY 481 (and
// an INVITE with such a Replaces 481), an unknown extension NOTIFY 404, a busy target NOTIFY 486 with the call
// going on, no Refer-To 400, a REFER naming no dialog 481. Every message we send is checked by the strict checker
// (test/helpers/app.ts), NOTIFY's RFC 3515 rules included.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseReplaces, referTarget } from '../src/modules/voice/sip/refer.ts';
import type { TestApp } from './helpers/app.ts';
import type { Sender } from './helpers/messaging.ts';
import type { SipExtension } from './helpers/sip-office.ts';
import { type PhoneDialog, SipPhone } from './helpers/sip-phone.ts';
import { freePort, runSipp, sippInstalled, trunkCall } from './helpers/sipp.ts';
import { callReader, cseq, deskRefers, header, notified, transferOffice } from './helpers/transfer-office.ts';

describe('transfers by SIP phones (REFER)', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;
  let sales: SipExtension;
  let deskPhone: SipPhone;
  let salesPhone: SipPhone;
  let close: () => Promise<void>;
  let calls: ReturnType<typeof callReader>;
  before(async () => {
    let desk: SipExtension;
    ({ t, port, trunkPort, office, desk, sales, deskPhone, salesPhone, close } = await transferOffice());
    calls = callReader({ t, office });
    const [number] = (await t.request('GET', '/api/v2/numbers', { apiKey: office.key })).body.data;
    const routed = await t.request('PATCH', `/api/v2/numbers/${number.id}`, {
      apiKey: office.key,
      body: { voiceRoute: { type: 'extension', target: desk.id } },
    });
    assert.equal(routed.status, 200, routed.text);
  });
  after(() => close());
  const latestCall = () => calls.latestCall();
  const until: ReturnType<typeof callReader>['until'] = (id, ok) => calls.until(id, ok);
  const transferredEvents = (callId: string) => calls.transferredEvents(callId);
  const refer = (dialog: PhoneDialog, referTo?: string) => deskRefers(deskPhone, dialog, referTo);
  const notifiedIn = (dialog: PhoneDialog, final: boolean) => notified(deskPhone, dialog, dialog.cseq, final);

  /** The trunk calls our number and waits for our BYE; the desk's phone answers. */
  async function trunkReachesDesk() {
    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      scenario: trunkCall({ untilBye: true }),
      timeoutSeconds: 40,
    });
    await deskPhone.next('INVITE');
    await deskPhone.next('ACK');
    const callId = (await latestCall()).id as string;
    await until(callId, (call) => call.status === 'in_progress');
    return { trunk, callId, dialog: deskPhone.answered! };
  }
  test('blind: REFER to 102 is 202, NOTIFY 100 then 200, the desk is hung up and the caller talks with sales on the same call', async () => {
    const { trunk, callId, dialog } = await trunkReachesDesk();
    const accepted = await refer(dialog, '<sip:102@localhost>');
    assert.equal(accepted.status, 202, accepted.text);
    const trying = await notifiedIn(dialog, false);
    assert.equal(trying.line, 'SIP/2.0 100 Trying');
    // Sales rings and answers: the desk is told, then hung up.
    const invite = await salesPhone.next('INVITE');
    assert.match(header(invite, 'from'), /^<sip:\+14155550123@/, 'sales sees the caller, not the desk');
    await salesPhone.next('ACK');
    const done = await notifiedIn(dialog, true);
    assert.equal(done.line, 'SIP/2.0 200 OK');
    assert.ok(done.cseq > trying.cseq, 'NOTIFY CSeqs go up');
    const bye = await deskPhone.next('BYE');
    assert.equal(header(bye, 'call-id'), dialog.callId);
    assert.ok(cseq(bye) > done.cseq, 'the BYE comes after the last NOTIFY');

    const moved = await until(callId, (call) => call.transferredTo !== null);
    assert.equal(moved.status, 'in_progress');
    assert.deepEqual(moved.transferredTo, { type: 'extension', target: sales.id });
    assert.deepEqual(
      (await transferredEvents(callId)).map(({ mode, by, target }) => ({ mode, by, target })),
      [{ mode: 'blind', by: 'phone', target: { type: 'extension', target: sales.id } }],
    );
    // Sales is the call's other side on the relay now: its audio, sent where our INVITE's SDP said, is passed
    // on to the caller.
    const relayPort = Number(/m=audio (\d+)/.exec(invite.body)?.[1]);
    const before = t.ctx.sipListener.pbx.mediaOf(callId)!.fromCallee;
    await salesPhone.sendRtp(relayPort, 10);
    await sleep(100);
    assert.ok(
      t.ctx.sipListener.pbx.mediaOf(callId)!.fromCallee >= before + 10,
      'sales’ audio reaches the caller through the relay',
    );

    // Sales hangs up: the trunk gets our BYE and its scenario ends well.
    const hungUp = await salesPhone.inDialogRequest('BYE', salesPhone.answered!);
    assert.equal(hungUp.status, 200);
    assert.equal(await trunk, 0, 'SIPp trunk: answered, then our BYE');
    const ended = await until(callId, (call) => call.endedAt !== null);
    assert.equal(ended.status, 'completed');
    assert.equal(ended.hangupCause, 'normal_clearing');
    assert.deepEqual(ended.transferredTo, { type: 'extension', target: sales.id });
  });

  test('attended: REFER with Replaces naming the desk’s call to sales joins the caller to sales; both desk dialogs end', async () => {
    const { trunk, callId, dialog } = await trunkReachesDesk();
    // The desk (caller on hold, as a phone does) calls sales, who answers.
    const consult = await deskPhone.call('102');
    await salesPhone.next('INVITE');
    await salesPhone.next('ACK');
    const consultCall = await latestCall();
    assert.notEqual(consultCall.id, callId);
    await until(consultCall.id, (call) => call.status === 'in_progress');

    // RFC 3891: to-tag is the tag of the dialog's other end (ours), from-tag the desk's own.
    const replaces = encodeURIComponent(
      `${consult.callId};to-tag=${consult.remoteTag};from-tag=${consult.localTag}`,
    );
    const accepted = await refer(dialog, `<sip:102@localhost?Replaces=${replaces}>`);
    assert.equal(accepted.status, 202, accepted.text);
    assert.equal((await notifiedIn(dialog, false)).line, 'SIP/2.0 100 Trying');
    // Sales' dialog is moved onto the first call's media by a re-INVITE; sales is not rung again.
    const reinvite = await salesPhone.next('INVITE');
    assert.equal(header(reinvite, 'call-id'), salesPhone.answered!.callId);
    assert.match(reinvite.body, /m=audio \d+ RTP\/AVP 0/);
    const relayPort = Number(/m=audio (\d+)/.exec(reinvite.body)?.[1]);
    await salesPhone.next('ACK');
    assert.equal((await notifiedIn(dialog, true)).line, 'SIP/2.0 200 OK');
    const byes = [await deskPhone.next('BYE'), await deskPhone.next('BYE')];
    assert.deepEqual(
      byes.map((bye) => header(bye, 'call-id')).sort(),
      [dialog.callId, consult.callId].sort(),
      'both of the desk’s dialogs end',
    );

    const moved = await until(callId, (call) => call.transferredTo !== null);
    assert.deepEqual(moved.transferredTo, { type: 'extension', target: sales.id });
    assert.deepEqual(
      (await transferredEvents(callId)).map(({ mode, by }) => ({ mode, by })),
      [{ mode: 'attended', by: 'phone' }],
    );
    const consultEnded = await until(consultCall.id, (call) => call.endedAt !== null);
    assert.equal(consultEnded.status, 'completed');
    assert.equal(consultEnded.hangupCause, 'transferred');
    assert.equal(
      salesPhone.received.filter((each) => each.method === 'BYE').length,
      0,
      'sales was not hung up',
    );
    // Sales' audio, sent where the re-INVITE said, reaches the first call's caller.
    const before = t.ctx.sipListener.pbx.mediaOf(callId)!.fromCallee;
    await salesPhone.sendRtp(relayPort, 10);
    await sleep(100);
    assert.ok(
      t.ctx.sipListener.pbx.mediaOf(callId)!.fromCallee >= before + 10,
      'joined on the first call’s relay',
    );

    const hungUp = await salesPhone.inDialogRequest('BYE', salesPhone.answered!);
    assert.equal(hungUp.status, 200, 'sales’ dialog is the first call’s now');
    assert.equal(await trunk, 0, 'SIPp trunk: answered, then our BYE');
    const ended = await until(callId, (call) => call.endedAt !== null);
    assert.equal(ended.status, 'completed');
  });

  test('blind: a phone that hangs up right after the 202 leaves the caller ringing sales, not hung up', async () => {
    const { trunk, callId, dialog } = await trunkReachesDesk();
    salesPhone.autoAnswer = false;
    try {
      const accepted = refer(dialog, '<sip:102@localhost>');
      // The desk's BYE goes out as soon as the 202 is in, before our lookup of 102 and before sales rings.
      assert.equal((await accepted).status, 202);
      assert.equal((await deskPhone.inDialogRequest('BYE', dialog)).status, 200);
      await salesPhone.next('INVITE');
      assert.equal(
        (await t.ctx.calls.get(office.id, callId)).status,
        'in_progress',
        'the caller is still there',
      );
      salesPhone.answer();
      await salesPhone.next('ACK');
    } finally {
      salesPhone.autoAnswer = true;
    }
    const moved = await until(callId, (call) => call.transferredTo !== null);
    assert.deepEqual(moved.transferredTo, { type: 'extension', target: sales.id });
    // The desk, gone, is sent nothing more: no final NOTIFY, no BYE.
    await sleep(200);
    const after = deskPhone.received.filter(
      (each) => each.method === 'BYE' || header(each, 'call-id') === dialog.callId,
    );
    assert.ok(
      after.every((each) => each.method === 'NOTIFY' && each.body.startsWith('SIP/2.0 100')),
      `nothing but the first NOTIFY: ${after.map((each) => each.method).join(', ')}`,
    );
    deskPhone.received.length = 0;
    assert.equal((await salesPhone.inDialogRequest('BYE', salesPhone.answered!)).status, 200);
    assert.equal(await trunk, 0);
    assert.equal((await until(callId, (call) => call.endedAt !== null)).hangupCause, 'normal_clearing');
  });

  test('the API: a blind transfer hangs up the desk at once and rings sales; an attended one keeps the desk until sales answers', async () => {
    for (const mode of ['blind', 'attended'] as const) {
      const { trunk, callId, dialog } = await trunkReachesDesk();
      salesPhone.autoAnswer = false;
      try {
        const asked = await t.request('POST', `/api/v2/calls/${callId}/transfer`, {
          apiKey: office.key,
          body: { target: { type: 'extension', target: sales.id }, mode },
        });
        assert.equal(asked.status, 202, asked.text);
        await salesPhone.next('INVITE');
        const deskByes = () => deskPhone.received.filter((each) => each.method === 'BYE').length;
        if (mode === 'blind') {
          const bye = await deskPhone.next('BYE');
          assert.equal(header(bye, 'call-id'), dialog.callId, 'blind: the desk is let go at once');
        } else {
          await sleep(200);
          assert.equal(deskByes(), 0, 'attended: the desk stays while sales rings');
        }
        salesPhone.answer();
        await salesPhone.next('ACK');
        if (mode === 'attended') await deskPhone.next('BYE');
        const moved = await until(callId, (call) => call.transferredTo !== null);
        assert.deepEqual(moved.transferredTo, { type: 'extension', target: sales.id });
        assert.deepEqual(
          (await transferredEvents(callId)).map(({ mode, by }) => ({ mode, by })),
          [{ mode, by: 'api' }],
        );
      } finally {
        salesPhone.autoAnswer = true;
      }
      assert.equal((await salesPhone.inDialogRequest('BYE', salesPhone.answered!)).status, 200);
      assert.equal(await trunk, 0);
      assert.equal((await until(callId, (call) => call.endedAt !== null)).status, 'completed');
    }
  });

  test('refusals: no Refer-To 400, no dialog 481, Replaces naming nothing NOTIFY 481, unknown extension NOTIFY 404, busy NOTIFY 486; the call goes on', async () => {
    const { trunk, callId, dialog } = await trunkReachesDesk();
    assert.equal((await refer(dialog)).status, 400);
    assert.equal((await refer(dialog, '<tel:+14155550100>')).status, 416, 'a Refer-To that is not a SIP URI');
    const stranger = { ...dialog, remote: dialog.remote.replace(/tag=[^;>\s]+/, 'tag=notours') };
    assert.equal((await refer(stranger, '<sip:102@localhost>')).status, 481);

    const unknownDialog = encodeURIComponent('nope@127.0.0.1;to-tag=a;from-tag=b');
    assert.equal((await refer(dialog, `<sip:102@localhost?Replaces=${unknownDialog}>`)).status, 202);
    assert.equal((await notifiedIn(dialog, false)).line, 'SIP/2.0 100 Trying');
    assert.equal((await notifiedIn(dialog, true)).line, 'SIP/2.0 481 Call/Transaction Does Not Exist');

    assert.equal((await refer(dialog, '<sip:199@localhost>')).status, 202);
    assert.equal((await notifiedIn(dialog, false)).line, 'SIP/2.0 100 Trying');
    assert.equal((await notifiedIn(dialog, true)).line, 'SIP/2.0 404 Not Found');

    salesPhone.refuse = '486 Busy Here';
    try {
      assert.equal((await refer(dialog, '<sip:102@localhost>')).status, 202);
      assert.equal((await notifiedIn(dialog, false)).line, 'SIP/2.0 100 Trying');
      await salesPhone.next('INVITE');
      assert.equal((await notifiedIn(dialog, true)).line, 'SIP/2.0 486 Busy Here');
    } finally {
      salesPhone.refuse = undefined;
    }
    // An INVITE whose Replaces names no dialog of ours: 481 (RFC 3891 section 3), after the challenge.
    const other = await SipPhone.open(port, sales);
    try {
      await assert.rejects(other.call(`101`, { Replaces: 'nope@127.0.0.1;to-tag=a;from-tag=b' }), /481/);
    } finally {
      other.close();
    }

    // None of it moved the call: the desk still talks with the caller, and hangs up.
    assert.equal(deskPhone.received.filter((each) => each.method === 'BYE').length, 0);
    const call = (await t.ctx.calls.get(office.id, callId)) as unknown as Record<string, any>;
    assert.equal(call.status, 'in_progress');
    assert.equal(call.transferredTo, null);
    assert.equal((await deskPhone.inDialogRequest('BYE', dialog)).status, 200);
    assert.equal(await trunk, 0);
    const ended = await until(callId, (each) => each.endedAt !== null);
    assert.equal(ended.transferredTo, null);
    assert.deepEqual(await transferredEvents(callId), []);
  });
});

describe('what a Refer-To asks for', () => {
  test('the dialled user part, and an attended transfer’s Replaces (escaped in the URI, RFC 3891)', () => {
    assert.deepEqual(referTarget('sip:102@pbx.example.com'), { dialled: '102' });
    assert.deepEqual(referTarget('sips:+14155550100@pbx.example.com;user=phone'), {
      dialled: '+14155550100',
    });
    assert.deepEqual(
      referTarget('sip:102@pbx.example.com?Replaces=abc%40host%3Bto-tag%3Dours%3Bfrom-tag%3Dtheirs'),
      {
        dialled: '102',
        replaces: { callId: 'abc@host', toTag: 'ours', fromTag: 'theirs' },
      },
    );
    assert.equal(referTarget('tel:+14155550100'), undefined);
    assert.equal(referTarget('sip:pbx.example.com'), undefined, 'no user part: nothing dialled');
    assert.equal(referTarget('sip:102@pbx.example.com?Replaces=%E0%A4%A'), undefined, 'bad escaping');
    assert.equal(
      referTarget('sip:102@pbx.example.com?Replaces=abc%3Bto-tag%3Dours'),
      undefined,
      'no from-tag',
    );
    assert.equal(referTarget(`sip:102@pbx.example.com?x=${'a'.repeat(2000)}`), undefined, 'too long');
    assert.deepEqual(parseReplaces('abc@host;from-tag=b;to-tag=a;early-only'), {
      callId: 'abc@host',
      toTag: 'a',
      fromTag: 'b',
    });
    assert.equal(parseReplaces(';to-tag=a;from-tag=b'), undefined);
  });
});
