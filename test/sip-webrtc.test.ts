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
  let office: Awaited<ReturnType<typeof sipOffice>>;
  let browserExtension: SipExtension;
  let deskExtension: SipExtension;
  let wsUrl: string;

  before(async () => {
    office = await sipOffice();
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
      await media.connected();

      const invite = await desk.next('INVITE');
      const relayPort = Number(/m=audio (\d+)/.exec(invite.body)![1]);
      assert.match(invite.body, /RTP\/AVP/);
      const deskSending = desk.sendRtp(relayPort, 60);
      await media.sendAudio(60);
      await media.sendKey(5);
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
      await media.connected();
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
});
