// A call flow's media stream on real SIP (issue 33), with real peers on loopback: SIPp plays the trunk calling a
// number routed to a flow `stream → say → hangup`; the test's own UDP socket is the caller's phone's media
// (named in SIPp's INVITE: it speaks PCMU frames and RFC 4733 keys and keeps what it hears), and a real `ws`
// WebSocketServer is the app, speaking Twilio Media Streams' messages. Proven:
// - an echo app (every media payload it gets, sent straight back) returns the caller's audio to the caller's
//   RTP byte for byte, in order (silence frames between are the stream's own, while the app has nothing queued);
//   `connected` and `start` have Twilio's shapes (strings for sequence numbers and chunks); a key arrives as
//   `dtmf`; a mark sent after the echo comes back once that audio has been played; the app closing the socket
//   moves the flow on (the say is heard, then our BYE), with call.stream.started and .stopped recorded;
// - `clear` stops a long audio within one frame (the phone hears at most one more frame of it) and sends back
//   the mark behind it at once; a mark behind half a second of audio comes back only after that half second;
//   with `track: "both"` the audio played comes back to the app as `outbound` media;
// - the caller hanging up mid-stream sends the app `stop {accountSid, callSid}` and closes the socket.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type WebSocket, WebSocketServer } from 'ws';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { PhoneMedia } from './helpers/phone-media.ts';
import { freePort, runSipp, sippInstalled, trunkCall } from './helpers/sipp.ts';

type Message = Record<string, any>;

/** One connection of the app: the messages it got, and a way to wait for one. */
class AppSocket {
  readonly messages: Message[] = [];
  readonly closed: Promise<number>;
  private waiters: { match: (message: Message) => boolean; resolve: (message: Message) => void }[] = [];

  constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as Message;
      this.messages.push(message);
      for (const waiter of [...this.waiters]) {
        if (!waiter.match(message)) continue;
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    });
    this.closed = new Promise((resolve) => socket.on('close', (code) => resolve(code)));
  }

  /** The first message (already come, or to come) that matches. */
  next(match: (message: Message) => boolean, timeoutMs = 10_000): Promise<Message> {
    const seen = this.messages.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the app waited in vain')), timeoutMs);
      this.waiters.push({
        match,
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
      });
    });
  }

  send(message: Message): void {
    this.socket.send(JSON.stringify(message));
  }

  get streamSid(): string {
    return this.messages.find((message) => message.event === 'start')!.streamSid;
  }
}

/** `count` frames of 20 ms of noise that is never a frame of silence. */
function noise(count: number): Buffer[] {
  return Array.from({ length: count }, () => {
    const frame = randomBytes(160);
    frame[0] = 0x10;
    return frame;
  });
}

const silent = (frame: Buffer) => frame.every((byte) => byte === 0xff);

