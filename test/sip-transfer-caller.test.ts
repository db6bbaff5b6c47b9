// Transfers by the phone that PLACED a call (issue 33; docs/voice.md "Transfers"): the front desk's phone (a raw
// UDP phone, helpers/sip-phone.ts) calls out through the trunk, where SIPp answers as the called party and waits
// for our BYE; the desk then sends REFER in its dialog, as a phone transfers whoever it is talking with. Proven:
// blind, REFER to 102 is 202, NOTIFY `100 Trying` then `200 OK`, sales rings showing the called party's number
// (not the desk's), in the called party's codec, and answers; the desk gets our BYE after the last NOTIFY; the
// called party talks with sales on the same call through the relay, whose record and call.transferred say so,
// and sales' hang-up ends the trunk's dialog with our BYE. Attended: the desk's second call (to sales) is named by
// Replaces; sales is re-INVITEd onto the first call, both of the desk's dialogs end, the second call ends
// `transferred`. A transfer that fails (sales busy) leaves the desk talking with the called party, and the API
// can still transfer that call afterwards (the desk, its caller, stays; the called party moves). Every message we
// send is checked by the strict checker (test/helpers/app.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestApp } from './helpers/app.ts';
import type { Sender } from './helpers/messaging.ts';
import type { SipExtension } from './helpers/sip-office.ts';
import type { PhoneDialog, SipPhone } from './helpers/sip-phone.ts';
import { answeringPhone, answeringScenario, freePort, sippInstalled } from './helpers/sipp.ts';
import { callReader, cseq, deskRefers, header, notified, transferOffice } from './helpers/transfer-office.ts';

const CALLED = '+14155550199';

