// The call-flow steps that carry media, over real SIP (issue 33), with real peers on loopback: SIPp plays the
// trunk calling a number routed to a flow; the test is the caller's phone's media (a socket named in SIPp's
// INVITE) that hears what we send and sends audio and RFC 4733 keys of its own.
// Proven: a play step's WAV (fetched from a local HTTP server) reaches the caller sample for sample (as µ-law);
// a record step stores exactly what the caller sent until the finish key, and the flow goes on to hang up; a
// speech gather hears espeak-ng saying "yes" (pocketsphinx, when installed) and takes the "yes" branch; a dial's
// callerId is the From of the trunk leg; a dial of an extension and a number at once rings the phone and the
// trunk together, and cancels the trunk leg when the phone answers (the trunk is a raw UDP socket there: it
// must call us and be called by us on one address).
// The limit of that last proof, honestly: pocketsphinx's general US English model recognises espeak-ng's "yes"
// at 8 kHz, but not single words such as "sales", "no" or "help" (it hears "day old", "oh", "hello"); real
// menus want a TRANSCRIPTION_URL engine (docs/voice.md).
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import {
  concatenate,
  decodeWav,
  encodeWav,
  SAMPLE_RATE,
  silence,
  synthesise,
  tone,
} from '../src/modules/voice/audio.ts';
import { PocketsphinxTranscriber } from '../src/modules/voice/transcribers.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import {
  answeringPhone,
  answeringScenario,
  freePort,
  runSipp,
  sippInstalled,
  trunkCall,
} from './helpers/sipp.ts';

const PACKET = 160;

/** The caller's phone's media: keeps the µ-law it hears, sends µ-law audio and RFC 4733 keys. */
class CallerRtp {
  readonly heard: Buffer[] = [];
  readonly sent: Buffer[] = [];
  server?: { address: string; port: number };
  lastHeardAt = 0;
  private sequence = 2000;
  private timestamp = 80_000;

  private constructor(private readonly socket: Socket) {
    socket.on('message', (packet, from) => {
      if (packet.length <= 12 || (packet[1]! & 0x7f) !== 0) return;
      this.server = { address: from.address, port: from.port };
      this.heard.push(Buffer.from(packet.subarray(12)));
      this.lastHeardAt = Date.now();
    });
  }

  static async open(): Promise<CallerRtp> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new CallerRtp(socket);
  }

  get port(): number {
    return this.socket.address().port;
  }

  /** Waits until at least `packets` came, then `quietMs` without any. */
  async heardUntilQuiet(packets: number, quietMs: number): Promise<void> {
    for (let i = 0; i < 1000; i++) {
      if (this.heard.length >= packets && Date.now() - this.lastHeardAt >= quietMs) return;
      await sleep(20);
    }
    throw new Error(`heard ${this.heard.length} packets, wanted ${packets}`);
  }

  /** `samples` as µ-law packets at real-time pace, timestamps contiguous. */
  async send(samples: Int16Array): Promise<void> {
    const server = this.server;
    if (!server) throw new Error('nothing heard yet: no address to send to');
    for (let offset = 0; offset < samples.length; offset += PACKET) {
      const frame = new Int16Array(PACKET);
      frame.set(samples.subarray(offset, offset + PACKET));
      const payload = Buffer.from(g711.mulaw.encode(frame));
      this.sent.push(payload);
      this.socket.send(Buffer.concat([this.header(0, offset === 0), payload]), server.port, server.address);
      this.timestamp += PACKET;
      await sleep(20);
    }
  }

  /** A key as RFC 4733 events: three packets, then the end three times, one timestamp. */
  async press(key: string): Promise<void> {
    const server = this.server!;
    const event = '0123456789*#'.indexOf(key);
    for (let index = 0; index < 6; index++) {
      const body = Buffer.alloc(4);
      body[0] = event;
      body[1] = (index >= 3 ? 0x80 : 0) | 10;
      body.writeUInt16BE(Math.min(index + 1, 4) * PACKET, 2);
      this.socket.send(Buffer.concat([this.header(101, index === 0), body]), server.port, server.address);
      await sleep(20);
    }
    this.timestamp += PACKET * 4;
  }

  close(): void {
    this.socket.close();
  }

  private header(type: number, marker: boolean): Buffer {
    const header = Buffer.alloc(12);
    header[0] = 0x80;
    header[1] = (marker ? 0x80 : 0) | type;
    header.writeUInt16BE(this.sequence++ & 0xffff, 2);
    header.writeUInt32BE(this.timestamp >>> 0, 4);
    header.writeUInt32BE(0x5eed1234, 8);
    return header;
  }
}

