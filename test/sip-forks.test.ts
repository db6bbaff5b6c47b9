// Ringing over SIP (sip/forks.ts) at the level of the messages it sends: which offer each leg gets (a recorded
// call offers only what we decode: issue 32, "codecs we can keep"), and how forks end. The stack here records
// what is sent and lets the test answer as phones would; the same paths run against SIPp and baresip in
// sip-calls, sip-hangups and sip-baresip-hangups.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import type { PbxCall, RingResult } from '../src/modules/voice/pbx.ts';
import {
  ackOf,
  inDialogRefusal,
  inDialogRequest,
  namesDialog,
  uasDialog,
} from '../src/modules/voice/sip/dialog.ts';
import { Ringer } from '../src/modules/voice/sip/forks.ts';
import type { Registrar } from '../src/modules/voice/sip/registrar.ts';
import { CallSignalling } from '../src/modules/voice/sip/signalling.ts';
import { SipCallTable } from '../src/modules/voice/sip/sip-call.ts';
import type { SipMessage, SipStack } from '../src/modules/voice/sip/stack/index.ts';
import { Clock } from '../src/platform/clock.ts';

const CALLER_OFFER = [
  'v=0',
  'o=- 1 1 IN IP4 127.0.0.1',
  's=-',
  'c=IN IP4 127.0.0.1',
  't=0 0',
  'm=audio 40000 RTP/AVP 18 0 101',
  'a=rtpmap:18 G729/8000',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:101 telephone-event/8000',
  'a=fmtp:101 0-16',
  '',
].join('\r\n');

const G729_ONLY = CALLER_OFFER.replace('RTP/AVP 18 0 101', 'RTP/AVP 18').replace(
  /a=rtpmap:(0|101).*\r\n/g,
  '',
);

interface Sent {
  message: SipMessage;
  answer?: (response: SipMessage) => void;
}

function office(phones: string[] | Record<string, string[]>) {
  const sent: Sent[] = [];
  const stack: SipStack = {
    send: (message, callback) => {
      sent.push({ message, answer: callback });
    },
    destroy: () => {},
    stats: { dropped: 0, refused: 0 },
    acceptWebSocket: () => {},
    flowRoute: (remote) => ({ uri: `sip:${remote.address}@127.0.0.1;lr`, params: {} }),
    flowOf: () => undefined,
  };
  const log = pino({ level: 'silent' });
  const table = new SipCallTable();
  const signalling = new CallSignalling({ stack: () => stack, address: () => '127.0.0.1:5060', table, log });
  const registrar = {
    contacts: async (extensionId: string) =>
      (Array.isArray(phones) ? phones : (phones[extensionId] ?? [])).map((contact) => ({ contact })),
  } as unknown as Registrar;
  const ringer = new Ringer({
    clock: new Clock(),
    registrar,
    domain: 'pbx.example',
    stack: () => stack,
    mediaHosts: () => ({ bind: '127.0.0.1', advertise: '127.0.0.1' }),
    log,
    table,
    signalling,
  });
  return { sent, table, ringer };
}

/** A caller's INVITE tied to call `id`, as invites.ts leaves it. */
function callerInvite(table: SipCallTable, id: string, sdp: string): void {
  table.open(id, {
    method: 'INVITE',
    uri: 'sip:201@pbx.example',
    headers: {
      to: { uri: 'sip:201@pbx.example', params: {} },
      from: { uri: 'sip:200@pbx.example', params: { tag: 'caller' } },
      'call-id': `caller-${id}`,
      cseq: { method: 'INVITE', seq: 1 },
      via: [
        { version: '2.0', protocol: 'UDP', host: '127.0.0.1', port: 5070, params: { branch: 'z9hG4bKc' } },
      ],
      contact: [{ uri: 'sip:200@127.0.0.1:5070', params: {} }],
    },
    content: sdp,
  });
}

/** A phone's response to our INVITE. */
function response(invite: SipMessage, status: number, tag: string, sdp?: string): SipMessage {
  return {
    status,
    reason: 'x',
    headers: {
      ...invite.headers,
      to: { ...invite.headers.to, params: { tag } },
      contact: [{ uri: `sip:phone-${tag}@127.0.0.1:5080`, params: {} }],
    },
    ...(sdp ? { content: sdp } : {}),
  };
}

const call = (record: boolean, id = 'call_1'): PbxCall => ({
  id,
  direction: 'internal',
  from: '200',
  to: '201',
  record,
});
const extension = { kind: 'extension' as const, extensionId: 'ext_1', extension: '201' };
const audioLine = (sdp: string | undefined) => sdp?.split('\r\n').find((line) => line.startsWith('m=audio'));
const invites = (sent: Sent[]) => sent.filter((each) => each.message.method === 'INVITE');

async function waitFor<T>(what: () => T | undefined): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = what();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('never happened');
}

