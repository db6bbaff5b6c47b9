// The voice module's media parts: WAV encoding and decoding, resampling, the simulated callers' audio
// (espeak-ng where installed), byte ranges, and transcriptions end to end: a voicemail transcribed by the job
// through an OpenAI-compatible service (a local server speaking its API), completed or failed, with its engine
// and event. The engines on their own: test/transcribers.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import multipart from '@fastify/multipart';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  decodeWav,
  encodeWav,
  recordedAudio,
  resample,
  SAMPLE_RATE,
  tone,
} from '../src/modules/voice/audio.ts';
import { ApiError } from '../src/platform/errors.ts';
import { byteRange } from '../src/platform/http/byte-range.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';

const espeak = spawnSync('espeak-ng', ['--version']).status === 0;

/** Sign changes per second: twice the frequency of a pure tone. */
function crossingsPerSecond(samples: Int16Array, rate: number): number {
  let crossings = 0;
  for (let i = 1; i < samples.length; i++) if (samples[i - 1]! < 0 !== samples[i]! < 0) crossings++;
  return crossings / (samples.length / rate);
}

describe('WAV audio', () => {
  test('encode: the canonical header, byte by byte; decode reads it back', () => {
    const samples = Int16Array.from([0, 1, -1, 32767, -32768, 1234]);
    const wav = encodeWav(samples);
    assert.equal(wav.length, 44 + 12);
    assert.equal(wav.toString('ascii', 0, 4), 'RIFF');
    assert.equal(wav.readUInt32LE(4), 36 + 12);
    assert.equal(wav.toString('ascii', 8, 16), 'WAVEfmt ');
    assert.equal(wav.readUInt32LE(16), 16);
    assert.equal(wav.readUInt16LE(20), 1); // PCM
    assert.equal(wav.readUInt16LE(22), 1); // mono
    assert.equal(wav.readUInt32LE(24), 8000);
    assert.equal(wav.readUInt32LE(28), 16000); // byte rate
    assert.equal(wav.readUInt16LE(32), 2); // block align
    assert.equal(wav.readUInt16LE(34), 16);
    assert.equal(wav.toString('ascii', 36, 40), 'data');
    assert.equal(wav.readUInt32LE(40), 12);
    const decoded = decodeWav(wav);
    assert.deepEqual(
      { ...decoded, samples: [...decoded.samples] },
      { sampleRate: 8000, channels: 1, bitsPerSample: 16, samples: [...samples] },
    );
  });

  test('decode: skips unknown chunks, reads a pipe-written data size to the end, refuses what is not PCM WAV', () => {
    const wav = encodeWav(Int16Array.from([5, 6, 7]));
    const list = Buffer.concat([Buffer.from('LIST'), Buffer.from([4, 0, 0, 0]), Buffer.from('abcd')]);
    const withList = Buffer.concat([wav.subarray(0, 36), list, wav.subarray(36)]);
    assert.deepEqual([...decodeWav(withList).samples], [5, 6, 7]);
    const piped = Buffer.from(wav);
    piped.writeUInt32LE(0x7ffff000, 40);
    assert.deepEqual([...decodeWav(piped).samples], [5, 6, 7]);

    assert.throws(() => decodeWav(Buffer.from('not a wav file at all')), /RIFF/);
    assert.throws(() => decodeWav(wav.subarray(0, 30)), /truncated/);
    assert.throws(() => decodeWav(wav.subarray(0, 36)), /no data chunk/);
    const alaw = Buffer.from(wav);
    alaw.writeUInt16LE(6, 20);
    assert.throws(() => decodeWav(alaw), /not linear PCM/);
    const eightBit = Buffer.from(wav);
    eightBit.writeUInt16LE(8, 34);
    assert.throws(() => decodeWav(eightBit), /8-bit/);
  });

  test('resample: a tone keeps its pitch and the length follows the ratio', () => {
    const rate = 22050;
    const source = new Int16Array(rate);
    for (let i = 0; i < source.length; i++)
      source[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate));
    const down = resample(source, rate, SAMPLE_RATE);
    assert.ok(Math.abs(down.length - SAMPLE_RATE) <= 1);
    assert.ok(Math.abs(crossingsPerSecond(down, SAMPLE_RATE) - 880) < 10);
    const up = resample(tone(1), SAMPLE_RATE, 16000);
    assert.equal(up.length, 16000);
    assert.ok(Math.abs(crossingsPerSecond(up, 16000) - 880) < 10);
  });

  test('a caller without words: a tone a second on, a second off, exactly as long as asked', async () => {
    const audio = await recordedAudio({ seconds: 5 });
    assert.equal(audio.voice, 'tone');
    assert.equal(audio.durationSeconds, 5);
    const { samples } = decodeWav(audio.wav);
    assert.equal(samples.length, 5 * SAMPLE_RATE);
    assert.ok(samples.subarray(0, SAMPLE_RATE).some((s) => s !== 0));
    assert.ok(samples.subarray(SAMPLE_RATE, 2 * SAMPLE_RATE).every((s) => s === 0));
  });

  test('a caller with words: espeak-ng speech at 8 kHz, then silence', {
    skip: !espeak && 'espeak-ng not installed',
  }, async () => {
    const audio = await recordedAudio({ text: 'Hello, please call me back.', seconds: 6 });
    assert.equal(audio.voice, 'espeak-ng');
    assert.equal(audio.durationSeconds, 6);
    const { sampleRate, samples } = decodeWav(audio.wav);
    assert.equal(sampleRate, 8000);
    assert.ok(samples.subarray(0, SAMPLE_RATE).some((s) => Math.abs(s) > 1000));
    assert.ok(samples.subarray(5 * SAMPLE_RATE).every((s) => s === 0));
    // Longer speech than asked for is kept whole, and the length says so.
    const long = await recordedAudio({
      text: 'one two three four five six seven eight nine ten',
      seconds: 1,
    });
    assert.ok(long.durationSeconds > 1);
    assert.equal(Math.ceil(decodeWav(long.wav).samples.length / SAMPLE_RATE), long.durationSeconds);
  });
});