describe('call flow steps with media on SIP: play, record, speech', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
  // A raw trunk waits for messages with no deadline of its own: a hang fails here rather than never.
  timeout: 240_000,
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;
  let numberId: string;
  let audioServer: Server;
  let audioUrl: string;
  /** 0.6 s of a rising tone: every packet differs, so an offset or a lost packet shows. */
  const menu = chirp(0.6);
  before(async () => {
    port = await freePort();
    trunkPort = await freePort();
    t = await startTestApp({ config: { sipTrunk: { host: '127.0.0.1', port: trunkPort } } });
    t.ctx.sipListener.start({ port, host: '127.0.0.1' });
    office = await sender(t);
    numberId = (await api('GET', '/numbers')).body.data[0].id;
    audioServer = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'audio/wav' });
      response.end(encodeWav(menu));
    });
    await new Promise<void>((resolve) => audioServer.listen(0, '127.0.0.1', resolve));
    audioUrl = `http://127.0.0.1:${(audioServer.address() as AddressInfo).port}/menu.wav`;
  });
  after(async () => {
    t.ctx.sipListener.stop();
    audioServer.closeAllConnections();
    await new Promise((resolve) => audioServer.close(resolve));
    await t.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
  async function routeTo(steps: unknown[]) {
    const flow = await api('POST', '/call-flows', { name: 'Media', steps });
    assert.equal(flow.status, 201, flow.text);
    const routed = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'flow', target: flow.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
  }
  /** SIPp as the trunk, calling our number with `media` named in its SDP, until our BYE. */
  const callIn = async (media: CallerRtp) =>
    runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      scenario: trunkCall({ sdpMediaPort: media.port, untilBye: true }),
      timeoutSeconds: 60,
    });
  async function endedCall(): Promise<Record<string, any>> {
    for (let i = 0; i < 800; i++) {
      const [call] = (await t.ctx.calls.page(office.id, { limit: 1 }, 'api')).data as Record<string, any>[];
      if (call?.endedAt) return call;
      await sleep(25);
    }
    throw new Error('the call never ended');
  }

  test('play: the caller hears the fetched WAV sample for sample; record: what the caller sent until # is stored', async () => {
    await routeTo([
      { type: 'play', audioUrl },
      { type: 'record', maxSeconds: 20, finishOnKey: '#' },
      { type: 'hangup' },
    ]);
    const media = await CallerRtp.open();
    const trunk = callIn(media);
    const packets = Math.ceil(menu.length / PACKET);
    await media.heardUntilQuiet(packets, 200);
    // What the phone heard is our µ-law of the WAV's samples, packet by packet.
    const padded = new Int16Array(packets * PACKET);
    padded.set(menu);
    assert.deepEqual(Buffer.concat(media.heard.slice(0, packets)), Buffer.from(g711.mulaw.encode(padded)));
    // The caller says something (a tone of its own), then presses #.
    const said = concatenate(tone(0.5, 700), silence(0.2), tone(0.3, 350));
    await media.send(said);
    await media.press('#');
    assert.equal(await trunk, 0, 'the flow went on after the record and hung up with a BYE');
    media.close();
    const call = await endedCall();
    assert.deepEqual([call.status, call.hangupCause], ['completed', 'flow_hangup']);
    assert.ok(call.recordingId, JSON.stringify(call));
    const response = await fetch(`${t.url}/api/v2/recordings/${call.recordingId}/audio`, {
      headers: { 'x-api-key': office.key },
    });
    const recorded = decodeWav(Buffer.from(await response.arrayBuffer())).samples;
    assert.deepEqual(
      recorded,
      g711.mulaw.decode(Buffer.concat(media.sent)),
      'the recording is what was sent',
    );
  });

  test('dial callerId: the trunk leg shows the number the step names in its From', async () => {
    // The office's own number is shown instead of the caller's (+14155550123, what the trunk leg shows
    // without a callerId).
    await routeTo([
      { type: 'dial', targets: [{ type: 'number', target: '+14155550177' }], callerId: office.number },
    ]);
    const trunk = createSocket('udp4');
    await new Promise<void>((resolve) => trunk.bind(trunkPort, '127.0.0.1', resolve));
    try {
      const { outbound, final } = await trunkRoundTrip(trunk, port, office.number);
      assert.match(outbound, /^INVITE sip:\+14155550177@127\.0\.0\.1:\d+ SIP\/2\.0/);
      const from = outbound.split('\r\n').find((line) => /^from:/i.test(line));
      assert.match(from ?? '', new RegExp(`<sip:\\${office.number}@`), 'the From shows the callerId');
      assert.equal(final, 486, 'the busy callee made the unanswered call busy');
    } finally {
      trunk.close();
    }
    const call = await endedCall();
    assert.deepEqual([call.status, call.from], ['busy', '+14155550123']);
  });

  test("dial at once: an extension's phone and a number through the trunk ring together; the phone answers, the trunk leg is cancelled", async () => {
    const desk = await api('POST', '/extensions', { extension: '301', name: 'Desk' });
    assert.equal(desk.status, 201, desk.text);
    const phonePort = await freePort();
    assert.equal(
      await runSipp(port, { ...desk.body.data.sip, localPort: phonePort }),
      0,
      'the desk phone registers',
    );
    const phone = answeringPhone(phonePort, {
      scenario: answeringScenario({ answerAfterMs: 1500, hangUpAfterMs: 500 }),
      mediaPort: await freePort(),
    });
    await phone.bound;
    await routeTo([
      {
        type: 'dial',
        targets: [
          { type: 'extension', target: desk.body.data.id },
          { type: 'number', target: '+14155550177' },
        ],
        callerId: office.number,
      },
    ]);
    const trunk = createSocket('udp4');
    await new Promise<void>((resolve) => trunk.bind(trunkPort, '127.0.0.1', resolve));
    try {
      const { outbound, final, canceled } = await trunkRoundTrip(trunk, port, office.number, 'ring');
      assert.match(outbound, /^INVITE sip:\+14155550177@/, 'the number rang through the trunk');
      assert.equal(canceled, true, 'the trunk leg was cancelled when the phone answered');
      assert.equal(final, 200, 'the caller was answered by the phone');
    } finally {
      trunk.close();
    }
    assert.equal(await phone.done, 0, 'the desk phone rang, answered and hung up');
    const call = await endedCall();
    assert.deepEqual([call.status, call.extensionId], ['completed', desk.body.data.id]);
  });

  test('speech: espeak-ng says "yes", the gather hears it and takes the yes branch', async (context) => {
    if (!(await PocketsphinxTranscriber.available())) return context.skip('pocketsphinx not installed');
    const yes = await synthesise('yes');
    if (!yes) return context.skip('espeak-ng not installed');
    await routeTo([
      {
        type: 'gather',
        input: ['speech'],
        timeoutSeconds: 20,
        prompt: { type: 'say', text: 'Say yes.' },
        branches: { yes: [{ type: 'record', maxSeconds: 1 }, { type: 'hangup' }] },
        otherwise: [{ type: 'hangup' }],
      },
    ]);
    const media = await CallerRtp.open();
    const trunk = callIn(media);
    // The prompt plays; the gather listens once it has ended (the phone's echo of it is not the caller).
    await media.heardUntilQuiet(10, 300);
    await media.send(concatenate(silence(0.2), yes, silence(1.2)));
    assert.equal(await trunk, 0);
    media.close();
    const call = await endedCall();
    const [gathered] = (
      await t.ctx.db.query<{ data: { speech?: string } }>(
        `SELECT data FROM events WHERE type = 'call.gather.completed' AND data->>'callId' = $1`,
        [call.id],
      )
    ).map((row) => row.data);
    assert.equal(gathered?.speech, 'yes');
    assert.ok(call.recordingId, 'the yes branch ran (its record step left a recording)');
  });
});

