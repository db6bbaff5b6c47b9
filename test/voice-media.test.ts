// The voice module's media parts: WAV encoding and decoding, resampling, the simulated callers' audio
// (espeak-ng where installed), byte ranges, and transcriptions end to end: a voicemail transcribed by the job
// through an OpenAI-compatible service (a local server speaking its API), completed or failed, with its engine
// and event. The engines on their own: test/transcribers.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import g711 from 'alawmulaw';
import {
  decodeWav,
  encodeWav,
  recordedAudio,
  resample,
  SAMPLE_RATE,
  telephoneAudio,
  tone,
} from '../src/modules/voice/audio.ts';
import { ApiError } from '../src/platform/errors.ts';
import { byteRange } from '../src/platform/http/byte-range.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { transcriptionServer } from './helpers/transcription-server.ts';

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
    const adpcm = Buffer.from(wav);
    adpcm.writeUInt16LE(2, 20);
    assert.throws(() => decodeWav(adpcm), /format 2 .*not supported/);
    const twelveBit = Buffer.from(wav);
    twelveBit.writeUInt16LE(12, 34);
    assert.throws(() => decodeWav(twelveBit), /12-bit samples is not supported/);
  });

  test('decode: the formats audio editors write (8/24/32-bit PCM, float, A-law, µ-law, extensible, stereo)', () => {
    const want = [0, 16384, -16384, 32512, -32768];
    /** A WAV of `data` under a fmt chunk of `code` (extensible: the code goes in the sub-format GUID). */
    const wavOf = (
      code: number,
      bits: number,
      data: Buffer,
      options: { channels?: number; extensible?: boolean } = {},
    ) => {
      const channels = options.channels ?? 1;
      const fmt = Buffer.alloc(options.extensible ? 40 : 16);
      fmt.writeUInt16LE(options.extensible ? 0xfffe : code, 0);
      fmt.writeUInt16LE(channels, 2);
      fmt.writeUInt32LE(16000, 4);
      fmt.writeUInt32LE((16000 * channels * bits) / 8, 8);
      fmt.writeUInt16LE((channels * bits) / 8, 12);
      fmt.writeUInt16LE(bits, 14);
      if (options.extensible) {
        fmt.writeUInt16LE(22, 16);
        fmt.writeUInt16LE(code, 24);
      }
      const chunk = (id: string, body: Buffer) => {
        const header = Buffer.alloc(8);
        header.write(id, 0, 'ascii');
        header.writeUInt32LE(body.length, 4);
        return Buffer.concat([header, body]);
      };
      const body = Buffer.concat([Buffer.from('WAVE'), chunk('fmt ', fmt), chunk('data', data)]);
      return Buffer.concat([Buffer.from('RIFF'), Buffer.from([0, 0, 0, 0]), body]);
    };
    const eight = Buffer.from(want.map((v) => (v >> 8) + 128));
    assert.deepEqual([...decodeWav(wavOf(1, 8, eight)).samples], want);
    const twentyFour = Buffer.alloc(want.length * 3);
    for (const [i, v] of want.entries()) twentyFour.writeIntLE(v * 256 + 17, i * 3, 3);
    assert.deepEqual([...decodeWav(wavOf(1, 24, twentyFour)).samples], want);
    const thirtyTwo = Buffer.alloc(want.length * 4);
    for (const [i, v] of want.entries()) thirtyTwo.writeInt32LE(v * 65536 + 3, i * 4);
    assert.deepEqual([...decodeWav(wavOf(1, 32, thirtyTwo, { extensible: true })).samples], want);
    const float = Buffer.alloc(12);
    for (const [i, v] of [0.5, -1, 2].entries()) float.writeFloatLE(v, i * 4);
    assert.deepEqual([...decodeWav(wavOf(3, 32, float)).samples], [16384, -32767, 32767]);
    // G.711 is lossy: the decoded values are those of the law's tables, near what was encoded.
    const pcm = Int16Array.from([1000, -1000, 8000]);
    for (const [code, law] of [
      [6, g711.alaw],
      [7, g711.mulaw],
    ] as const) {
      const decoded = decodeWav(wavOf(code, 8, Buffer.from(law.encode(pcm))));
      assert.equal(decoded.sampleRate, 16000);
      assert.deepEqual([...decoded.samples], [...law.decode(law.encode(pcm))]);
      for (let i = 0; i < pcm.length; i++)
        assert.ok(Math.abs(decoded.samples[i]! - pcm[i]!) < Math.abs(pcm[i]!) / 16 + 64);
    }
    // Stereo at 16 kHz becomes telephone audio: channels mixed, 8 kHz.
    const stereo = Buffer.alloc(8 * 2 * 2);
    for (let i = 0; i < 8; i++) {
      stereo.writeInt16LE(1000, i * 4);
      stereo.writeInt16LE(3000, i * 4 + 2);
    }
    const decoded = decodeWav(wavOf(1, 16, stereo, { channels: 2 }));
    assert.equal(decoded.channels, 2);
    assert.deepEqual([...telephoneAudio(decoded)], [2000, 2000, 2000, 2000]);
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
