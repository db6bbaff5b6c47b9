// Calls in the browser, server side (issue 37): a browser's SIP over WebSocket (RFC 7118) and its WebRTC media
// (ICE, DTLS-SRTP) terminated on the server and bridged to the RTP relay. The browser is played by our WebSocket
// SIP client (test/helpers/ws-sip-phone.ts) and a werift peer connection (test/helpers/webrtc-peer.ts): real
// sockets, real ICE, DTLS and SRTP. The other side is a desk phone on a UDP socket (test/helpers/sip-phone.ts).
// Every SIP message the server sends, over the WebSocket too, passes the strict phone's check (t.close()).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type SipExtension, sipOffice } from './helpers/sip-office.ts';
import { SipPhone } from './helpers/sip-phone.ts';
import { BrowserMedia } from './helpers/webrtc-peer.ts';
import { WsSipPhone } from './helpers/ws-sip-phone.ts';

const header = (text: string, name: string) =>
  new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(text)?.[1]?.trim() ?? '';

async function until<T>(read: () => T | Promise<T>, ok: (value: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await sleep(50);
    value = await read();
  }
  return value;
}

describe('SIP over WebSocket and WebRTC media', () => {
  /**
   * Both ends' ICE and DTLS up (the browser's and our bridge's): packets sent before the last DTLS flight lands
   * have no SRTP keys to meet, and a browser sending audio all call long would not notice, but a count would.
   */
  const bothConnected = async (media: BrowserMedia, sipCallId: string) => {
    await media.connected();
    const bridge = await office.t.ctx.sipListener.webrtc.bridge(sipCallId);
    assert.ok(bridge, 'a bridge for the dialog');
    await until(() => bridge.connected, Boolean);
    assert.ok(bridge.connected, 'our side of DTLS is up');
  };
  let office: Awaited<ReturnType<typeof sipOffice>>;
  let browserExtension: SipExtension;
  let deskExtension: SipExtension;
  let wsUrl: string;

  before(async () => {
    // The trunk is our own listener: a number dialled out comes back in (to an agent, below).
    office = await sipOffice({}, { trunkToSelf: true });
    browserExtension = await office.create('101');
    deskExtension = await office.create('102');
    wsUrl = `${office.t.url.replace(/^http/, 'ws')}/sip`;
  });
  after(() => office.t.close());

  test('an upgrade without the sip subprotocol is refused; with it, a browser registers with digest', async () => {
    await assert.rejects(WsSipPhone.open(wsUrl, browserExtension, ['chat']), /upgrade refused 400/);
    const browser = await WsSipPhone.open(wsUrl, browserExtension);
    assert.equal(browser.protocol, 'sip');
    const answer = await browser.register();
    assert.equal(answer.status, 200, answer.text);
    assert.match(header(answer.text, 'via'), /^SIP\/2\.0\/WS [0-9a-f]+\.invalid;/);
    const bindings = await office.t.ctx.registrar.contacts(browserExtension.id);
    assert.equal(bindings.length, 1);
    assert.match(bindings[0]!.source, /^ws:127\.0\.0\.1:\d+$/);
    // The connection gone, so is its binding: nothing could reach that browser any more (RFC 7118 section 5).
    await browser.close();
    const left = await until(
      () => office.t.ctx.registrar.contacts(browserExtension.id),
      (rows) => rows.length === 0,
    );
    assert.equal(left.length, 0);
  });

  test('a browser calls a desk phone: audio both ways through the relay, hold, hang-up, a completed call', async () => {
    const desk = await SipPhone.open(office.port, deskExtension);
    const browser = await WsSipPhone.open(wsUrl, browserExtension);
    const media = new BrowserMedia();
    try {
      assert.equal(await desk.register(), 200);
      assert.equal((await browser.register()).status, 200);
      const { answer, dialog } = await browser.call('102', await media.offer());
      assert.equal(answer.status, 200, answer.text);
      // Our answer is WebRTC: DTLS-SRTP with a fingerprint, ICE, rtcp-mux, G.711 only.
      assert.match(answer.body, /m=audio \d+ UDP\/TLS\/RTP\/SAVPF 0( 126)?\r\n/);
      assert.match(answer.body, /a=fingerprint:sha-256 [0-9A-F:]+/);
      assert.match(answer.body, /a=ice-ufrag:/);
      assert.match(answer.body, /a=rtcp-mux/);
      assert.match(answer.body, /a=setup:(active|passive)/);
      assert.match(header(answer.text, 'contact'), /;transport=ws/);
      await media.accept(answer.body);
      await bothConnected(media, dialog.callId);

      const invite = await desk.next('INVITE');
      const relayPort = Number(/m=audio (\d+)/.exec(invite.body)![1]);
      assert.match(invite.body, /RTP\/AVP/);
      const deskSending = desk.sendRtp(relayPort, 60);
      await media.sendAudio(60);
      await deskSending;
      const [live] = (await office.t.ctx.calls.page(office.office.id, { limit: 1 }, 'api')).data;
      const relayed = await until(
        () => office.t.ctx.sipListener.pbx.mediaOf(live!.id),
        (counts) => (counts?.fromCaller ?? 0) >= 30 && (counts?.fromCallee ?? 0) >= 30,
      );
      assert.ok(relayed && relayed.fromCaller >= 30 && relayed.fromCallee >= 30, JSON.stringify(relayed));
      await until(
        () => media.receivedAudio,
        (count) => count >= 30,
      );
      assert.ok(media.receivedAudio >= 30, `browser heard ${media.receivedAudio}`);
      assert.ok(desk.mediaReceived.length >= 30, `desk phone heard ${desk.mediaReceived.length}`);

      // Hold: the browser's re-INVITE says sendonly; our answer recvonly, still WebRTC, same ICE and DTLS.
      const held = await browser.inDialogRequest(
        'INVITE',
        dialog,
        media.pc.localDescription!.sdp.replace('a=sendrecv', 'a=sendonly'),
      );
      assert.equal(held.status, 200, held.text);
      assert.match(held.body, /a=recvonly/);
      assert.match(held.body, /UDP\/TLS\/RTP\/SAVPF/);
      const resumed = await browser.inDialogRequest('INVITE', dialog, media.pc.localDescription!.sdp);
      assert.equal(resumed.status, 200);
      assert.match(resumed.body, /a=sendrecv/);

      const bye = await browser.inDialogRequest('BYE', dialog);
      assert.equal(bye.status, 200);
      await desk.next('BYE');
      const call = await until(
        async () =>
          (await office.t.request('GET', '/api/v2/calls', { apiKey: office.office.key })).body.data[0],
        (record) => record?.status === 'completed',
      );
      assert.equal(call.status, 'completed');
      assert.equal(call.from, '101');
      assert.equal(call.to, '102');
      assert.equal(call.hangupCause, 'normal_clearing');
      assert.equal(office.t.ctx.sipListener.webrtc.size, 0, 'the bridge ended with the call');
    } finally {
      desk.close();
      await browser.close();
      await media.close();
    }
  });

  test('a desk phone calls the browser: our INVITE over its WebSocket with a WebRTC offer, audio both ways', async () => {
    const desk = await SipPhone.open(office.port, deskExtension);
    const browser = await WsSipPhone.open(wsUrl, browserExtension);
    const media = new BrowserMedia();
    try {
      assert.equal(await desk.register(), 200);
      assert.equal((await browser.register()).status, 200);
      let offer = '';
      browser.onInvite = async (invite) => {
        offer = invite.body;
        return media.answer(invite.body);
      };
      const calling = desk.call('101');
      const invite = await browser.next('INVITE');
      // RFC 7118: our Via says WS, our Contact is reachable over the WebSocket; the Request-URI is its Contact.
      assert.match(header(invite.text, 'via'), /^SIP\/2\.0\/WS /);
      assert.match(header(invite.text, 'contact'), /;transport=ws>/);
      assert.match(invite.uri!, /\.invalid;transport=ws$/);
      assert.equal(header(invite.text, 'route'), '', 'our own flow route is not sent');
      // The desk phone offered PCMU alone: so does our offer to the browser (no transcoding).
      assert.match(offer, /m=audio \d+ UDP\/TLS\/RTP\/SAVPF 0\r\n/);
      assert.match(offer, /a=setup:actpass/);
      assert.match(offer, /a=rtcp-mux/);
      assert.match(offer, /a=fingerprint:sha-256 /);
      assert.match(offer, /a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 \d+ typ host/);
      const dialog = await calling;
      await bothConnected(media, browser.answered!.callId);
      const relayPort = Number(/m=audio (\d+)/.exec(desk.lastAnswer!.body)![1]);
      const deskSending = desk.sendRtp(relayPort, 40);
      await media.sendAudio(40);
      await deskSending;
      await until(
        () => desk.mediaReceived.length,
        (count) => count >= 20,
      );
      await until(
        () => media.receivedAudio,
        (count) => count >= 20,
      );
      assert.ok(desk.mediaReceived.length >= 20, `desk phone heard ${desk.mediaReceived.length}`);
      assert.ok(media.receivedAudio >= 20, `browser heard ${media.receivedAudio}`);
      await desk.inDialogRequest('BYE', dialog);
      await browser.next('BYE');
      await until(
        () => office.t.ctx.sipListener.webrtc.size,
        (size) => size === 0,
      );
      assert.equal(office.t.ctx.sipListener.webrtc.size, 0);
    } finally {
      desk.close();
      await browser.close();
      await media.close();
    }
  });

  test('a browser whose WebSocket closes mid-call: the desk phone gets our BYE, the call completes', async () => {
    const desk = await SipPhone.open(office.port, deskExtension);
    const browser = await WsSipPhone.open(wsUrl, browserExtension);
    const media = new BrowserMedia();
    try {
      assert.equal(await desk.register(), 200);
      assert.equal((await browser.register()).status, 200);
      const { answer } = await browser.call('102', await media.offer());
      assert.equal(answer.status, 200, answer.text);
      await desk.next('INVITE');
      await browser.close();
      await desk.next('BYE');
      const call = await until(
        async () =>
          (await office.t.request('GET', '/api/v2/calls', { apiKey: office.office.key })).body.data[0],
        (record) => record?.status === 'completed',
      );
      assert.equal(call.status, 'completed');
      assert.equal(call.from, '101');
      await until(
        () => office.t.ctx.sipListener.webrtc.size,
        (size) => size === 0,
      );
      assert.equal(office.t.ctx.sipListener.webrtc.size, 0, 'its bridge closed');
    } finally {
      desk.close();
      await media.close();
    }
  });

  test('a browser’s keys (RFC 4733) reach an AI agent over the trunk, as a desk phone’s do', async () => {
    const api = (method: string, path: string, body?: unknown) =>
      office.t.request(method, `/api/v2${path}`, { apiKey: office.office.key, body });
    const agent = await api('POST', '/agents', {
      name: 'Front desk',
      firstMessage: 'Hello, how can I help?',
    });
    assert.equal(agent.status, 201, agent.text);
    const [number] = (await api('GET', '/numbers')).body.data;
    const routed = await api('PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'agent', target: agent.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
    const browser = await WsSipPhone.open(wsUrl, browserExtension);
    const media = new BrowserMedia();
    try {
      assert.equal((await browser.register()).status, 200);
      const { answer, dialog } = await browser.call(number.number, await media.offer());
      assert.equal(answer.status, 200, answer.text);
      await media.accept(answer.body);
      await bothConnected(media, dialog.callId);
      // The agent's greeting reaches the browser; then it presses 5 (telephone-event on its own type, 126).
      await until(
        () => media.receivedAudio,
        (count) => count >= 10,
      );
      assert.ok(media.receivedAudio >= 10, `browser heard ${media.receivedAudio}`);
      await media.sendKey(5);
      const pressed = await until(
        async () => (await office.t.ctx.agentCalls.page(office.office.id, { limit: 10 }, 'api')).data,
        (rows: Record<string, any>[]) =>
          rows.some((row) => row.transcript.some((turn: { digits?: string }) => turn.digits === '5')),
      );
      assert.ok(
        pressed.some((row: Record<string, any>) =>
          row.transcript.some((turn: { digits?: string }) => turn.digits === '5'),
        ),
        JSON.stringify(pressed),
      );
      assert.equal((await browser.inDialogRequest('BYE', dialog)).status, 200);
      // Both calls (the browser's out, the network's in to the agent) end before the app closes.
      const ended = await until(
        async () => (await api('GET', '/calls')).body.data as Record<string, any>[],
        (list) =>
          list.filter((call) => call.to === number.number && call.status === 'completed').length === 2,
      );
      assert.equal(
        ended.filter((call) => call.to === number.number && call.status === 'completed').length,
        2,
      );
      await until(
        async () => (await office.t.ctx.agentCalls.page(office.office.id, { limit: 10 }, 'api')).data,
        (rows: Record<string, any>[]) => rows.every((row) => row.outcome !== null),
      );
    } finally {
      await browser.close();
      await media.close();
    }
  });

  test('two browsers: one calls the other, audio both ways through two bridges and the relay', async () => {
    const otherExtension = await office.create('103');
    const caller = await WsSipPhone.open(wsUrl, browserExtension);
    const callee = await WsSipPhone.open(wsUrl, otherExtension);
    const callerMedia = new BrowserMedia();
    const calleeMedia = new BrowserMedia();
    try {
      assert.equal((await caller.register()).status, 200);
      assert.equal((await callee.register()).status, 200);
      callee.onInvite = (invite) => calleeMedia.answer(invite.body);
      const { answer, dialog } = await caller.call('103', await callerMedia.offer());
      assert.equal(answer.status, 200, answer.text);
      await callerMedia.accept(answer.body);
      await bothConnected(callerMedia, dialog.callId);
      await bothConnected(calleeMedia, callee.answered!.callId);
      await Promise.all([callerMedia.sendAudio(50), calleeMedia.sendAudio(50, 0)]);
      const [live] = (await office.t.ctx.calls.page(office.office.id, { limit: 1 }, 'api')).data;
      const relayed = await until(
        () => office.t.ctx.sipListener.pbx.mediaOf(live!.id),
        (counts) => (counts?.fromCaller ?? 0) >= 25 && (counts?.fromCallee ?? 0) >= 25,
      );
      assert.ok(relayed && relayed.fromCaller >= 25 && relayed.fromCallee >= 25, JSON.stringify(relayed));
      await until(
        () => Math.min(callerMedia.receivedAudio, calleeMedia.receivedAudio),
        (count) => count >= 25,
      );
      assert.ok(callerMedia.receivedAudio >= 25, `caller heard ${callerMedia.receivedAudio}`);
      assert.ok(calleeMedia.receivedAudio >= 25, `callee heard ${calleeMedia.receivedAudio}`);
      assert.equal((await caller.inDialogRequest('BYE', dialog)).status, 200);
      await callee.next('BYE');
      const call = await until(
        async () =>
          (await office.t.request('GET', '/api/v2/calls', { apiKey: office.office.key })).body.data[0],
        (record) => record?.status === 'completed',
      );
      assert.equal(call.from, '101');
      assert.equal(call.to, '103');
      await until(
        () => office.t.ctx.sipListener.webrtc.size,
        (size) => size === 0,
      );
      assert.equal(office.t.ctx.sipListener.webrtc.size, 0);
    } finally {
      await caller.close();
      await callee.close();
      await callerMedia.close();
      await calleeMedia.close();
    }
  });

  test('a call the API places from the browser’s extension: our offer, then our re-INVITE to the voicemail box', async () => {
    const api = (method: string, path: string, body?: unknown) =>
      office.t.request(method, `/api/v2${path}`, { apiKey: office.office.key, body });
    const box = await api('POST', '/extensions', {
      extension: '104',
      name: 'Away',
      voicemail: { enabled: true, greeting: 'Hello.' },
    });
    assert.equal(box.status, 201, box.text);
    const browser = await WsSipPhone.open(wsUrl, browserExtension);
    const media = new BrowserMedia();
    const reoffers: string[] = [];
    try {
      assert.equal((await browser.register()).status, 200);
      browser.onInvite = (invite) => media.answer(invite.body);
      // A browser answers a re-offer that keeps ICE and DTLS with its description again, its version up.
      browser.onReinvite = async (invite) => {
        reoffers.push(invite.body);
        return media.pc.localDescription!.sdp.replace(
          /^(o=\S+ \S+ )(\d+)/m,
          (_all, head, version) => `${head}${Number(version) + 1}`,
        );
      };
      const placed = await api('POST', '/calls', { from: '101', to: '104' });
      assert.equal(placed.status, 202, placed.text);
      await browser.next('ACK');
      await bothConnected(media, browser.answered!.callId);
      // The box has no phone: the browser's media is moved to it by a re-INVITE, translated for the browser.
      await until(
        () => reoffers.length,
        (count) => count > 0,
      );
      assert.equal(reoffers.length, 1);
      assert.match(reoffers[0]!, /UDP\/TLS\/RTP\/SAVPF/);
      assert.match(reoffers[0]!, /a=setup:actpass/);
      assert.equal(
        /a=ice-ufrag:(\S+)/.exec(reoffers[0]!)?.[1],
        /a=ice-ufrag:(\S+)/.exec(media.pc.remoteDescription!.sdp)?.[1],
        'the same ICE: no restart',
      );
      await media.sendAudio(200); // The greeting, its beep, then the message.
      assert.equal((await api('POST', `/calls/${placed.body.data.id}/hangup`)).status, 200);
      await browser.next('BYE');
      const call = await until(
        async () => (await api('GET', `/calls/${placed.body.data.id}`)).body.data,
        (record) => Boolean(record?.voicemailId),
      );
      assert.ok(call.voicemailId, JSON.stringify(call));
      const voicemail = (await api('GET', `/voicemails/${call.voicemailId}`)).body.data;
      assert.equal(voicemail.extensionId, box.body.data.id);
      assert.ok(voicemail.durationSeconds >= 1, JSON.stringify(voicemail));
    } finally {
      await browser.close();
      await media.close();
    }
  });

  test('a desk phone offering no G.711 cannot ring a browser: refused at once, the browser gets no INVITE', async () => {
    const desk = await SipPhone.open(office.port, deskExtension);
    const browser = await WsSipPhone.open(wsUrl, browserExtension);
    try {
      assert.equal(await desk.register(), 200);
      assert.equal((await browser.register()).status, 200);
      // G.722 alone: the browser would need it transcoded, which the bridge does not do.
      desk.sdp = () =>
        'v=0\r\no=phone 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 9\r\na=rtpmap:9 G722/8000\r\n';
      const { answer } = await desk.offer('101');
      assert.ok(answer.status! >= 400, answer.text);
      assert.equal(browser.log.filter((message) => message.method === 'INVITE').length, 0);
      assert.equal(office.t.ctx.sipListener.webrtc.size, 0);
    } finally {
      desk.close();
      await browser.close();
    }
  });
});