describe('ringing over SIP: offers and forks', () => {
  test('a recorded call offers the phone only what we decode: PCMU and telephone-event, not the caller’s G.729', async () => {
    const { sent, table, ringer } = office(['sip:201@127.0.0.1:5080']);
    callerInvite(table, 'call_1', CALLER_OFFER);
    const ringing = ringer.ring(call(true), extension, 30, async () => {});
    const [invite] = await waitFor(() => (invites(sent).length ? invites(sent) : undefined));
    assert.equal(
      audioLine(invite!.message.content)?.replace(/\d{4,5}/, 'PORT'),
      'm=audio PORT RTP/AVP 0 101',
    );
    assert.doesNotMatch(invite!.message.content!, /G729/);
    assert.match(invite!.message.content!, /a=rtpmap:101 telephone-event\/8000/);
    invite!.answer!(response(invite!.message, 200, 'a', CALLER_OFFER.replace('18 0 101', '0 101')));
    const result: RingResult = await ringing;
    assert.equal(result.outcome, 'answered');
    table.get('call_1')?.relay?.close();
  });

  test('a call that is not recorded passes the caller’s codecs through the relay untouched', async () => {
    const { sent, table, ringer } = office(['sip:201@127.0.0.1:5080']);
    callerInvite(table, 'call_2', CALLER_OFFER);
    const ringing = ringer.ring(call(false, 'call_2'), extension, 30, async () => {});
    const [invite] = await waitFor(() => (invites(sent).length ? invites(sent) : undefined));
    assert.match(audioLine(invite!.message.content) ?? '', / RTP\/AVP 18 0 101$/);
    invite!.answer!(response(invite!.message, 486, 'a'));
    assert.equal((await ringing).outcome, 'busy');
    table.get('call_2')?.relay?.close();
  });

  test('a recorded call whose caller offers no G.711 rings nobody: the caller gets 488 and the leg fails', async () => {
    const { sent, table, ringer } = office(['sip:201@127.0.0.1:5080']);
    callerInvite(table, 'call_3', G729_ONLY);
    const result = await ringer.ring(call(true, 'call_3'), extension, 30, async () => {});
    assert.deepEqual([result.outcome, result.cause], ['failed', 'incompatible_codecs']);
    assert.equal(invites(sent).length, 0);
    const refusal = sent.find((each) => each.message.status !== undefined);
    assert.equal(refusal?.message.status, 488);
    assert.equal(refusal?.message.headers['call-id'], 'caller-call_3');
  });

  test('several extensions at once (a ring group, a flow’s dial): one INVITE to each phone, To its own extension', async () => {
    const { sent, table, ringer } = office({
      ext_a: ['sip:a1@127.0.0.1:5080', 'sip:a2@127.0.0.1:5081'],
      ext_b: ['sip:b1@127.0.0.1:5082'],
      ext_c: [],
    });
    callerInvite(table, 'call_5', CALLER_OFFER);
    const members = [
      { extensionId: 'ext_a', extension: '201' },
      { extensionId: 'ext_b', extension: '202' },
      { extensionId: 'ext_c', extension: '203' },
    ];
    const ringing = ringer.ring(call(false, 'call_5'), { kind: 'extensions', members }, 30, async () => {});
    const all = await waitFor(() => (invites(sent).length === 3 ? invites(sent) : undefined));
    assert.deepEqual(
      all.map((each) => [each.message.uri, each.message.headers.to.uri]),
      [
        ['sip:a1@127.0.0.1:5080', 'sip:201@pbx.example'],
        ['sip:a2@127.0.0.1:5081', 'sip:201@pbx.example'],
        ['sip:b1@127.0.0.1:5082', 'sip:202@pbx.example'],
      ],
    );
    all[2]!.answer!(response(all[2]!.message, 200, 'b', CALLER_OFFER));
    assert.equal((await ringing).outcome, 'answered');
    assert.equal(sent.filter((each) => each.message.method === 'CANCEL').length, 2);
    table.get('call_5')?.relay?.close();
  });

  test('several extensions, none with a phone registered: not_registered, nothing sent', async () => {
    const { sent, table, ringer } = office({});
    callerInvite(table, 'call_6', CALLER_OFFER);
    const members = [{ extensionId: 'ext_a', extension: '201' }];
    const result = await ringer.ring(
      call(false, 'call_6'),
      { kind: 'extensions', members },
      30,
      async () => {},
    );
    assert.deepEqual([result.outcome, result.cause], ['no_answer', 'not_registered']);
    assert.equal(sent.length, 0);
  });

  test('two phones: the winner’s 200 again is ACKed again and nothing else; the other phone is cancelled once', async () => {
    const { sent, table, ringer } = office(['sip:201@127.0.0.1:5080', 'sip:201@127.0.0.1:5081']);
    callerInvite(table, 'call_4', CALLER_OFFER);
    const ringing = ringer.ring(call(false, 'call_4'), extension, 30, async () => {});
    const [first, second] = await waitFor(() => (invites(sent).length === 2 ? invites(sent) : undefined));
    const answer = response(first!.message, 200, 'win', CALLER_OFFER);
    first!.answer!(answer);
    assert.equal((await ringing).outcome, 'answered');
    first!.answer!(answer);
    first!.answer!(answer);
    const acks = sent.filter((each) => each.message.method === 'ACK');
    assert.equal(acks.length, 3);
    assert.ok(acks.every((ack) => ack.message.headers['call-id'] === first!.message.headers['call-id']));
    assert.equal(sent.filter((each) => each.message.method === 'BYE').length, 0);
    const cancels = sent.filter((each) => each.message.method === 'CANCEL');
    assert.equal(cancels.length, 1);
    assert.equal(cancels[0]!.message.headers['call-id'], second!.message.headers['call-id']);
    // The cancelled phone's 200 crossing our CANCEL: ACKed and ended with a BYE, the call unchanged.
    second!.answer!(response(second!.message, 200, 'late', CALLER_OFFER));
    const byes = sent.filter((each) => each.message.method === 'BYE');
    assert.equal(byes.length, 1);
    assert.equal(byes[0]!.message.headers['call-id'], second!.message.headers['call-id']);
    assert.equal(table.get('call_4')?.callee?.remoteTag, 'win');
    table.get('call_4')?.relay?.close();
  });
});