describe('byte ranges', () => {
  const unsatisfiable = (header: string) => {
    try {
      byteRange(header, 100);
    } catch (error) {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 416);
      assert.deepEqual(error.headers, { 'Content-Range': 'bytes */100' });
      return true;
    }
    return false;
  };

  test('one range of each form; past the end clamped; malformed or several ignored; beyond the end 416', () => {
    assert.equal(byteRange(undefined, 100), undefined);
    assert.deepEqual(byteRange('bytes=0-9', 100), { start: 0, end: 9 });
    assert.deepEqual(byteRange('bytes=90-', 100), { start: 90, end: 99 });
    assert.deepEqual(byteRange('bytes=-10', 100), { start: 90, end: 99 });
    assert.deepEqual(byteRange('bytes=-500', 100), { start: 0, end: 99 });
    assert.deepEqual(byteRange('bytes=50-500', 100), { start: 50, end: 99 });
    for (const ignored of ['bytes=0-1,5-6', 'items=0-5', 'bytes=x-y', 'bytes=-', 'bytes=9-3', '']) {
      assert.equal(byteRange(ignored, 100), undefined, ignored);
    }
    assert.ok(unsatisfiable('bytes=100-'));
    assert.ok(unsatisfiable('bytes=150-200'));
    assert.ok(unsatisfiable('bytes=-0'));
  });
});

