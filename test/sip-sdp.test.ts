// The codecs we keep (issue 32): a leg whose audio we decode negotiates G.711 and RFC 4733 telephone events
// only. decodableOffer restricts a peer's offer to those (and refuses one without G.711), our answers and
// offers carry telephone-event, and an RTP session takes only its negotiated G.711 type as audio: a
// telephone-event packet is a key pressed (reported once), never a sound in the recording.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import fc from 'fast-check';
import { RtpRelay, RtpSession } from '../src/modules/voice/sip/rtp.ts';
import {
  answerSdp,
  decodableOffer,
  offerSdp,
  parseOffer,
  parseStream,
} from '../src/modules/voice/sip/sdp.ts';
import { isWebRtc, plainSdp, readAudio, revised } from '../src/modules/voice/sip/webrtc/webrtc-sdp.ts';
import { udpPeer } from './helpers/phone-media.ts';

const sdp = (...lines: string[]) => `${lines.join('\r\n')}\r\n`;
const SESSION = ['v=0', 'o=alice 2890844526 2890844526 IN IP4 10.0.0.5', 's=-', 'c=IN IP4 10.0.0.5', 't=0 0'];

describe('decodableOffer', () => {
  test('keeps PCMU, PCMA and telephone-event with their lines, in the offer’s order, and drops G.729', () => {
    const offer = sdp(
      ...SESSION,
      'm=audio 49170 RTP/AVP 18 8 0 96',
      'a=rtpmap:18 G729/8000',
      'a=fmtp:18 annexb=no',
      'a=rtpmap:8 PCMA/8000',
      'a=rtpmap:0 PCMU/8000',
      'a=rtpmap:96 telephone-event/8000',
      'a=fmtp:96 0-16',
      'a=ptime:20',
      'a=sendrecv',
    );
    assert.equal(
      decodableOffer(offer),
      sdp(
        ...SESSION,
        'm=audio 49170 RTP/AVP 8 0 96',
        'a=rtpmap:8 PCMA/8000',
        'a=rtpmap:0 PCMU/8000',
        'a=rtpmap:96 telephone-event/8000',
        'a=fmtp:96 0-16',
        'a=ptime:20',
        'a=sendrecv',
      ),
    );
    // What the offer restricted still says to our own reader: PCMA first, events on 96.
    assert.deepEqual(parseOffer(decodableOffer(offer)), {
      address: '10.0.0.5',
      port: 49170,
      codec: 'PCMA',
      telephoneEvent: 96,
    });
  });

  test('an offer of G.729 alone, or of G.711 only over SRTP or on a refused stream, cannot be decoded', () => {
    assert.equal(
      decodableOffer(sdp(...SESSION, 'm=audio 49170 RTP/AVP 18 96', 'a=rtpmap:96 telephone-event/8000')),
      undefined,
    );
    assert.equal(decodableOffer(sdp(...SESSION, 'm=audio 49170 RTP/SAVP 0')), undefined);
    assert.equal(decodableOffer(sdp(...SESSION, 'm=audio 0 RTP/AVP 0')), undefined);
    assert.equal(decodableOffer(sdp(...SESSION, 'm=video 51372 RTP/AVP 31')), undefined, 'no audio');
    // A static type an rtpmap renames is not G.711 any more.
    assert.equal(
      decodableOffer(sdp(...SESSION, 'm=audio 49170 RTP/AVP 0', 'a=rtpmap:0 G729/8000')),
      undefined,
    );
    assert.equal(decodableOffer(undefined), undefined);
    assert.equal(decodableOffer(''), undefined);
  });

  test('video, and a second audio stream, are refused with port 0; the video keeps its own lines', () => {
    const offer = sdp(
      ...SESSION,
      'm=video 51372 RTP/AVP 31 97',
      'a=rtpmap:97 H264/90000',
      'm=audio 49170 RTP/AVP 0 97',
      'a=rtpmap:97 opus/48000/2',
      'm=audio 49180 RTP/AVP 0',
    );
    assert.equal(
      decodableOffer(offer),
      sdp(
        ...SESSION,
        'm=video 0 RTP/AVP 31 97',
        'a=rtpmap:97 H264/90000',
        'm=audio 49170 RTP/AVP 0',
        'm=audio 0 RTP/AVP 0',
      ),
    );
  });

  test('odd spacing, case and line ends are read; an rtcp-fb for every format stays', () => {
    const offer = [
      'v=0',
      'c=IN IP4 10.0.0.5  ',
      'm=audio   49170  rtp/avpf  9   0  101 ',
      'a=rtpmap:9 G722/8000',
      'a=rtpmap:101  TELEPHONE-EVENT/8000',
      'a=fmtp:101 0-15',
      'a=rtcp-fb:* nack',
      'a=rtcp-fb:9 nack pli',
      '',
      '',
    ].join('\n');
    assert.equal(
      decodableOffer(offer),
      sdp(
        'v=0',
        'c=IN IP4 10.0.0.5',
        'm=audio 49170 rtp/avpf 0 101',
        'a=rtpmap:101  TELEPHONE-EVENT/8000',
        'a=fmtp:101 0-15',
        'a=rtcp-fb:* nack',
      ),
    );
  });

  test('an offer of thousands of formats is read in one pass and restricted to the three we keep', () => {
    const formats = Array.from({ length: 5_000 }, (_, index) => 96 + (index % 32));
    const offer = sdp(
      ...SESSION,
      `m=audio 49170 RTP/AVP ${formats.join(' ')} 0 8 ${formats.join(' ')}`,
      ...Array.from({ length: 500 }, (_, index) => `a=rtpmap:${96 + (index % 31)} X${index}/8000`),
      'a=rtpmap:127 telephone-event/8000',
    );
    assert.ok(offer.length < 65_535, 'no bigger than a SIP message');
    const restricted = decodableOffer(offer);
    assert.match(restricted ?? '', /^m=audio 49170 RTP\/AVP 127 0 8\r$/m);
    assert.deepEqual(
      restricted?.split('\r\n').filter((line) => line.startsWith('a=')),
      ['a=rtpmap:127 telephone-event/8000'],
    );
    // Past the largest SIP message, nothing is read at all.
    assert.equal(decodableOffer(`${offer}${'a=x\r\n'.repeat(14_000)}`), undefined);
    assert.equal(parseStream(`${offer}${'a=x\r\n'.repeat(14_000)}`), undefined);
  });
});