describe('requests from the other side of a dialog (RFC 3261 section 12.2.2)', () => {
  const invite: SipMessage = {
    method: 'INVITE',
    uri: 'sip:201@pbx.example',
    headers: {
      to: { uri: 'sip:201@pbx.example', params: {} },
      from: { uri: 'sip:200@pbx.example', params: { tag: 'theirs' } },
      'call-id': 'dialog-1',
      cseq: { method: 'INVITE', seq: 10 },
      via: [],
      contact: [{ uri: 'sip:200@127.0.0.1:5070', params: {} }],
    },
  };
  const inside = (method: string, seq: number, tags = { from: 'theirs', to: 'ours' }): SipMessage => ({
    method,
    uri: 'sip:pbx@127.0.0.1:5060',
    headers: {
      to: { uri: 'sip:201@pbx.example', params: { tag: tags.to } },
      from: { uri: 'sip:200@pbx.example', params: { tag: tags.from } },
      'call-id': 'dialog-1',
      cseq: { method, seq },
      via: [],
    },
  });

  test('a request is ours only when both tags name the dialog', () => {
    const dialog = uasDialog(invite, 'ours');
    assert.equal(namesDialog(dialog, inside('BYE', 11)), true);
    assert.equal(namesDialog(dialog, inside('BYE', 11, { from: 'other', to: 'ours' })), false);
    assert.equal(namesDialog(dialog, inside('BYE', 11, { from: 'theirs', to: 'other' })), false);
  });

  test('a CSeq below the last one is out of order (500); equal or above moves the dialog on', () => {
    const dialog = uasDialog(invite, 'ours');
    assert.deepEqual(inDialogRefusal(dialog, inside('INVITE', 9)), [500, 'CSeq Out of Order']);
    assert.equal(dialog.remoteCseq, 10);
    assert.equal(inDialogRefusal(dialog, inside('INVITE', 12)), undefined);
    assert.equal(dialog.remoteCseq, 12);
    assert.deepEqual(inDialogRefusal(dialog, inside('BYE', 11)), [500, 'CSeq Out of Order']);
    assert.equal(inDialogRefusal(dialog, inside('BYE', 13)), undefined);
  });

  test('an offer while our re-INVITE is unanswered is glare (491); a BYE is still taken', () => {
    const dialog = uasDialog(invite, 'ours');
    dialog.offering = true;
    assert.deepEqual(inDialogRefusal(dialog, inside('INVITE', 11)), [491, 'Request Pending']);
    assert.deepEqual(inDialogRefusal(dialog, inside('UPDATE', 11)), [491, 'Request Pending']);
    assert.equal(inDialogRefusal(dialog, inside('BYE', 11)), undefined);
  });

  test('in-dialog requests of ours: the remote target, both tags, the next CSeq and Max-Forwards; the ACK keeps its INVITE’s', () => {
    const dialog = uasDialog(invite, 'ours');
    const bye = inDialogRequest(dialog, 'BYE');
    assert.equal(bye.uri, 'sip:200@127.0.0.1:5070');
    assert.deepEqual([bye.headers.from.params.tag, bye.headers.to.params.tag], ['ours', 'theirs']);
    assert.deepEqual(bye.headers.cseq, { method: 'BYE', seq: 1 });
    assert.equal(bye.headers['max-forwards'], 70);
    const reinvite = inDialogRequest(dialog, 'INVITE');
    assert.equal(reinvite.headers.cseq.seq, 2);
    assert.deepEqual(ackOf(dialog, 2).headers.cseq, { method: 'ACK', seq: 2 });
  });
});