/**
 * The trunk as a raw UDP socket (it must both call us and be called by us, on one address): it sends an
 * INVITE from +14155550123 to `number`. Our INVITE back to it is answered 486 (`busy`), or rings (180) until
 * we CANCEL it (200, then 487). Our final answer to its own INVITE is ACKed; a 200 is then held until our BYE
 * (answered 200). Resolves with our INVITE to it, the status of our final answer, and whether we cancelled.
 */
async function trunkRoundTrip(
  socket: Socket,
  sipPort: number,
  number: string,
  callee: 'busy' | 'ring' = 'busy',
): Promise<{ outbound: string; final: number; canceled: boolean }> {
  const local = socket.address().port;
  // Each call its own Call-ID, tag and branches: a second call reusing them would be a retransmission.
  const unique = Math.random().toString(36).slice(2, 10);
  const header = (message: string, name: string) =>
    message.split('\r\n').find((line) => line.toLowerCase().startsWith(`${name.toLowerCase()}:`)) ?? '';
  const send = (lines: string[], body = '') =>
    socket.send([...lines, '', body].join('\r\n'), sipPort, '127.0.0.1');
  /** A response to `request`, its Vias and dialog headers copied, our tag on its To. */
  const respond = (request: string, status: string) =>
    send([
      `SIP/2.0 ${status}`,
      ...request.split('\r\n').filter((line) => /^via:/i.test(line)),
      header(request, 'From'),
      /;tag=/.test(header(request, 'To'))
        ? header(request, 'To')
        : `${header(request, 'To')};tag=trunkcallee`,
      header(request, 'Call-ID'),
      header(request, 'CSeq'),
      'Content-Length: 0',
    ]);
  const sdp = [
    'v=0',
    'o=trunk 1 1 IN IP4 127.0.0.1',
    's=-',
    'c=IN IP4 127.0.0.1',
    't=0 0',
    `m=audio ${local + 2} RTP/AVP 0 101`,
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:101 telephone-event/8000',
    'a=fmtp:101 0-15',
    'a=sendrecv',
    '',
  ].join('\r\n');
  const ours = (method: string, uri: string, to: string, branch: string, seq: number) => [
    `${method} ${uri} SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=${branch};rport`,
    'Max-Forwards: 70',
    to,
    `From: <sip:+14155550123@127.0.0.1>;tag=trunkcaller${unique}`,
    `Call-ID: trunk-caller-${unique}`,
    `CSeq: ${seq} ${method}`,
  ];
  const requestUri = `sip:${number}@127.0.0.1:${sipPort}`;
  let outbound: string | undefined;
  let canceled = false;
  let final: number | undefined;
  return new Promise((resolve) => {
    socket.on('message', (data) => {
      const message = data.toString('latin1');
      if (message.startsWith('INVITE ')) {
        outbound ??= message;
        return respond(message, callee === 'busy' ? '486 Busy Here' : '180 Ringing');
      }
      if (message.startsWith('CANCEL ')) {
        canceled = true;
        respond(message, '200 OK');
        return respond(outbound!, '487 Request Terminated');
      }
      if (message.startsWith('BYE ')) {
        respond(message, '200 OK');
        return resolve({ outbound: outbound ?? '', final: final ?? 0, canceled });
      }
      const status = /^SIP\/2\.0 (\d{3})/.exec(message);
      if (
        !status ||
        header(message, 'Call-ID') !== `Call-ID: trunk-caller-${unique}` ||
        Number(status[1]) < 200
      )
        return;
      final = Number(status[1]);
      if (final >= 300) {
        send([
          ...ours('ACK', requestUri, header(message, 'To'), `z9hG4bKtrunkcaller${unique}`, 1),
          'Content-Length: 0',
        ]);
        return resolve({ outbound: outbound ?? '', final, canceled });
      }
      // A 2xx: its ACK is a request of the dialog, to the Contact, on a branch of its own.
      const contact = /<([^>]+)>/.exec(header(message, 'Contact'))?.[1] ?? requestUri;
      send([
        ...ours('ACK', contact, header(message, 'To'), `z9hG4bKtrunkack${unique}`, 1),
        'Content-Length: 0',
      ]);
    });
    send(
      [
        ...ours('INVITE', requestUri, `To: <sip:${number}@127.0.0.1>`, `z9hG4bKtrunkcaller${unique}`, 1),
        `Contact: <sip:trunk@127.0.0.1:${local}>`,
        'Content-Type: application/sdp',
        `Content-Length: ${Buffer.byteLength(sdp)}`,
      ],
      sdp,
    );
  });
}

/** A tone rising from 300 to 3000 Hz over `seconds`. */
function chirp(seconds: number): Int16Array {
  const samples = new Int16Array(Math.round(seconds * SAMPLE_RATE));
  let phase = 0;
  for (let i = 0; i < samples.length; i++) {
    const frequency = 300 + (2700 * i) / samples.length;
    phase += (2 * Math.PI * frequency) / SAMPLE_RATE;
    samples[i] = Math.round(9000 * Math.sin(phase));
  }
  return samples;
}