describe('a media stream on SIP: the caller, a Twilio Media Streams app, and the flow after it', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;
  let server: WebSocketServer;
  let appUrl: string;
  let numberId: string;
  const connections: AppSocket[] = [];
  let connected: (app: AppSocket) => void = () => {};

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: office.key, body });

  before(async () => {
    port = await freePort();
    trunkPort = await freePort();
    t = await startTestApp({ config: { sipTrunk: { host: '127.0.0.1', port: trunkPort } } });
    t.ctx.sipListener.start({ port, host: '127.0.0.1' });
    office = await sender(t);
    server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', resolve));
    appUrl = `ws://127.0.0.1:${(server.address() as { port: number }).port}/media`;
    server.on('connection', (socket) => {
      const app = new AppSocket(socket);
      connections.push(app);
      connected(app);
    });
    [{ id: numberId }] = (await api('GET', '/numbers')).body.data;
  });
  after(async () => {
    t.ctx.sipListener.stop();
    for (const client of server.clients) client.terminate();
    await new Promise((resolve) => server.close(resolve));
    await t.close();
  });

  /** Routes the office's number to a new flow: the stream, then a goodbye, then our hang-up. */
  async function routeToStream(track?: 'inbound' | 'both'): Promise<void> {
    const flow = await api('POST', '/call-flows', {
      name: 'Bot',
      steps: [
        { type: 'stream', url: appUrl, ...(track ? { track } : {}) },
        { type: 'say', text: 'Thank you for calling. Goodbye.' },
        { type: 'hangup' },
      ],
    });
    assert.equal(flow.status, 201, flow.text);
    const routed = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'flow', target: flow.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
  }

  /** The app's next connection. */
  const nextApp = () =>
    new Promise<AppSocket>((resolve) => {
      connected = resolve;
    });

  /** The latest call once its record has its end. */
  async function endedCall(): Promise<Record<string, any>> {
    for (let i = 0; i < 400; i++) {
      const [call] = (await t.ctx.calls.page(office.id, { limit: 1 }, 'api')).data as Record<string, any>[];
      if (call?.endedAt) return call;
      await sleep(25);
    }
    throw new Error('the call never ended');
  }
  const streamEvents = async (callId: string) =>
    (
      await t.ctx.db.query<{ type: string; data: Record<string, any> }>(
        `SELECT type, data FROM events WHERE type LIKE 'call.stream.%' AND data->>'callId' = $1 ORDER BY created_at, id`,
        [callId],
      )
    ).map((row): Record<string, any> => ({ type: row.type, ...row.data }));

  test('an echo app returns the caller’s audio byte for byte; start, dtmf and a mark; closing moves the flow on', async () => {
    await routeToStream();
    const phone = await PhoneMedia.open();
    phone.keep = true;
    const appConnects = nextApp();
    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      scenario: trunkCall({ sdpMediaPort: phone.port, untilBye: true }),
      timeoutSeconds: 60,
    });
    const app = await appConnects;
    // The echo: each media payload straight back, as a bot that repeats what it hears.
    app.socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as Message;
      if (message.event === 'media') {
        app.send({ event: 'media', streamSid: message.streamSid, media: { payload: message.media.payload } });
      }
    });
    const start = await app.next((message) => message.event === 'start');
    // The phone hears the stream's silence, so it knows where to send; then it speaks two seconds.
    for (let i = 0; i < 200 && !phone.server; i++) await sleep(10);
    const spoken = noise(100);
    await phone.talk(spoken);
    await phone.press('5');
    const dtmf = await app.next((message) => message.event === 'dtmf');
    // A mark behind the last echo: back once all of it has been played to the phone.
    const lastSpoken = spoken.at(-1)!.toString('base64');
    await app.next((message) => message.event === 'media' && message.media.payload === lastSpoken);
    await sleep(50);
    app.send({ event: 'mark', streamSid: app.streamSid, mark: { name: 'echoed' } });
    const mark = await app.next((message) => message.event === 'mark');
    const heardByMark = phone.heard.filter((frame) => !silent(frame));
    const loudAtClose = phone.loudPackets;
    app.socket.close(1000);
    assert.equal(await trunk, 0, 'after the app closed: the say, then our BYE');
    phone.close();

    // Byte for byte: what the phone heard back (the stream's silence aside) is what it said, in order.
    assert.equal(
      heardByMark.length,
      spoken.length,
      `${heardByMark.length} frames echoed of ${spoken.length}`,
    );
    assert.ok(Buffer.concat(heardByMark).equals(Buffer.concat(spoken)), 'the echo is the caller’s audio');
    assert.ok(phone.loudPackets - loudAtClose > 25, 'the flow went on: the goodbye was heard');

    const call = await endedCall();
    assert.equal(call.status, 'completed');
    assert.equal(call.hangupCause, 'flow_hangup');
    const [connectedMessage, ...rest] = app.messages;
    assert.deepEqual(connectedMessage, { event: 'connected', protocol: 'Call', version: '1.0.0' });
    assert.deepEqual(start, {
      event: 'start',
      sequenceNumber: '1',
      start: {
        streamSid: start.streamSid,
        accountSid: office.id,
        callSid: call.id,
        tracks: ['inbound'],
        customParameters: { from: call.from, to: call.to, direction: 'inbound' },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
      streamSid: start.streamSid,
    });
    assert.match(start.streamSid, /^stream_[a-z0-9]{25}$/);
    rest.forEach((message, index) => {
      assert.equal(message.sequenceNumber, String(index + 1), `${message.event} in sequence`);
      assert.equal(message.streamSid, start.streamSid);
    });
    const media = rest.filter((message) => message.event === 'media');
    assert.equal(media.length, spoken.length, 'each frame the caller said, once');
    media.forEach((message, index) => {
      assert.equal(message.media.track, 'inbound');
      assert.equal(message.media.chunk, String(index + 1));
      assert.match(message.media.timestamp, /^\d+$/);
      assert.equal(message.media.payload, spoken[index]!.toString('base64'), 'PCMU passes byte for byte');
    });
    assert.ok(Number(media.at(-1)!.media.timestamp) - Number(media[0]!.media.timestamp) >= 1900);
    assert.deepEqual(dtmf, {
      event: 'dtmf',
      sequenceNumber: dtmf.sequenceNumber,
      dtmf: { track: 'inbound_track', digit: '5' },
      streamSid: start.streamSid,
    });
    assert.deepEqual(mark.mark, { name: 'echoed' });
    assert.equal(
      app.messages.filter((message) => message.event === 'stop').length,
      0,
      'the app closed it: no stop',
    );
    const events = await streamEvents(call.id);
    assert.deepEqual(
      events.map((event) => [event.type, event.reason]),
      [
        ['call.stream.started', undefined],
        ['call.stream.stopped', 'app_closed'],
      ],
    );
    assert.equal(events[0]!.streamSid, start.streamSid);
    assert.equal(events[0]!.url, appUrl);
  });

  test('clear stops a long audio within one frame and returns its mark; a mark waits for its audio; both tracks', async () => {
    await routeToStream('both');
    const phone = await PhoneMedia.open();
    phone.keep = true;
    const appConnects = nextApp();
    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      scenario: trunkCall({ sdpMediaPort: phone.port, untilBye: true }),
      timeoutSeconds: 60,
    });
    const app = await appConnects;
    const start = await app.next((message) => message.event === 'start');
    assert.deepEqual(start.start.tracks, ['inbound', 'outbound']);
    const streamSid = app.streamSid;
    const play = (frames: Buffer[]) =>
      app.send({ event: 'media', streamSid, media: { payload: Buffer.concat(frames).toString('base64') } });

    // Half a second of audio, then a mark: the mark comes back once the phone has heard all of it.
    const short = noise(25);
    const sentAt = performance.now();
    play(short);
    app.send({ event: 'mark', streamSid, mark: { name: 'short' } });
    await app.next((message) => message.event === 'mark' && message.mark.name === 'short');
    const markAfterMs = performance.now() - sentAt;
    const heardShort = phone.heard.filter((frame) => !silent(frame));

    // Ten seconds, a mark behind them, and a clear 300 ms in.
    play(noise(500));
    app.send({ event: 'mark', streamSid, mark: { name: 'long' } });
    await sleep(300);
    const loudAtClear = phone.loudPackets;
    const clearedAt = performance.now();
    app.send({ event: 'clear', streamSid });
    const longMark = await app.next((message) => message.event === 'mark' && message.mark.name === 'long');
    const markDelayMs = performance.now() - clearedAt;
    await sleep(400);
    const afterClear = phone.loudPackets - loudAtClear;
    app.socket.close(1000);
    assert.equal(await trunk, 0);
    phone.close();

    assert.ok(markAfterMs >= 460, `the mark waited for its half second: ${Math.round(markAfterMs)} ms`);
    assert.ok(
      Buffer.concat(heardShort).equals(Buffer.concat(short)),
      'the half second was heard, all of it, before its mark',
    );
    assert.ok(afterClear <= 1, `after the clear the phone heard ${afterClear} more frames of the long audio`);
    assert.ok(loudAtClear - heardShort.length >= 10, 'the long audio was playing when cleared');
    assert.deepEqual(longMark.mark, { name: 'long' });
    assert.ok(markDelayMs < 250, `the cleared mark came back at once: ${Math.round(markDelayMs)} ms`);
    // Both tracks: what was played comes back as outbound media, frame for frame.
    const outbound = app.messages.filter(
      (message) => message.event === 'media' && message.media.track === 'outbound',
    );
    assert.ok(
      Buffer.concat(
        outbound.slice(0, 25).map((message) => Buffer.from(message.media.payload, 'base64')),
      ).equals(Buffer.concat(short)),
      'the outbound track is the audio played',
    );
    assert.deepEqual(
      outbound.map((message) => message.media.chunk),
      outbound.map((_, index) => String(index + 1)),
    );
  });

  test('the caller hangs up mid-stream: the app gets stop and the socket closes; the call ends', async () => {
    await routeToStream();
    const phone = await PhoneMedia.open();
    const appConnects = nextApp();
    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      // Answered, a second and a half on the line, then the caller's BYE.
      scenario: trunkCall({ sdpMediaPort: phone.port, waitMs: 1500 }),
      timeoutSeconds: 30,
    });
    const app = await appConnects;
    const start = await app.next((message) => message.event === 'start');
    assert.equal(await trunk, 0, 'the caller’s BYE was answered');
    const stop = await app.next((message) => message.event === 'stop');
    assert.equal(await app.closed, 1000, 'we closed the socket normally');
    phone.close();
    const call = await endedCall();
    assert.equal(call.status, 'completed');
    assert.equal(call.hangupCause, 'normal_clearing');
    assert.deepEqual(stop, {
      event: 'stop',
      sequenceNumber: stop.sequenceNumber,
      stop: { accountSid: office.id, callSid: call.id },
      streamSid: start.streamSid,
    });
    assert.equal(stop, app.messages.at(-1), 'stop is the last message');
    assert.deepEqual(
      (await streamEvents(call.id)).map((event) => [event.type, event.reason]),
      [
        ['call.stream.started', undefined],
        ['call.stream.stopped', 'caller_hangup'],
      ],
    );
  });
});