/** A local server speaking the OpenAI transcription API; `answer` decides each reply. */
async function transcriptionServer(
  answer: (request: { authorization?: string; model?: string; file: Buffer; filename?: string }) => {
    status: number;
    body: string;
    hang?: boolean;
  },
): Promise<{ url: string; server: FastifyInstance; seen: Buffer[] }> {
  const server = Fastify();
  await server.register(multipart, { limits: { fileSize: 50 * 1024 * 1024 } });
  const seen: Buffer[] = [];
  server.post('/v1/audio/transcriptions', async (request, reply) => {
    const fields: Record<string, string> = {};
    let file: Buffer = Buffer.alloc(0);
    let filename: string | undefined;
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        file = await part.toBuffer();
        filename = part.filename;
      } else fields[part.fieldname] = String(part.value);
    }
    seen.push(file);
    const result = answer({
      authorization: request.headers.authorization,
      model: fields.model,
      file,
      filename,
    });
    if (result.hang) await new Promise((resolve) => setTimeout(resolve, 2000));
    return reply.status(result.status).type('application/json').send(result.body);
  });
  await server.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(server.server.address() as { port: number }).port}/v1`, server, seen };
}

describe('transcriptions end to end', () => {
  let t: TestApp;
  let reply: { status: number; body: string } = { status: 200, body: '{"text":"  Please call me back.  "}' };
  let service: Awaited<ReturnType<typeof transcriptionServer>>;
  before(async () => {
    service = await transcriptionServer(() => reply);
    t = await startTestApp({ config: { transcriptionUrl: service.url, transcriptionApiKey: 'sk-e2e' } });
  });
  after(async () => {
    await t.close();
    await service.server.close();
  });

  const api = (who: Sender, path: string) => t.request('GET', `/api/v2${path}`, { apiKey: who.key });

  async function voicemail(): Promise<{ who: Sender; voicemailId: string }> {
    const who = await sender(t);
    const ext = (
      await t.request('POST', '/api/v2/extensions', {
        apiKey: who.key,
        body: { extension: '101', name: 'R' },
      })
    ).body.data;
    const [number] = (await api(who, '/numbers')).body.data;
    await t.request('PATCH', `/api/v2/numbers/${number.id}`, {
      apiKey: who.key,
      body: { voiceRoute: { type: 'voicemail', target: ext.id } },
    });
    const call = await t.admin('POST', '/test/pbx/inbound', {
      from: '+14155550181',
      to: who.number,
      outcome: 'no_answer',
      voicemailText: 'Please call me back.',
    });
    assert.equal(call.status, 201, call.text);
    return { who, voicemailId: call.body.data.voicemailId };
  }

  test('a voicemail is transcribed by the job: queued, then completed with the engine and its event', async () => {
    const { who, voicemailId } = await voicemail();
    const [queued] = (await api(who, '/transcriptions')).body.data;
    assert.equal(queued.voicemailId, voicemailId);
    assert.equal(queued.recordingId, null);
    assert.equal(queued.status, 'queued');
    assert.equal(queued.text, null);
    assert.equal(queued.engine, 'openai-compatible:whisper-1');

    await t.ctx.jobs.drain();
    const done = (await api(who, `/transcriptions/${queued.id}`)).body.data;
    assert.equal(done.status, 'completed');
    assert.equal(done.text, 'Please call me back.');
    assert.ok(done.completedAt);
    const audio = await fetch(`${t.url}/api/v2/voicemails/${voicemailId}/audio`, {
      headers: { 'x-api-key': who.key },
    });
    assert.deepEqual(
      service.seen.at(-1),
      Buffer.from(await audio.arrayBuffer()),
      'the engine heard the voicemail',
    );
    const [event] = await t.ctx.db.query<{ data: { id: string; status: string } }>(
      "SELECT data FROM events WHERE type = 'transcription.completed' AND data->>'id' = $1",
      [queued.id],
    );
    assert.equal(event?.data.status, 'completed');
  });

  test('an engine that refuses the audio fails the transcription at once; one that is down is retried', async () => {
    reply = { status: 400, body: '{"error":"unsupported"}' };
    const refused = await voicemail();
    await t.ctx.jobs.drain();
    const [failed] = (await api(refused.who, '/transcriptions')).body.data;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.text, null);

    reply = { status: 503, body: '{}' };
    const down = await voicemail();
    await t.ctx.jobs.drain();
    const [waiting] = (await api(down.who, '/transcriptions')).body.data;
    assert.equal(waiting.status, 'queued');
    reply = { status: 200, body: '{"text":"Back again."}' };
    t.ctx.clock.advance(15);
    await t.ctx.jobs.drain();
    const later = (await api(down.who, `/transcriptions/${waiting.id}`)).body.data;
    assert.equal(later.status, 'completed');
    assert.equal(later.text, 'Back again.');

    // Deleting the voicemail deletes what was heard in it.
    await t.request('DELETE', `/api/v2/voicemails/${down.voicemailId}`, { apiKey: down.who.key });
    assert.equal((await api(down.who, `/transcriptions/${waiting.id}`)).status, 404);
  });
});