describe('our answers and offers', () => {
  const offered = (...formats: string[]) =>
    parseOffer(
      sdp(...SESSION, `m=audio 49170 RTP/AVP ${formats.join(' ')}`, 'a=rtpmap:96 telephone-event/8000'),
    );

  test('an answer with our media carries the offer’s telephone-event type and no codec we do not decode', () => {
    const answer = answerSdp('192.0.2.7', 5000, offered('18', '0', '96')!);
    assert.match(answer, /^m=audio 5000 RTP\/AVP 0 96\r$/m);
    assert.match(answer, /^a=rtpmap:96 telephone-event\/8000\r$/m);
    assert.match(answer, /^a=fmtp:96 0-16\r$/m);
    assert.doesNotMatch(answer, /G729|rtpmap:18/);
  });

  test('without telephone-event offered, the answer has none', () => {
    const answer = answerSdp('192.0.2.7', 5000, offered('8')!);
    assert.match(answer, /^m=audio 5000 RTP\/AVP 8\r$/m);
    assert.doesNotMatch(answer, /telephone-event|fmtp/);
  });

  test('our offer: PCMU, PCMA and telephone-event 101', () => {
    const offer = offerSdp('192.0.2.7', 5000);
    assert.match(offer, /^m=audio 5000 RTP\/AVP 0 8 101\r$/m);
    assert.match(offer, /^a=rtpmap:101 telephone-event\/8000\r$/m);
    assert.match(offer, /^a=fmtp:101 0-16\r$/m);
    assert.equal(decodableOffer(offer), offer, 'our own offer is already what we decode');
  });
});

