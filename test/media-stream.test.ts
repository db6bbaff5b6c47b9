// Media streams (issue 33) apart from real SIP (test/sip-media-stream.test.ts has that): the playback queue's
// rules (marks one frame after their audio, odd-sized audio, clear), where a stream may connect (the webhooks'
// SSRF rules, at save time and at connect time), the RTP session's µ-law for a PCMA caller, and a flow's
// stream on the simulated PBX through the HTTP API and the test controls: a silent caller, keys from the test
// control as `dtmf`, the app closing (the flow goes on), the caller hanging up (`stop`), an app that cannot be
// reached (the flow goes on), and a url with credentials refused when the flow is saved. The socket's upgrade
// request is signed with the flow app secret (Standard Webhooks headers over the JSON `{"url": …}`).
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import { Webhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { WebSocketServer } from 'ws';
import { RtpSession } from '../src/modules/voice/sip/rtp.ts';
import { MAX_QUEUED_SECONDS, StreamPlayback } from '../src/modules/voice/stream-playback.ts';
import {
  checkStreamTarget,
  openStreamSocket,
  StreamTargetRefused,
} from '../src/modules/voice/stream-target.ts';
import { assertRefusedB, startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { freePort } from './helpers/sipp.ts';

const bytes = (count: number, value: number) => new Uint8Array(count).fill(value);

describe('the playback queue of a media stream', () => {
  test('frames of 160 bytes in order; a mark is reported one frame after its last byte went out', () => {
    const marks: string[] = [];
    const playback = new StreamPlayback({ mark: (name) => marks.push(name) });
    playback.play(bytes(200, 1));
    playback.mark('a');
    playback.play(bytes(120, 2));
    playback.mark('b');
    const first = playback.next()!;
    assert.deepEqual([...first], [...bytes(160, 1)]);
    assert.deepEqual(marks, []);
    const second = playback.next()!;
    assert.deepEqual([...second], [...bytes(40, 1), ...bytes(120, 2)], 'frames run on across a mark');
    assert.deepEqual(marks, [], 'a’s audio is in the frame just taken: not played yet');
    assert.equal(playback.next(), undefined, 'nothing queued: the PBX plays silence');
    assert.deepEqual(marks, ['a', 'b'], 'one frame later both have been played');
  });

  test('audio short of a frame waits one frame for the rest, then goes out padded; before a mark at once', () => {
    const marks: string[] = [];
    const playback = new StreamPlayback({ mark: (name) => marks.push(name) });
    playback.play(bytes(100, 3));
    assert.equal(playback.next(), undefined, 'it waits one frame');
    playback.play(bytes(100, 4));
    assert.deepEqual([...playback.next()!], [...bytes(100, 3), ...bytes(60, 4)], 'the rest came in time');
    assert.equal(playback.next(), undefined);
    assert.deepEqual(
      [...playback.next()!],
      [...bytes(40, 4), ...bytes(120, 0xff)],
      'then padded with silence',
    );
    playback.play(bytes(10, 5));
    playback.mark('end');
    assert.deepEqual(
      [...playback.next()!],
      [...bytes(10, 5), ...bytes(150, 0xff)],
      'a mark ends it: at once',
    );
    playback.next();
    assert.deepEqual(marks, ['end']);
  });

  test('clear drops the audio and reports the waiting marks at once, in order; the limits drop', () => {
    const marks: string[] = [];
    const dropped: string[] = [];
    const playback = new StreamPlayback({
      mark: (name) => marks.push(name),
      dropped: (what) => dropped.push(what),
    });
    playback.play(bytes(100, 1));
    playback.mark('in-frame');
    playback.play(bytes(1000, 2));
    playback.mark('later');
    playback.next();
    playback.clear();
    assert.deepEqual(marks, ['in-frame', 'later']);
    assert.equal(playback.queued, 0);
    assert.equal(playback.next(), undefined, 'silence from the next frame');
    assert.equal(playback.play(bytes(MAX_QUEUED_SECONDS * 8000 + 1, 1)), false);
    assert.deepEqual(dropped, ['audio']);
  });
});

describe('where a media stream may connect', () => {
  const publicResolver = async () => [{ address: '93.184.216.34', family: 4 }];
  const privateResolver = async () => [{ address: '10.1.2.3', family: 4 }];

  test('production: wss to public addresses only, checked on what the name resolves to', async () => {
    const guarded = { guarded: true, resolver: publicResolver };
    assert.deepEqual(await checkStreamTarget('wss://bot.example.com/media', guarded), [
      { address: '93.184.216.34', family: 4 },
    ]);
    for (const [url, why, resolver] of [
      ['ws://bot.example.com/media', /must be a wss URL/, publicResolver],
      ['wss://127.0.0.1/media', /public address/, publicResolver],
      ['wss://localhost:8443/media', /public address/, publicResolver],
      ['wss://[::1]/media', /public address/, publicResolver],
      ['wss://bot.example.com/media', /resolves to 10\.1\.2\.3/, privateResolver],
      ['wss://user:secret@bot.example.com/', /user name or password/, publicResolver],
      ['https://bot.example.com/', /must be a wss URL/, publicResolver],
    ] as const) {
      await assert.rejects(
        checkStreamTarget(url, { guarded: true, resolver }),
        (error: Error) => error instanceof StreamTargetRefused && why.test(error.message),
        url,
      );
    }
  });

  test('elsewhere ws or wss anywhere; the connect itself checks again', async () => {
    assert.equal(await checkStreamTarget('ws://127.0.0.1:9/x', { guarded: false }), undefined);
    await assert.rejects(checkStreamTarget('http://127.0.0.1:9/x', { guarded: false }), StreamTargetRefused);
    await assert.rejects(
      openStreamSocket('wss://127.0.0.1:9/x', { guarded: true }),
      (error: Error) => error instanceof StreamTargetRefused && /public address/.test(error.message),
    );
  });
});

describe('the RTP session’s µ-law for a media stream', () => {
  test('PCMU passes byte for byte; a PCMA caller’s audio is transcoded both ways', async () => {
    const phone = createSocket('udp4');
    await new Promise<void>((resolve) => phone.bind(0, '127.0.0.1', resolve));
    const heard: Buffer[] = [];
    phone.on('message', (packet) => heard.push(packet.subarray(12)));
    const { port } = phone.address();
    for (const codec of ['PCMU', 'PCMA'] as const) {
      heard.length = 0;
      const session = await RtpSession.open('127.0.0.1', { address: '127.0.0.1', port, codec }, 10);
      const got: Buffer[] = [];
      session.onMulaw = (payload) => got.push(Buffer.from(payload));
      const samples = Int16Array.from({ length: 160 }, (_, index) => Math.round(8000 * Math.sin(index / 5)));
      const mulaw = Buffer.from(g711.mulaw.encode(samples));
      const alaw = Buffer.from(g711.alaw.encode(samples));
      const packet = Buffer.alloc(12);
      packet[0] = 0x80;
      packet[1] = codec === 'PCMU' ? 0 : 8;
      phone.send(Buffer.concat([packet, codec === 'PCMU' ? mulaw : alaw]), session.port, '127.0.0.1');
      session.sendMulaw(mulaw);
      for (let i = 0; i < 100 && (got.length === 0 || heard.length === 0); i++) await sleep(10);
      session.close();
      if (codec === 'PCMU') {
        assert.ok(got[0]!.equals(mulaw), 'the caller’s PCMU as it came');
        assert.ok(heard[0]!.equals(mulaw), 'the stream’s µ-law as it came');
      } else {
        assert.ok(got[0]!.equals(Buffer.from(g711.mulaw.encode(g711.alaw.decode(alaw)))), 'A-law to µ-law');
        assert.ok(
          heard[0]!.equals(Buffer.from(g711.alaw.encode(g711.mulaw.decode(mulaw)))),
          'µ-law to A-law',
        );
      }
    }
    phone.close();
  });
});

describe('a media stream on the simulated PBX', () => {
  let t: TestApp;
  let who: Sender;
  let numberId: string;
  let server: WebSocketServer;
  let appUrl: string;
  type App = {
    messages: Record<string, any>[];
    socket: import('ws').WebSocket;
    closed: Promise<void>;
    /** The upgrade request's headers. */
    headers: Record<string, string>;
  };
  let connected: (app: App) => void = () => {};

  before(async () => {
    t = await startTestApp();
    who = await sender(t);
    numberId = (await api('GET', '/numbers')).body.data[0].id;
    server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', resolve));
    appUrl = `ws://127.0.0.1:${(server.address() as { port: number }).port}/`;
    server.on('connection', (socket, request) => {
      const app: App = {
        messages: [],
        socket,
        closed: new Promise((resolve) => socket.on('close', () => resolve())),
        headers: Object.fromEntries(
          Object.entries(request.headers).filter(
            (entry): entry is [string, string] => typeof entry[1] === 'string',
          ),
        ),
      };
      socket.on('message', (data) => app.messages.push(JSON.parse(data.toString())));
      connected(app);
    });
  });
  after(async () => {
    for (const client of server.clients) client.terminate();
    await new Promise((resolve) => server.close(resolve));
    await t.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const drive = (callId: string, body: Record<string, unknown>) =>
    t.admin('POST', `/test/pbx/calls/${callId}`, body);
  const call = async (id: string) => (await t.ctx.calls.get(who.id, id)) as unknown as Record<string, any>;
  const until = async <T>(what: () => Promise<T> | T, ok: (value: T) => boolean): Promise<T> => {
    for (let i = 0; i < 400; i++) {
      const value = await what();
      if (ok(value)) return value;
      await sleep(25);
    }
    throw new Error('never got there');
  };
  const streamEvents = async (callId: string) =>
    (
      await t.ctx.db.query<{ type: string; data: Record<string, any> }>(
        `SELECT type, data FROM events WHERE type LIKE 'call.stream.%' AND data->>'callId' = $1 ORDER BY created_at, id`,
        [callId],
      )
    ).map((row): Record<string, any> => ({ type: row.type, ...row.data }));
  async function routeTo(url: string) {
    const flow = await api('POST', '/call-flows', {
      name: 'Bot',
      steps: [
        { type: 'stream', url },
        { type: 'say', text: 'Goodbye.' },
      ],
    });
    assert.equal(flow.status, 201, flow.text);
    const routed = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'flow', target: flow.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
  }
  const arrive = async () => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550198', to: who.number });
    assert.equal(arrived.status, 201, arrived.text);
    return arrived.body.data as Record<string, any>;
  };

  test('the silent caller’s frames, keys from the test control as dtmf; the app closes and the flow goes on', async () => {
    await routeTo(appUrl);
    const appConnects = new Promise<App>((resolve) => {
      connected = resolve;
    });
    const arrived = await arrive();
    const app = await appConnects;
    // The upgrade is ours: signed with the organization's flow app secret, verifiable as a webhook is.
    const secret = await api('GET', '/call-flows/signing-secret');
    assert.equal(secret.status, 200, secret.text);
    assert.match(app.headers['webhook-id'] ?? '', /^msg_/);
    // Over the JSON of the step's url, as saved: worthless at another url.
    const signed = JSON.stringify({ url: appUrl });
    assert.deepEqual(new Webhook(secret.body.data.secret).verify(signed, app.headers), { url: appUrl });
    assert.deepEqual(new SvixWebhook(secret.body.data.secret).verify(signed, app.headers), { url: appUrl });
    assert.throws(
      () =>
        new Webhook(secret.body.data.secret).verify(JSON.stringify({ url: `${appUrl}other` }), app.headers),
      /No matching signature/,
    );
    assert.throws(
      () => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(signed, app.headers),
      /No matching signature/,
    );
    await until(
      () => app.messages.filter((message) => message.event === 'media').length,
      (count) => count >= 5,
    );
    const pressed = await drive(arrived.id, { event: 'digits', digits: '42' });
    assert.equal(pressed.status, 200, pressed.text);
    await until(
      () => app.messages.filter((message) => message.event === 'dtmf'),
      (keys) => keys.length === 2,
    );
    app.socket.close();
    const ended = await until(
      () => call(arrived.id),
      (now) => now.endedAt !== null,
    );
    assert.equal(ended.status, 'completed');
    assert.equal(ended.hangupCause, 'flow_ended', 'the say ran, then the flow ran out of steps');
    const media = app.messages.filter((message) => message.event === 'media');
    assert.ok(
      media.every((message) => Buffer.from(message.media.payload, 'base64').equals(Buffer.alloc(160, 0xff))),
      'the simulated caller is silent: 20 ms frames of µ-law silence',
    );
    assert.deepEqual(
      app.messages.filter((message) => message.event === 'dtmf').map((message) => message.dtmf),
      [
        { track: 'inbound_track', digit: '4' },
        { track: 'inbound_track', digit: '2' },
      ],
    );
    assert.deepEqual(
      (await streamEvents(arrived.id)).map((event) => [event.type, event.reason]),
      [
        ['call.stream.started', undefined],
        ['call.stream.stopped', 'app_closed'],
      ],
    );
  });

  test('the caller hangs up (the test control’s completed): stop, and the socket closes', async () => {
    await routeTo(appUrl);
    const appConnects = new Promise<App>((resolve) => {
      connected = resolve;
    });
    const arrived = await arrive();
    const app = await appConnects;
    await until(
      () => app.messages.some((message) => message.event === 'start'),
      (started) => started,
    );
    const hungUp = await drive(arrived.id, { event: 'completed' });
    assert.equal(hungUp.status, 200, hungUp.text);
    await app.closed;
    assert.equal(app.messages.at(-1)!.event, 'stop');
    const ended = await until(
      () => call(arrived.id),
      (now) => now.endedAt !== null,
    );
    assert.equal(ended.status, 'completed');
    assert.equal(ended.hangupCause, 'normal_clearing');
  });

  test('an app that cannot be reached: no stream, the flow goes on', async () => {
    await routeTo(`ws://127.0.0.1:${await freePort()}/gone`);
    const arrived = await arrive();
    const ended = await until(
      () => call(arrived.id),
      (now) => now.endedAt !== null,
    );
    assert.equal(ended.status, 'completed');
    assert.equal(ended.hangupCause, 'flow_ended');
    const [stopped, ...none] = await streamEvents(arrived.id);
    assert.equal(none.length, 0, 'no stream began');
    assert.equal(stopped!.type, 'call.stream.stopped');
    assert.equal(stopped!.reason, 'connect_failed');
    assert.match(stopped!.error, /ECONNREFUSED/);
  });

  test('a stream url with a user name or password, or not a WebSocket, is refused when the flow is saved', async () => {
    for (const [url, message] of [
      ['ws://bot:secret@127.0.0.1/media', 'steps.0.url must not contain a user name or password'],
      ['https://127.0.0.1/media', 'steps.0.url must be a wss or ws URL'],
    ]) {
      const refused = await api('POST', '/call-flows', { name: 'Bot', steps: [{ type: 'stream', url }] });
      assertRefusedB(refused, 400, 'INVALID_FLOW_STEP');
      assert.equal(refused.body.error, message);
      assert.equal(refused.body.data.path, 'steps.0.url');
    }
  });
});
