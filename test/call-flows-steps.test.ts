// The call-flow steps that carry audio, words and caller ids (issue 33), on the simulated PBX through the
// HTTP API and the operator's test controls: a record step lands as a recording of the call (finish key, its
// longest time on the test clock, a hang-up); play by audioId (that recording) and by audioUrl (a WAV from a
// local HTTP server), as a step and as a gather's prompt, the samples checked; a URL that fails skips the step;
// a speech gather branches on the words of the test control's `speech`; a dial shows its callerId and rings a
// phone by SIP URI; and the save-time refusals, each naming its path.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, mock, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeWav, SAMPLE_RATE, tone } from '../src/modules/voice/audio.ts';
import { AudioFetcher } from '../src/modules/voice/audio-fetch.ts';
import { LineSteps } from '../src/modules/voice/line-steps.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';

describe('call flow steps: play, record, speech, dial callerId and sip (simulated PBX)', () => {
  let t: TestApp;
  let who: Sender;
  let numberId: string;
  let sales: { id: string };
  let support: { id: string };
  let audioServer: Server;
  let audioBase: string;
  /** A 0.5 s 600 Hz tone at 16 kHz stereo: the fetched WAV must come out 8 kHz mono. */
  const served = encodeStereo16k(tone(1, 600).subarray(0, SAMPLE_RATE / 2));
  before(async () => {
    t = await startTestApp();
    who = await sender(t);
    sales = (await api('POST', '/extensions', { extension: '101', name: 'Sales' })).body.data;
    support = (await api('POST', '/extensions', { extension: '102', name: 'Support' })).body.data;
    numberId = (await api('GET', '/numbers')).body.data[0].id;
    audioServer = createServer((request, response) => {
      if (request.url === '/menu.wav') {
        response.writeHead(200, { 'content-type': 'audio/wav' });
        response.end(served);
      } else if (request.url === '/moved.wav') {
        response.writeHead(302, { location: '/menu.wav' });
        response.end();
      } else if (request.url === '/slow.wav') {
        // Headers, then nothing: the fetch's deadline must end it.
        response.writeHead(200, { 'content-type': 'audio/wav' });
        response.write(served.subarray(0, 100));
      } else if (request.url === '/page.wav') {
        response.writeHead(200, { 'content-type': 'text/html' });
        response.end('<html>not audio</html>');
      } else {
        response.writeHead(404);
        response.end();
      }
    });
    await new Promise<void>((resolve) => audioServer.listen(0, '127.0.0.1', resolve));
    audioBase = `http://127.0.0.1:${(audioServer.address() as AddressInfo).port}`;
  });
  after(async () => {
    audioServer.closeAllConnections();
    await new Promise((resolve) => audioServer.close(resolve));
    await t.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const drive = (callId: string, body: Record<string, unknown>) =>
    t.admin('POST', `/test/pbx/calls/${callId}`, body);
  const arrive = async (extra: Record<string, unknown> = {}) => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', {
      from: '+14155550198',
      to: who.number,
      ...extra,
    });
    assert.equal(arrived.status, 201, arrived.text);
    return arrived.body.data as Record<string, any>;
  };
  const call = async (id: string) => (await t.ctx.calls.get(who.id, id)) as unknown as Record<string, any>;
  const until = async (id: string, ok: (call: Record<string, any>) => boolean) => {
    for (let i = 0; i < 200; i++) {
      const now = await call(id);
      if (ok(now)) return now;
      await sleep(25);
    }
    throw new Error(`call ${id} never got there: ${JSON.stringify(await call(id))}`);
  };
  const events = async (type: string, callId: string) =>
    (
      await t.ctx.db.query<{ data: Record<string, any> }>(
        `SELECT data FROM events WHERE type = $1 AND data->>'callId' = $2 ORDER BY created_at, id`,
        [type, callId],
      )
    ).map((row) => row.data);
  async function routeTo(steps: unknown[], name = 'Flow') {
    const flow = await api('POST', '/call-flows', { name, steps });
    assert.equal(flow.status, 201, flow.text);
    const routed = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'flow', target: flow.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
    return flow.body.data as { id: string };
  }
  /** A recording's WAV, as the API serves it. */
  const recordingAudio = async (id: string) => {
    const response = await fetch(`${t.url}/api/v2/recordings/${id}/audio`, {
      headers: { 'x-api-key': who.key },
    });
    assert.equal(response.status, 200);
    return Buffer.from(await response.arrayBuffer());
  };
  const refusal = async (steps: unknown[]) => {
    const res = await api('POST', '/call-flows', { name: 'Refused', steps });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.code, 'INVALID_FLOW_STEP');
    return { path: res.body.data.path as string, error: res.body.error as string };
  };

  let recordingId: string;

  test('record: the caller is recorded until the finish key; a recording of the call, and the flow goes on', async () => {
    await routeTo(
      [
        { type: 'say', text: 'Leave your message after the tone.' },
        { type: 'record', maxSeconds: 30, finishOnKey: '#' },
        { type: 'say', text: 'Thank you.' },
        { type: 'hangup' },
      ],
      'Record',
    );
    const arrived = await arrive({ speech: 'I would like a call back' });
    assert.equal(arrived.status, 'in_progress');
    // Keys other than the finish key are not kept; 4 seconds pass on the test clock.
    await drive(arrived.id, { event: 'digits', digits: '1' });
    assert.equal((await call(arrived.id)).endedAt, null);
    await t.admin('POST', '/test/clock', { now: new Date(t.ctx.clock.nowMs() + 4000).toISOString() });
    await drive(arrived.id, { event: 'digits', digits: '#' });
    const ended = await until(arrived.id, (c) => c.endedAt !== null);
    // The flow went on after the recording: its own hang-up ended the call.
    assert.deepEqual([ended.status, ended.hangupCause], ['completed', 'flow_hangup']);
    assert.ok(ended.recordingId, JSON.stringify(ended));
    recordingId = ended.recordingId;
    const listed = await api('GET', '/recordings');
    const recording = listed.body.data.find((each: { id: string }) => each.id === recordingId);
    assert.equal(recording.callId, arrived.id);
    assert.ok(recording.durationSeconds >= 4, JSON.stringify(recording));
    const wav = decodeWav(await recordingAudio(recordingId));
    assert.equal(wav.sampleRate, SAMPLE_RATE);
    assert.ok(
      wav.samples.some((sample) => Math.abs(sample) > 1000),
      'the recording holds sound',
    );
    assert.equal((await events('recording.completed', arrived.id)).length, 1);
  });

  test('record: its maxSeconds on the test clock ends it; a caller hanging up keeps what they said', async () => {
    await routeTo([{ type: 'record', maxSeconds: 5 }, { type: 'hangup' }], 'Short');
    const timed = await arrive({ speech: 'short' });
    await t.admin('POST', '/test/clock', { now: new Date(t.ctx.clock.nowMs() + 5000).toISOString() });
    const ended = await until(timed.id, (c) => c.endedAt !== null);
    assert.deepEqual([ended.status, ended.hangupCause], ['completed', 'flow_hangup']);
    assert.ok(ended.recordingId);

    const gone = await arrive({ speech: 'bye' });
    await drive(gone.id, { event: 'completed' });
    const hungUp = await until(gone.id, (c) => c.endedAt !== null);
    assert.deepEqual([hungUp.status, hungUp.hangupCause], ['completed', 'normal_clearing']);
    assert.ok(hungUp.recordingId, 'the hang-up kept the recording');
  });

  test('play by audioId and by audioUrl, as a step and as a gather prompt: the samples the line plays', async () => {
    const played: Int16Array[] = [];
    const prompts: (Int16Array | undefined)[] = [];
    const originalPlay = LineSteps.prototype.play;
    const originalGather = LineSteps.prototype.gather;
    const play = mock.method(
      LineSteps.prototype,
      'play',
      function (this: LineSteps, audio: Int16Array, options?: { loop?: number }) {
        played.push(audio);
        return originalPlay.call(this, audio, options);
      },
    );
    const gather = mock.method(
      LineSteps.prototype,
      'gather',
      function (this: LineSteps, options: Parameters<LineSteps['gather']>[0]) {
        prompts.push(options.prompt?.audio);
        return originalGather.call(this, options);
      },
    );
    try {
      await routeTo(
        [
          { type: 'play', audioId: recordingId },
          { type: 'play', audioUrl: `${audioBase}/menu.wav`, loop: 2 },
          {
            type: 'gather',
            input: ['dtmf'],
            numDigits: 1,
            prompt: { type: 'play', audioUrl: `${audioBase}/menu.wav` },
            branches: { '1': [{ type: 'hangup' }] },
          },
        ],
        'Play',
      );
      const arrived = await arrive();
      await drive(arrived.id, { event: 'digits', digits: '1' });
      await until(arrived.id, (c) => c.endedAt !== null);
      assert.equal(played.length, 2);
      assert.deepEqual(played[0], decodeWav(await recordingAudio(recordingId)).samples);
      // 16 kHz stereo made 8 kHz mono: half a second, the channels' mean, every second sample's neighbourhood.
      const expected = tone(1, 600).subarray(0, SAMPLE_RATE / 2);
      assert.equal(played[1]!.length, expected.length);
      assert.ok(nearly(played[1]!, expected), 'the fetched WAV is played as 8 kHz mono');
      assert.equal(play.mock.calls[1]!.arguments[1]?.loop, 2);
      assert.equal(prompts.length, 1);
      assert.ok(prompts[0] && nearly(prompts[0], expected), 'the prompt plays the fetched audio');
    } finally {
      play.mock.restore();
      gather.mock.restore();
    }
  });

  test('play: a URL that fails (404, a redirect, not a WAV, nothing listening) is skipped and the flow goes on', async () => {
    for (const url of [
      `${audioBase}/missing.wav`,
      `${audioBase}/moved.wav`,
      `${audioBase}/page.wav`,
      'http://127.0.0.1:9/nothing.wav',
    ]) {
      await routeTo(
        [{ type: 'play', audioUrl: url }, { type: 'say', text: 'After.' }, { type: 'hangup' }],
        'Bad',
      );
      const arrived = await arrive();
      const ended = await until(arrived.id, (c) => c.endedAt !== null);
      // The say after it answered and the flow's hang-up ended it: the play was skipped, not fatal.
      assert.deepEqual([ended.status, ended.hangupCause], ['completed', 'flow_hangup'], url);
    }
  });

  test('the audioUrl fetcher: production refuses http and private addresses; size and time are capped', async () => {
    const guarded = new AudioFetcher({
      guarded: true,
      resolver: async (host) => [
        { address: host === 'cdn.example.com' ? '10.1.2.3' : '93.184.216.34', family: 4 },
      ],
    });
    for (const [url, why] of [
      [`${audioBase}/menu.wav`, /only https/],
      ['https://127.0.0.1/menu.wav', /refused: 127\.0\.0\.1 is not a public address/],
      ['https://localhost/menu.wav', /refused: localhost is this machine/],
      ['https://169.254.169.254/latest/meta-data', /refused/],
      ['https://cdn.example.com/menu.wav', /refused: cdn\.example\.com resolves to 10\.1\.2\.3/],
      ['ftp://cdn.example.com/menu.wav', /only https/],
    ] as const) {
      await assert.rejects(guarded.fetch(url), why, url);
    }
    const open = new AudioFetcher({ guarded: false, maxBytes: 1000, timeoutMs: 300 });
    await assert.rejects(open.fetch(`${audioBase}/menu.wav`), /larger than 1000 bytes/);
    await assert.rejects(open.fetch(`${audioBase}/slow.wav`), /timed out after 0\.3 s/);
    await assert.rejects(open.fetch(`${audioBase}/page.wav`), /not audio we play/);
    // Within the limits, the audio as 8 kHz mono.
    const fetched = await new AudioFetcher({ guarded: false }).fetch(`${audioBase}/menu.wav`);
    assert.equal(fetched.length, SAMPLE_RATE / 2);
  });

  test('gather speech: branches by the words said, case and punctuation aside; otherwise on no match', async () => {
    await routeTo(
      [
        {
          type: 'gather',
          input: ['dtmf', 'speech'],
          timeoutSeconds: 10,
          prompt: { type: 'say', text: 'Say sales or billing department.' },
          branches: {
            sales: [{ type: 'dial', targets: [{ type: 'extension', target: sales.id }] }],
            'billing department': [{ type: 'dial', targets: [{ type: 'extension', target: support.id }] }],
            '2': [{ type: 'dial', targets: [{ type: 'extension', target: support.id }] }],
          },
          otherwise: [{ type: 'say', text: 'Sorry.' }, { type: 'hangup' }],
        },
      ],
      'Speech',
    );
    for (const [said, extension] of [
      ['Uh, SALES please!', sales.id],
      ['the Billing department', support.id],
    ] as const) {
      const arrived = await arrive();
      await drive(arrived.id, { event: 'speech', text: said });
      await until(arrived.id, (c) => c.extensionId === extension);
      await drive(arrived.id, { event: 'completed' });
      await until(arrived.id, (c) => c.endedAt !== null);
      const [gathered, ...more] = await events('call.gather.completed', arrived.id);
      assert.deepEqual([gathered?.digits, gathered?.speech, more.length], ['', said, 0]);
    }
    // "billing" alone is not all the words of "billing department": otherwise.
    const vague = await arrive();
    await drive(vague.id, { event: 'speech', text: 'billing' });
    const ended = await until(vague.id, (c) => c.endedAt !== null);
    assert.deepEqual(
      [ended.status, ended.hangupCause, ended.extensionId],
      ['completed', 'flow_hangup', null],
    );
    // Keys still work beside speech.
    const keyed = await arrive();
    await drive(keyed.id, { event: 'digits', digits: '2#' });
    await until(keyed.id, (c) => c.extensionId === support.id);
    await drive(keyed.id, { event: 'completed' });
    await until(keyed.id, (c) => c.endedAt !== null);
  });

  test('gather: speech to a keys-only gather is a 409; a speech event without text a 400', async () => {
    await routeTo([{ type: 'gather', input: ['dtmf'], timeoutSeconds: 30 }], 'Keys');
    const arrived = await arrive();
    const refused = await drive(arrived.id, { event: 'speech', text: 'sales' });
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.code, 'CALL_NOT_ACTIVE');
    assert.equal((await drive(arrived.id, { event: 'speech' })).status, 400);
    await drive(arrived.id, { event: 'completed' });
    await until(arrived.id, (c) => c.endedAt !== null);
  });

  test('dial: the phone number is shown the callerId; a sip: URI of our domain rings that extension', async () => {
    await routeTo(
      [{ type: 'dial', targets: [{ type: 'number', target: '+14155550123' }], callerId: who.number }],
      'Caller id',
    );
    const shown = await arrive();
    await until(shown.id, (c) => c.status === 'queued' || c.status === 'ringing');
    await sleep(50);
    assert.deepEqual(t.ctx.simulatedPbx.rungParties(shown.id), [
      { kind: 'phone', number: '+14155550123', callerId: who.number },
    ]);
    await drive(shown.id, { event: 'completed' });
    await until(shown.id, (c) => c.endedAt !== null);

    const domain = t.ctx.config.sipDomain;
    await routeTo([{ type: 'dial', targets: [{ type: 'sip', target: `sip:101@${domain}` }] }], 'Sip');
    const sip = await arrive();
    await until(sip.id, (c) => c.extensionId === sales.id);
    await drive(sip.id, { event: 'answered' });
    await drive(sip.id, { event: 'completed' });
    const ended = await until(sip.id, (c) => c.endedAt !== null);
    assert.deepEqual([ended.status, ended.extensionId], ['completed', sales.id]);
  });

  test('dial at once: an extension, a ring group and a phone number ring together, each phone once', async () => {
    const third = (await api('POST', '/extensions', { extension: '103', name: 'Billing' })).body.data;
    const group = await api('POST', '/ring-groups', {
      name: 'Desk',
      extensionIds: [support.id, sales.id, third.id],
      strategy: 'sequential',
      ringSeconds: 10,
    });
    assert.equal(group.status, 201, group.text);
    await routeTo(
      [
        {
          type: 'dial',
          targets: [
            { type: 'extension', target: sales.id },
            { type: 'ring_group', target: group.body.data.id },
            { type: 'number', target: '+14155550177' },
          ],
          callerId: who.number,
          timeoutSeconds: 20,
        },
      ],
      'At once',
    );
    const arrived = await arrive();
    await until(arrived.id, (c) => c.extensionId === sales.id);
    await sleep(50);
    // One ring: the group's members all at once (its own sequential order yields to the step's), sales once.
    assert.deepEqual(t.ctx.simulatedPbx.rungParties(arrived.id), [
      {
        kind: 'extensions',
        members: [
          { extensionId: sales.id, extension: '101' },
          { extensionId: support.id, extension: '102' },
          { extensionId: third.id, extension: '103' },
        ],
        phones: [{ number: '+14155550177', callerId: who.number }],
      },
    ]);
    await drive(arrived.id, { event: 'answered' });
    await drive(arrived.id, { event: 'completed' });
    const ended = await until(arrived.id, (c) => c.endedAt !== null);
    assert.deepEqual([ended.status, ended.extensionId], ['completed', sales.id]);
  });

  test('refused when saved, naming the path: unknown recording, foreign callerId, sip elsewhere, too long a record', async () => {
    const domain = t.ctx.config.sipDomain;
    const dial = (fields: Record<string, unknown>) => ({
      type: 'dial',
      targets: [{ type: 'number', target: '+14155550100' }],
      ...fields,
    });
    const cases: [unknown[], string, RegExp][] = [
      [
        [{ type: 'play', audioId: 'rec_0000000001abcdefabcdefabcd' }],
        'steps.0.audioId',
        /names no recording/,
      ],
      [
        [
          {
            type: 'gather',
            input: ['dtmf'],
            prompt: { type: 'play', audioId: 'rec_0000000001abcdefabcdefab' },
          },
        ],
        'steps.0.prompt.audioId',
        /names no recording/,
      ],
      [[dial({ callerId: '+14155550999' })], 'steps.0.callerId', /names no phone number/],
      [[dial({ callerId: '415' })], 'steps.0.callerId', /E\.164/],
      [
        [dial({ targets: [{ type: 'sip', target: 'sip:101@pbx.example.com' }] })],
        'steps.0.targets.0.target',
        /names no extension of this organization/,
      ],
      [
        [dial({ targets: [{ type: 'sip', target: `sip:109@${domain}` }] })],
        'steps.0.targets.0.target',
        /names no extension/,
      ],
      [
        [dial({ targets: [{ type: 'sip', target: 'sip:desk@10.0.0.1' }] })],
        'steps.0.targets.0.target',
        /must be sip:<extension>@/,
      ],
      [[{ type: 'record', maxSeconds: 601 }], 'steps.0.maxSeconds', /600/],
      [
        [{ type: 'gather', input: ['speech'], prompt: { type: 'pause', seconds: 1 } }],
        'steps.0.prompt.type',
        /say, play/,
      ],
    ];
    for (const [steps, path, message] of cases) {
      const { path: refusedAt, error } = await refusal(steps);
      assert.equal(refusedAt, path, error);
      assert.match(error, message);
    }
    // Another organization's recording is not this one's.
    const other = await sender(t);
    const foreign = await t.request('POST', '/api/v2/call-flows', {
      apiKey: other.key,
      body: { name: 'Theirs', steps: [{ type: 'play', audioId: recordingId }] },
    });
    assert.equal(foreign.status, 400, foreign.text);
    assert.equal(foreign.body.data.path, 'steps.0.audioId');
  });
});

/** `mono` (8 kHz) as a 16 kHz stereo 16-bit WAV, each sample doubled in time and in both channels. */
function encodeStereo16k(mono: Int16Array): Buffer {
  const frames = mono.length * 2;
  const wav = Buffer.alloc(44 + frames * 4);
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + frames * 4, 4);
  wav.write('WAVE', 8, 'ascii');
  wav.write('fmt ', 12, 'ascii');
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(2, 22);
  wav.writeUInt32LE(16_000, 24);
  wav.writeUInt32LE(16_000 * 4, 28);
  wav.writeUInt16LE(4, 32);
  wav.writeUInt16LE(16, 34);
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(frames * 4, 40);
  for (let i = 0; i < frames; i++) {
    const sample = mono[Math.floor(i / 2)]!;
    wav.writeInt16LE(sample, 44 + i * 4);
    wav.writeInt16LE(sample, 46 + i * 4);
  }
  return wav;
}

/** Every sample within one step of the other's (resampling rounds). */
function nearly(actual: Int16Array, expected: Int16Array): boolean {
  return (
    actual.length === expected.length && actual.every((sample, i) => Math.abs(sample - expected[i]!) <= 1)
  );
}