describe('RTP session and telephone events', () => {
  test('a telephone-event packet is a key, reported once, never audio; an unnegotiated law is ignored', async () => {
    const peer = createSocket('udp4');
    await new Promise<void>((resolve) => peer.bind(0, '127.0.0.1', () => resolve()));
    const session = await RtpSession.open(
      '127.0.0.1',
      { address: '127.0.0.1', port: peer.address().port, codec: 'PCMU', telephoneEvent: 96 },
      60,
    );
    const keys: string[] = [];
    const heard: number[] = [];
    session.onDtmf = (key) => keys.push(key);
    session.onAudio = (_samples, timestamp) => heard.push(timestamp);
    session.startRecording();
    let sequence = 0;
    const send = (type: number, timestamp: number, payload: Uint8Array) => {
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header[1] = type;
      header.writeUInt16BE(sequence++, 2);
      header.writeUInt32BE(timestamp, 4);
      header.writeUInt32BE(42, 8);
      const packet = Buffer.concat([header, Buffer.from(payload)]);
      return new Promise<void>((resolve) => peer.send(packet, session.port, '127.0.0.1', () => resolve()));
    };
    const speech = g711.mulaw.encode(new Int16Array(160).fill(1200));
    // Event 9 (key 9) at volume 10 and 160 samples long: its bytes would decode to loud µ-law noise.
    const event = (key: number, end: boolean) => new Uint8Array([key, (end ? 0x80 : 0) | 10, 0, 160]);

    await send(0, 1000, speech);
    await send(96, 1160, event(9, false));
    await send(96, 1160, event(9, false));
    for (let repeat = 0; repeat < 3; repeat++) await send(96, 1160, event(9, true));
    await send(8, 1160, g711.alaw.encode(new Int16Array(160).fill(-8000))); // PCMA: not what was answered.
    await send(96, 1320, event(16, true)); // Flash: no key.
    await send(96, 1480, event(11, true));
    await send(96, 1480, event(11, true));
    await send(0, 1640, speech);
    for (let i = 0; i < 100 && heard.length < 2; i++) await sleep(10);
    await sleep(30);

    assert.deepEqual(keys, ['9', '#']);
    assert.equal(session.digits, '9#');
    assert.deepEqual(heard, [1000, 1640], 'only the two PCMU packets reach the listener');
    const recorded = session.recorded();
    const speechSample = g711.mulaw.decodeSample(g711.mulaw.encodeSample(1200));
    assert.equal(recorded.length, 800);
    assert.ok(recorded.subarray(0, 160).every((sample) => sample === speechSample));
    assert.ok(
      recorded.subarray(160, 640).every((sample) => sample === 0),
      'silence where the keys were',
    );
    assert.ok(recorded.subarray(640).every((sample) => sample === speechSample));
    session.close();
    peer.close();
  });

  test('the relay forwards a telephone-event packet but records only the G.711 audio', async () => {
    const open = udpPeer;
    const caller = await open();
    const callee = await open();
    const relay = await RtpRelay.open('127.0.0.1');
    const offer = (port: number) => sdp('v=0', 'c=IN IP4 127.0.0.1', `m=audio ${port} RTP/AVP 0 101`);
    relay.setRemote('caller', offer(caller.port));
    relay.setRemote('callee', offer(callee.port));
    relay.startRecording(60);
    const packet = (sequence: number, type: number, timestamp: number, payload: Uint8Array) => {
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header[1] = type;
      header.writeUInt16BE(sequence, 2);
      header.writeUInt32BE(timestamp, 4);
      header.writeUInt32BE(7, 8);
      return Buffer.concat([header, Buffer.from(payload)]);
    };
    const send = (buffer: Buffer) =>
      new Promise<void>((resolve) =>
        caller.socket.send(buffer, relay.port('caller'), '127.0.0.1', () => resolve()),
      );
    // A key's event packets, 960 samples long: decoded as audio they would put noise in the recording.
    for (let sequence = 1; sequence <= 3; sequence++) {
      await send(packet(sequence, 101, 1000, new Uint8Array([5, 0x8a, 0x03, 0xc0])));
    }
    await send(packet(4, 0, 1960, g711.mulaw.encode(new Int16Array(160).fill(900))));
    for (let i = 0; i < 100 && callee.heard.length < 4; i++) await sleep(10);

    assert.equal(callee.heard.length, 4, 'the callee gets the key as sent, and the audio');
    assert.equal(callee.heard[0]![1]! & 0x7f, 101);
    const recorded = relay.recorded();
    const audio = g711.mulaw.decodeSample(g711.mulaw.encodeSample(900));
    assert.equal(recorded.filter((sample) => sample !== 0).length, 160, 'only the PCMU packet is heard');
    assert.ok(recorded.every((sample) => sample === 0 || sample === audio));
    relay.close();
    caller.socket.close();
    callee.socket.close();
  });

  test('a transfer’s new party (its own RTP source and timestamps) is recorded too, and swapped sides keep their sockets', async () => {
    const open = udpPeer;
    const [caller, callee, target] = [await open(), await open(), await open()];
    const relay = await RtpRelay.open('127.0.0.1');
    const offer = (port: number) => sdp('v=0', 'c=IN IP4 127.0.0.1', `m=audio ${port} RTP/AVP 0`);
    relay.setRemote('caller', offer(caller.port));
    relay.setRemote('callee', offer(callee.port));
    relay.startRecording(60);
    const packet = (ssrc: number, timestamp: number, level: number) => {
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header.writeUInt32BE(timestamp, 4);
      header.writeUInt32BE(ssrc, 8);
      return Buffer.concat([header, Buffer.from(g711.mulaw.encode(new Int16Array(160).fill(level)))]);
    };
    const send = (from: { socket: ReturnType<typeof createSocket> }, port: number, buffer: Buffer) =>
      new Promise<void>((resolve) => from.socket.send(buffer, port, '127.0.0.1', () => resolve()));
    const calleePort = relay.port('callee');
    await send(callee, calleePort, packet(7, 1000, 500));
    for (let i = 0; i < 100 && caller.heard.length < 1; i++) await sleep(10);
    // The callee is replaced: the target's stream starts from its own random timestamp.
    relay.setRemote('callee', offer(target.port));
    await send(target, calleePort, packet(0xdead, 3_900_000_000, 900));
    for (let i = 0; i < 100 && caller.heard.length < 2; i++) await sleep(10);
    assert.equal(caller.heard.length, 2);
    const recorded = relay.recorded();
    const heardLevel = g711.mulaw.decodeSample(g711.mulaw.encodeSample(900));
    assert.ok(
      recorded.some((sample) => sample === heardLevel),
      'the target’s audio is in the recording, on the timeline where it arrived',
    );
    assert.ok(recorded.length < 8000 * 5, `a recording of a moment, not ${recorded.length} samples`);

    // Swapped: the target's port is the caller's now, and what it sends is counted and passed on as the caller's.
    relay.swapSides();
    assert.equal(relay.port('caller'), calleePort);
    const before = relay.forwarded.caller;
    await send(target, calleePort, packet(0xdead, 3_900_000_160, 900));
    for (let i = 0; i < 100 && caller.heard.length < 3; i++) await sleep(10);
    assert.equal(caller.heard.length, 3, 'still forwarded to the same party');
    assert.equal(relay.forwarded.caller, before + 1);
    relay.close();
    for (const each of [caller, callee, target]) each.socket.close();
  });
});

