// Calls from the SIP trunk, and voicemail over RTP, with real peers on loopback. SIPp plays the trunk
// (SIP_TRUNK_URI names its address and port): it calls a number routed to voicemail, hears the greeting, streams
// a µ-law recording of speech as RTP and hangs up; the voicemail's WAV holds that audio sample for sample (G.711
// decoding is exact), a voicemail.created webhook arrives. Refusals: a number that is not ours (404: the trunk
// relays nowhere), and the same INVITE from an address that is not the trunk's (challenged like any phone).
// An uploaded greeting is what the caller hears, byte for byte in the RTP it receives.
// Out: an extension's phone dials a phone number and reaches SIPp answering as the trunk.
// The RTP session on its own, over a real UDP socket: packets out of order, a lost one, keys pressed (RFC 4733).
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import { decodeWav, encodeWav, synthesise, tone } from '../src/modules/voice/audio.ts';
import { RtpSession } from '../src/modules/voice/sip/rtp.ts';
import { answerSdp, parseOffer } from '../src/modules/voice/sip/sdp.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import { answeringPhone, callScenario, freePort, runSipp, sippInstalled, trunkCall } from './helpers/sipp.ts';
import { uploadFile } from './helpers/upload.ts';

describe('the SIP trunk and voicemail over RTP (SIPp)', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;
  let receiver: Receiver;
  let extensionId: string;
  let credentials: { username: string; password: string };
  before(async () => {
    port = await freePort();
    trunkPort = await freePort();
    t = await startTestApp({ config: { sipTrunk: { host: '127.0.0.1', port: trunkPort } } });
    t.ctx.sipListener.start({ port, host: '127.0.0.1' });
    receiver = await startReceiver(() => t.ctx.clock.nowMs());
    office = await sender(t);
    const token = await signIn(t, await createUser(t, { role: 'owner', organizationIds: [office.id] }));
    const hook = await t.request('POST', '/api/webhooks', {
      token,
      body: { url: `${receiver.url}/hooks`, events: ['voicemail.created'] },
    });
    assert.equal(hook.status, 201, hook.text);
    const extension = await api('POST', '/extensions', {
      extension: '300',
      name: 'Front desk',
      voicemail: { enabled: true, greeting: 'Hello.' },
    });
    assert.equal(extension.status, 201, extension.text);
    extensionId = extension.body.data.id;
    credentials = extension.body.data.sip;
    const [number] = (await api('GET', '/numbers')).body.data;
    const routed = await api('PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'voicemail', target: extensionId },
    });
    assert.equal(routed.status, 200, routed.text);
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await receiver.close();
    await t.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
  const calls = async () => (await api('GET', '/calls')).body.data as Record<string, any>[];

  test('a caller from the trunk leaves a voicemail: its WAV holds what they said, and the webhook arrives', async () => {
    // What the caller says: speech (a tone without espeak-ng), as the µ-law bytes the trunk sends.
    const speech = (await synthesise('Please call me back about my appointment on Tuesday.')) ?? tone(3);
    const said = g711.mulaw.encode(speech);
    // SIPp's rtp_stream sends a file's bytes as they are (a WAV header would be sent as audio): raw µ-law.
    const file = join(tmpdir(), `trunk-caller-${process.pid}.ulaw`);
    await writeFile(file, said);
    const seconds = said.length / 8000;

    const code = await runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      // The greeting ("Hello.", a pause and a beep) is over well within 3 s; then the message, then a margin.
      scenario: trunkCall({ audioFile: file, waitMs: 3000, streamMs: Math.ceil(seconds * 1000) + 600 }),
    });
    assert.equal(code, 0, 'the trunk went through INVITE, 200, ACK, RTP, BYE');

    let call: Record<string, any> | undefined;
    for (let i = 0; i < 100 && call?.status !== 'completed'; i++) {
      [call] = await calls();
      if (call?.status !== 'completed') await sleep(100);
    }
    assert.equal(call!.direction, 'inbound');
    assert.equal(call!.from, '+14155550123');
    assert.equal(call!.to, office.number);
    assert.equal(call!.status, 'completed');
    assert.equal(call!.hangupCause, 'normal_clearing');
    assert.ok(call!.voicemailId, 'the call left a voicemail');

    const voicemail = (await api('GET', `/voicemails/${call!.voicemailId}`)).body.data;
    assert.equal(voicemail.extensionId, extensionId);
    const audio = await fetch(`${t.url}/api/v2/voicemails/${voicemail.id}/audio`, {
      headers: { 'x-api-key': office.key },
    });
    assert.equal(audio.status, 200);
    const wav = decodeWav(Buffer.from(await audio.arrayBuffer()));
    assert.equal(wav.sampleRate, 8000);
    assert.equal(wav.channels, 1);
    // Duration within 10% of what was said; every sample as G.711 decodes the bytes sent.
    const expected = g711.mulaw.decode(said);
    assert.ok(
      Math.abs(wav.samples.length - expected.length) <= expected.length * 0.1,
      `${wav.samples.length} samples recorded for ${expected.length} said`,
    );
    const compared = Math.min(wav.samples.length, expected.length) - 160;
    let differing = 0;
    for (let i = 0; i < compared; i++) if (wav.samples[i] !== expected[i]) differing++;
    assert.equal(differing, 0, 'the recording is what the caller said');
    assert.ok(Math.abs(voicemail.durationSeconds - seconds) <= Math.max(1, seconds * 0.1));

    await t.ctx.jobs.drain();
    const created = receiver.received
      .map((delivery) => JSON.parse(delivery.body) as { type: string; data: { id: string } })
      .filter((event) => event.type === 'voicemail.created');
    assert.deepEqual(
      created.map((event) => event.data.id),
      [voicemail.id],
    );
  });

  test('an extension dials a phone number: out through the trunk to its callee, our number as caller id', async () => {
    const callee = answeringPhone(trunkPort);
    await callee.bound;
    const code = await runSipp(port, { ...credentials, scenario: callScenario(200), callee: '+14155550177' });
    assert.equal(code, 0, 'the phone went through INVITE, challenge, 200, ACK, BYE');
    assert.equal(await callee.done, 0, 'the trunk’s callee rang, answered and was hung up');
    let call: Record<string, any> | undefined;
    for (let i = 0; i < 50 && call?.status !== 'completed'; i++) {
      [call] = await calls();
      if (call?.status !== 'completed') await sleep(100);
    }
    assert.equal(call!.direction, 'outbound');
    assert.equal(call!.from, office.number, 'the number routed to the extension');
    assert.equal(call!.to, '+14155550177');
    assert.equal(call!.extensionId, extensionId);
    assert.equal(call!.status, 'completed');
    assert.equal(call!.hangupCause, 'normal_clearing');
    assert.ok(call!.answeredAt);
  });

  test("an uploaded greeting is what the caller hears: the box plays the owner's audio, not its text", async () => {
    // A greeting recorded at 16 kHz: a rising sweep, unlike anything espeak-ng says.
    const source = new Int16Array(16000);
    for (let i = 0, phase = 0; i < source.length; i++) {
      phase += (2 * Math.PI * (300 + (900 * i) / source.length)) / 16000;
      source[i] = Math.round(9000 * Math.sin(phase));
    }
    const wav = encodeWav(source);
    wav.writeUInt32LE(16000, 24);
    wav.writeUInt32LE(32000, 28);
    const uploaded = await uploadFile(
      `${t.url}/api/v2/extensions/${extensionId}/voicemail-greeting`,
      office.key,
      wav,
      { method: 'PUT', type: 'audio/wav', name: 'greeting.wav' },
    );
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
    const stored = await fetch(`${t.url}/api/v2/extensions/${extensionId}/voicemail-greeting`, {
      headers: { 'x-api-key': office.key },
    });
    const greeting = decodeWav(Buffer.from(await stored.arrayBuffer())).samples;

    // The trunk's SDP sends our audio to a socket of the test's own, which keeps every packet.
    const ear = createSocket('udp4');
    const earPort = await freePort();
    await new Promise<void>((resolve) => ear.bind(earPort, '127.0.0.1', () => resolve()));
    const heard: Buffer[] = [];
    ear.on('message', (packet) => heard.push(packet));
    try {
      const code = await runSipp(port, {
        username: 'trunk',
        password: 'unused',
        localPort: trunkPort,
        mediaPort: await freePort(),
        callee: office.number,
        scenario: trunkCall({ sdpMediaPort: earPort, waitMs: 2500 }),
      });
      assert.equal(code, 0, 'the trunk went through INVITE, 200, ACK, BYE');
    } finally {
      ear.close();
      const removed = await api('DELETE', `/extensions/${extensionId}/voicemail-greeting`);
      assert.equal(removed.status, 200);
    }
    // In sequence order, µ-law (the offer's codec): the greeting's own samples first, exactly as G.711 carries them.
    // The sequence starts anywhere (RFC 3550) and may wrap past 65535 within the greeting: ordered from the
    // first packet's number, modulo 2^16.
    const audio = heard
      .map((packet) => ({
        sequence: packet.readUInt16BE(2),
        type: packet[1]! & 0x7f,
        payload: packet.subarray(12),
      }))
      .filter((packet) => packet.type === 0);
    const first = audio[0]?.sequence ?? 0;
    const ordered = audio.sort(
      (a, b) => ((a.sequence - first + 65536) % 65536) - ((b.sequence - first + 65536) % 65536),
    );
    const payload = Buffer.concat(ordered.map((packet) => packet.payload));
    const expected = Buffer.from(g711.mulaw.encode(greeting));
    assert.ok(
      payload.length >= expected.length,
      `${payload.length} bytes heard for a ${expected.length}-byte greeting`,
    );
    const differsAt = expected.findIndex((byte, index) => payload[index] !== byte);
    assert.equal(
      differsAt,
      -1,
      `the caller heard the uploaded greeting (the first difference at byte ${differsAt} of ` +
        `${expected.length}, in ${ordered.length} packets, sequences ${ordered.map((p) => p.sequence).join(',')})`,
    );
  });

  test('no open relay: a number not ours is 404 from the trunk; from elsewhere the same INVITE is challenged', async () => {
    const before = (await calls()).length;
    assert.equal(
      await runSipp(port, {
        username: 'trunk',
        password: 'unused',
        localPort: trunkPort,
        callee: '+14155550999',
        scenario: trunkCall({ final: 404 }),
      }),
      0,
    );
    assert.equal(
      await runSipp(port, {
        username: 'trunk',
        password: 'unused',
        localPort: await freePort(),
        callee: office.number,
        scenario: trunkCall({ final: 401 }),
      }),
      0,
    );
    assert.equal((await calls()).length, before, 'no call was recorded');
  });
});