describe('transfers by the phone that placed the call (REFER)', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  let t: TestApp;
  let trunkPort: number;
  let office: Sender;
  let sales: SipExtension;
  let deskPhone: SipPhone;
  let salesPhone: SipPhone;
  let close: () => Promise<void>;
  let calls: ReturnType<typeof callReader>;
  before(async () => {
    ({ t, trunkPort, office, sales, deskPhone, salesPhone, close } = await transferOffice());
    calls = callReader({ t, office });
  });
  after(() => close());
  const latestCall = () => calls.latestCall();
  const until: ReturnType<typeof callReader>['until'] = (id, ok) => calls.until(id, ok);
  const transferredEvents = (callId: string) => calls.transferredEvents(callId);
  const refer = (dialog: PhoneDialog, referTo: string) => deskRefers(deskPhone, dialog, referTo);
  const notifiedIn = (dialog: PhoneDialog, final: boolean) => notified(deskPhone, dialog, dialog.cseq, final);

  /** The desk calls CALLED through the trunk, where SIPp answers and then waits for our BYE. */
  async function deskCallsOut() {
    const trunk = answeringPhone(trunkPort, {
      scenario: answeringScenario(),
      mediaPort: await freePort(),
      timeoutSeconds: 40,
    });
    await trunk.bound;
    const dialog = await deskPhone.call(CALLED);
    const callId = (await latestCall()).id as string;
    const call = await until(callId, (each) => each.status === 'in_progress');
    assert.equal(call.to, CALLED);
    return { trunk: trunk.done, callId, dialog };
  }
  /** Sales' audio, sent to `relayPort`, reaches the called party through the call's relay. */
  const salesHeardThrough = async (callId: string, relayPort: number) => {
    const before = t.ctx.sipListener.pbx.mediaOf(callId)!.fromCallee;
    await salesPhone.sendRtp(relayPort, 10);
    await sleep(100);
    assert.ok(
      t.ctx.sipListener.pbx.mediaOf(callId)!.fromCallee >= before + 10,
      'sales’ audio is passed on to the called party',
    );
  };

  test('blind: the desk’s REFER to 102 rings sales for the called party, then the desk is hung up', async () => {
    const { trunk, callId, dialog } = await deskCallsOut();
    const accepted = await refer(dialog, '<sip:102@localhost>');
    assert.equal(accepted.status, 202, accepted.text);
    const trying = await notifiedIn(dialog, false);
    assert.equal(trying.line, 'SIP/2.0 100 Trying');
    const invite = await salesPhone.next('INVITE');
    assert.match(header(invite, 'from'), /^<sip:\+14155550199@/, 'sales sees who they will talk with');
    assert.match(invite.body, /m=audio \d+ RTP\/AVP 0[ \r]/, 'offered the called party’s PCMU');
    await salesPhone.next('ACK');
    const done = await notifiedIn(dialog, true);
    assert.equal(done.line, 'SIP/2.0 200 OK');
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
    await salesHeardThrough(callId, Number(/m=audio (\d+)/.exec(invite.body)?.[1]));

    assert.equal((await salesPhone.inDialogRequest('BYE', salesPhone.answered!)).status, 200);
    assert.equal(await trunk, 0, 'SIPp as the called party: answered, then our BYE');
    const ended = await until(callId, (call) => call.endedAt !== null);
    assert.equal(ended.status, 'completed');
    assert.equal(ended.hangupCause, 'normal_clearing');
  });

  test('attended: REFER with Replaces naming the desk’s call to sales joins the called party to sales', async () => {
    const { trunk, callId, dialog } = await deskCallsOut();
    const consult = await deskPhone.call('102');
    await salesPhone.next('INVITE');
    await salesPhone.next('ACK');
    const consultCall = await latestCall();
    assert.notEqual(consultCall.id, callId);
    await until(consultCall.id, (call) => call.status === 'in_progress');

    const replaces = encodeURIComponent(
      `${consult.callId};to-tag=${consult.remoteTag};from-tag=${consult.localTag}`,
    );
    const accepted = await refer(dialog, `<sip:102@localhost?Replaces=${replaces}>`);
    assert.equal(accepted.status, 202, accepted.text);
    assert.equal((await notifiedIn(dialog, false)).line, 'SIP/2.0 100 Trying');
    const reinvite = await salesPhone.next('INVITE');
    assert.equal(header(reinvite, 'call-id'), salesPhone.answered!.callId, 'sales is moved, not rung again');
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
    assert.equal(consultEnded.hangupCause, 'transferred');
    assert.equal(salesPhone.received.filter((each) => each.method === 'BYE').length, 0, 'sales stays');
    await salesHeardThrough(callId, Number(/m=audio (\d+)/.exec(reinvite.body)?.[1]));

    assert.equal((await salesPhone.inDialogRequest('BYE', salesPhone.answered!)).status, 200);
    assert.equal(await trunk, 0, 'SIPp as the called party: our BYE once sales hung up');
    assert.equal((await until(callId, (call) => call.endedAt !== null)).status, 'completed');
  });

  test('a failed transfer leaves the desk with the called party; the API then moves the called party', async () => {
    const { trunk, callId, dialog } = await deskCallsOut();
    salesPhone.refuse = '486 Busy Here';
    try {
      assert.equal((await refer(dialog, '<sip:102@localhost>')).status, 202);
      assert.equal((await notifiedIn(dialog, false)).line, 'SIP/2.0 100 Trying');
      await salesPhone.next('INVITE');
      assert.equal((await notifiedIn(dialog, true)).line, 'SIP/2.0 486 Busy Here');
    } finally {
      salesPhone.refuse = undefined;
    }
    assert.equal(deskPhone.received.filter((each) => each.method === 'BYE').length, 0, 'the desk stays');
    assert.equal((await t.ctx.calls.get(office.id, callId)).status, 'in_progress');

    // The API's transfer moves the call's caller (the desk) to sales: the called party is let go, not the desk.
    const asked = await t.request('POST', `/api/v2/calls/${callId}/transfer`, {
      apiKey: office.key,
      body: { target: { type: 'extension', target: sales.id }, mode: 'attended' },
    });
    assert.equal(asked.status, 202, asked.text);
    const invite = await salesPhone.next('INVITE');
    assert.match(header(invite, 'from'), /^<sip:\+1[0-9]+@/, 'sales sees the call’s caller id');
    await salesPhone.next('ACK');
    assert.equal(await trunk, 0, 'the called party was let go with our BYE');
    assert.equal(deskPhone.received.filter((each) => each.method === 'BYE').length, 0, 'the desk stays');
    await until(callId, (call) => call.transferredTo !== null);
    assert.equal((await deskPhone.inDialogRequest('BYE', dialog)).status, 200);
    assert.equal((await until(callId, (call) => call.endedAt !== null)).status, 'completed');
    await sleep(100);
    assert.equal(
      salesPhone.received.filter((each) => each.method === 'BYE').length,
      1,
      'sales is hung up when the desk hangs up',
    );
    salesPhone.received.length = 0;
  });
});