describe('the WebRTC edge’s descriptions (issue 37)', () => {
  const chrome = sdp(
    'v=0',
    'o=- 4611731400430051336 2 IN IP4 127.0.0.1',
    's=-',
    't=0 0',
    'a=group:BUNDLE 0',
    'm=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126',
    'c=IN IP4 0.0.0.0',
    'a=ice-ufrag:Xy1z',
    'a=ice-pwd:abcdefghijklmnopqrstuvwx',
    'a=fingerprint:sha-256 AB:CD',
    'a=setup:actpass',
    'a=mid:0',
    'a=sendonly',
    'a=rtcp-mux',
    'a=rtpmap:111 opus/48000/2',
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:8 PCMA/8000',
    'a=rtpmap:110 telephone-event/48000',
    'a=rtpmap:126 telephone-event/8000',
  );

  test('a browser’s offer: WebRTC, its G.711 and 8 kHz telephone-event in its order, direction, ICE and DTLS', () => {
    assert.equal(isWebRtc(chrome), true);
    assert.equal(isWebRtc(offerSdp('127.0.0.1', 4000)), false, 'a desk phone’s is not');
    const audio = readAudio(chrome)!;
    assert.deepEqual(audio.formats, [
      { type: 0, name: 'PCMU' },
      { type: 8, name: 'PCMA' },
      { type: 126, name: 'telephone-event' },
    ]);
    assert.equal(audio.direction, 'sendonly');
    assert.equal(audio.iceUfrag, 'Xy1z');
    assert.equal(audio.setup, 'actpass');
    const plain = plainSdp('127.0.0.1', 4000, audio.formats, audio.direction, 1);
    assert.match(plain, /m=audio 4000 RTP\/AVP 0 8 126\r\n/);
    assert.match(plain, /a=fmtp:126 0-16\r\n/);
    assert.match(plain, /a=sendonly\r\n/);
    assert.equal(parseOffer(plain)?.codec, 'PCMU', 'the PBX reads it as a desk phone’s');
  });

  test('a re-offer keeps its lines, with the direction and version asked, after c= as RFC 4566 orders', () => {
    const again = revised(chrome, 'inactive', 3, 'active');
    assert.match(again, /^o=- 4611731400430051336 3 /m);
    assert.match(again, /a=inactive\r\n/);
    assert.doesNotMatch(again, /a=sendonly/);
    assert.match(again, /a=setup:active/);
    const bare = revised(
      sdp('v=0', 'o=- 1 1 IN IP4 0.0.0.0', 'm=audio 9 RTP/AVP 0', 'c=IN IP4 0.0.0.0'),
      'recvonly',
      2,
    );
    assert.ok(bare.indexOf('a=recvonly') > bare.indexOf('c=IN'), bare);
  });

  test('random text never throws out of the readers, and a long description is read in one pass', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 2000 }), (text) => {
        readAudio(text);
        isWebRtc(text);
        revised(text, 'sendrecv', 2);
      }),
      { numRuns: 300 },
    );
    const long = `${chrome}${'a=candidate:1 1 udp 1 192.0.2.1 9 typ host\r\n'.repeat(1400)}`;
    const started = performance.now();
    assert.equal(readAudio(long)?.formats.length, 3);
    console.log(`a ${long.length}-byte description read in ${(performance.now() - started).toFixed(2)} ms`);
  });
});