describe('RTP sessions', () => {
  test('the offer is read and answered: the first G.711 law offered, telephone events kept', () => {
    const offer = parseOffer(
      'v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.2\r\nt=0 0\r\n' +
        'm=audio 4000 RTP/AVP 18 8 0 96\r\na=rtpmap:18 G729/8000\r\na=rtpmap:96 telephone-event/8000\r\n',
    );
    assert.deepEqual(offer, { address: '10.0.0.2', port: 4000, codec: 'PCMA', telephoneEvent: 96 });
    const answer = answerSdp('192.0.2.7', 5000, offer!);
    assert.match(answer, /^m=audio 5000 RTP\/AVP 8 96\r$/m);
    assert.match(answer, /^c=IN IP4 192\.0\.2\.7\r$/m);
    assert.equal(parseOffer('v=0\r\nc=IN IP4 10.0.0.2\r\nm=audio 4000 RTP/AVP 18\r\n'), undefined);
    assert.equal(parseOffer('v=0\r\nm=audio 4000 RTP/AVP 0\r\n'), undefined, 'no address');
    assert.equal(parseOffer(undefined), undefined);
  });

  test('recording by timestamp (reordered, one lost), keys pressed, and audio played back at 20 ms a packet', async () => {
    const peer = createSocket('udp4');
    await new Promise<void>((resolve) => peer.bind(0, '127.0.0.1', () => resolve()));
    const heard: Buffer[] = [];
    peer.on('message', (packet) => heard.push(packet));
    const session = await RtpSession.open(
      '127.0.0.1',
      { address: '127.0.0.1', port: peer.address().port, codec: 'PCMU', telephoneEvent: 101 },
      60,
    );
    session.startRecording();
    const packet = (type: number, sequence: number, timestamp: number, payload: Uint8Array) => {
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header[1] = type;
      header.writeUInt16BE(sequence, 2);
      header.writeUInt32BE(timestamp >>> 0, 4);
      header.writeUInt32BE(1234, 8);
      return Buffer.concat([header, Buffer.from(payload)]);
    };
    const frames = [1000, 2000, 3000, 4000].map((value) =>
      g711.mulaw.encode(new Int16Array(160).fill(value)),
    );
    const start = 2 ** 32 - 320; // The timestamp wraps around during the message.
    const send = (buffer: Buffer) =>
      new Promise<void>((resolve) => peer.send(buffer, session.port, '127.0.0.1', () => resolve()));
    // Frames 0, 2, 1 (out of order); frame 3 lost; then frame 4 at 4 × 160.
    await send(packet(0, 1, start, frames[0]!));
    await send(packet(0, 3, start + 320, frames[2]!));
    await send(packet(0, 2, start + 160, frames[1]!));
    await send(packet(0, 5, start + 640, frames[3]!));
    // Key 5 (three packets of one event), then # (its end packet repeated).
    const key = (event: number, end: boolean) => new Uint8Array([event, end ? 0x80 : 0, 0, 160]);
    await send(packet(101, 6, start + 800, key(5, false)));
    await send(packet(101, 7, start + 800, key(5, false)));
    await send(packet(101, 8, start + 800, key(5, true)));
    await send(packet(101, 9, start + 1120, key(11, true)));
    await send(packet(101, 10, start + 1120, key(11, true)));
    for (let i = 0; i < 50 && session.digits.length < 2; i++) await sleep(10);

    const recorded = session.recorded();
    assert.equal(recorded.length, 800);
    const at = (frame: number) => recorded[frame * 160 + 80];
    const g711Of = (value: number) => g711.mulaw.decodeSample(g711.mulaw.encodeSample(value));
    assert.deepEqual(
      [at(0), at(1), at(2), at(3), at(4)],
      [g711Of(1000), g711Of(2000), g711Of(3000), 0, g711Of(4000)],
    );
    assert.equal(session.digits, '5#');

    await session.play(new Int16Array(480).fill(500));
    for (let i = 0; i < 50 && heard.length < 3; i++) await sleep(10);
    assert.equal(heard.length, 3, 'three 20 ms packets');
    const sequences = heard.map((p) => p.readUInt16BE(2));
    assert.deepEqual(
      sequences.map((s) => (s - sequences[0]! + 65536) % 65536),
      [0, 1, 2],
    );
    assert.deepEqual(
      heard.map((p) => (p.readUInt32BE(4) - heard[0]!.readUInt32BE(4)) >>> 0),
      [0, 160, 320],
    );
    assert.equal(heard[0]![1]! & 0x80, 0x80, 'the first packet is marked');
    assert.equal(heard[0]![1]! & 0x7f, 0, 'PCMU');
    assert.equal(heard[1]!.length, 12 + 160);
    assert.deepEqual(new Set(g711.mulaw.decode(heard[1]!.subarray(12))), new Set([g711Of(500)]));
    session.close();
    peer.close();
  });
});
