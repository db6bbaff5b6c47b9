// The Transcriber seam (src/modules/voice/transcribers.ts). The OpenAI-compatible adapter talks to a local
// Fastify server on a real socket that speaks the documented API (multipart `file` and `model`, a bearer
// token, `{text}` back), so the bytes on the wire are checked, not a mock's idea of them. Pocketsphinx, where
// installed, hears speech that espeak-ng synthesised at the telephone rate.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import multipart from '@fastify/multipart';
import Fastify, { type FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config.ts';
import { encodeWav, SAMPLE_RATE, silence, synthesise, tone } from '../src/modules/voice/audio.ts';
import {
  OpenAiTranscriber,
  PocketsphinxTranscriber,
  TranscriptionError,
  transcriberFrom,
} from '../src/modules/voice/transcribers.ts';

const KEY = 'sk-test-0123456789abcdef';
const MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
// Decided at load, synchronously, because node:test needs `skip` when the test is declared.
const pocketsphinx =
  spawnSync('pocketsphinx_continuous', ['-h']).error === undefined &&
  ['en-us', 'en-us.lm.bin', 'cmudict-en-us.dict'].every((file) => existsSync(join(MODEL_DIR, file)));
const espeak = spawnSync('espeak-ng', ['--version']).error === undefined;

/** What the service received in one request. */
interface Received {
  authorization?: string;
  fields: Record<string, string>;
  filename?: string;
  mimetype?: string;
  file?: Buffer;
}

/** How the service answers one request: a status and a raw body, or never (`hang`). */
type Answer = { status: number; body: string; location?: string } | 'hang';

/** A local OpenAI-compatible transcription service; `answer` is read for each request. */
class FakeService {
  readonly received: Received[] = [];
  answer: Answer = { status: 200, body: '{"text":"hello"}' };
  url = '';
  private readonly server: FastifyInstance = Fastify();
  private release: () => void = () => {};
  private readonly released = new Promise<void>((resolve) => {
    this.release = resolve;
  });

  async start(): Promise<this> {
    await this.server.register(multipart, { limits: { fileSize: 10 * 1024 * 1024 } });
    this.server.post('/v1/audio/transcriptions', async (request, reply) => {
      const received: Received = { authorization: request.headers.authorization, fields: {} };
      for await (const part of request.parts()) {
        if (part.type === 'file') {
          received.file = await part.toBuffer();
          received.filename = part.filename;
          received.mimetype = part.mimetype;
        } else {
          received.fields[part.fieldname] = String(part.value);
        }
      }
      this.received.push(received);
      const answer = this.answer;
      if (answer === 'hang') {
        await this.released;
        return reply.status(200).send({ text: 'too late' });
      }
      if (answer.location) reply.header('location', answer.location);
      return reply.status(answer.status).type('application/json').send(answer.body);
    });
    await this.server.listen({ port: 0, host: '127.0.0.1' });
    const { port } = this.server.server.address() as { port: number };
    this.url = `http://127.0.0.1:${port}/v1`;
    return this;
  }

  async stop(): Promise<void> {
    this.release();
    await this.server.close();
  }
}

/** The error `promise` rejects with, which must be a TranscriptionError that does not quote the key. */
async function failure(promise: Promise<string>): Promise<TranscriptionError> {
  try {
    const text = await promise;
    assert.fail(`transcribed: ${text}`);
  } catch (error) {
    assert.ok(error instanceof TranscriptionError, `not a TranscriptionError: ${String(error)}`);
    assert.ok(!error.message.includes(KEY), `the key is in the message: ${error.message}`);
    return error;
  }
}

describe('OpenAI-compatible transcriber', () => {
  const wav = encodeWav(tone(0.5, 440));
  let service: FakeService;

  before(async () => {
    service = await new FakeService().start();
  });
  after(() => service.stop());

  test('sends the file, the model and the key as documented, and returns the text', async () => {
    service.answer = { status: 200, body: JSON.stringify({ text: 'Hello, please call me back.' }) };
    service.received.length = 0;
    // A trailing slash on TRANSCRIPTION_URL is tolerated.
    const engine = new OpenAiTranscriber(`${service.url}/`, KEY, 'whisper-1');
    assert.equal(engine.engine, 'openai-compatible:whisper-1');
    assert.equal(await engine.transcribe(wav), 'Hello, please call me back.');

    assert.equal(service.received.length, 1);
    const [received] = service.received;
    assert.equal(received!.authorization, `Bearer ${KEY}`);
    assert.deepEqual(received!.fields, { model: 'whisper-1', response_format: 'json' });
    assert.equal(received!.filename, 'audio.wav');
    assert.equal(received!.mimetype, 'audio/wav');
    assert.ok(received!.file?.equals(wav), 'the file bytes are not the WAV sent');
  });

  test('without a key no Authorization header is sent', async () => {
    service.answer = { status: 200, body: '{"text":""}' };
    service.received.length = 0;
    const engine = new OpenAiTranscriber(service.url, undefined, 'large-v3');
    assert.equal(engine.engine, 'openai-compatible:large-v3');
    assert.equal(await engine.transcribe(wav), '');
    assert.equal(service.received[0]!.authorization, undefined);
    assert.equal(service.received[0]!.fields.model, 'large-v3');
  });

  test('401 is final, and the key is not in the message even when the service echoes it', async () => {
    service.answer = {
      status: 401,
      body: JSON.stringify({ error: { message: `Incorrect API key: ${KEY}` } }),
    };
    const error = await failure(new OpenAiTranscriber(service.url, KEY, 'whisper-1').transcribe(wav));
    assert.equal(error.retryable, false);
    assert.match(error.message, /401/);
  });

  test('other 4xx are final; 429 and 5xx are worth retrying', async () => {
    const engine = new OpenAiTranscriber(service.url, KEY, 'whisper-1');
    for (const [status, retryable] of [
      [400, false],
      [403, false],
      [413, false],
      [429, true],
      [500, true],
      [502, true],
      [503, true],
    ] as const) {
      service.answer = { status, body: '{"error":{"message":"no"}}' };
      const error = await failure(engine.transcribe(wav));
      assert.equal(error.retryable, retryable, `status ${status}`);
    }
  });

  test('a service that never answers times out, retryably', async () => {
    service.answer = 'hang';
    const started = Date.now();
    const error = await failure(new OpenAiTranscriber(service.url, KEY, 'whisper-1', 300).transcribe(wav));
    assert.equal(error.retryable, true);
    assert.match(error.message, /timed out/);
    assert.ok(Date.now() - started < 5_000, 'the timeout was not applied');
  });

  test('an answer that is not JSON, or has no text, is an error; nothing is made up', async () => {
    const engine = new OpenAiTranscriber(service.url, KEY, 'whisper-1');
    for (const body of [
      '<html>Bad gateway</html>',
      '{"text": "cut off',
      '',
      'null',
      '{"words":[]}',
      '{"text":42}',
    ]) {
      service.answer = { status: 200, body };
      await failure(engine.transcribe(wav));
    }
  });

  test('a redirect is not followed: the key goes nowhere else', async () => {
    const elsewhere = await new FakeService().start();
    try {
      service.answer = { status: 307, body: '{}', location: `${elsewhere.url}/audio/transcriptions` };
      const error = await failure(new OpenAiTranscriber(service.url, KEY, 'whisper-1').transcribe(wav));
      assert.equal(error.retryable, false);
      assert.equal(elsewhere.received.length, 0);
    } finally {
      await elsewhere.stop();
    }
  });

  test('a service that cannot be reached is worth retrying', async () => {
    // A port that was just listened on and closed: nothing answers there.
    const gone = await new FakeService().start();
    await gone.stop();
    const error = await failure(new OpenAiTranscriber(gone.url, KEY, 'whisper-1').transcribe(wav));
    assert.equal(error.retryable, true);
    assert.match(error.message, /could not be reached/);
  });
});

describe('the transcription configuration and engine chosen', () => {
  test('TRANSCRIPTION_URL must be http(s); the model defaults to whisper-1; the key is read', () => {
    assert.throws(
      () => loadConfig({ DATA_DIR: 'memory://', TRANSCRIPTION_URL: 'api.openai.com/v1' }),
      /TRANSCRIPTION_URL/,
    );
    const defaults = loadConfig({ DATA_DIR: 'memory://' });
    assert.equal(defaults.transcriptionUrl, undefined);
    assert.equal(defaults.transcriptionApiKey, undefined);
    assert.equal(defaults.transcriptionModel, 'whisper-1');
    const set = loadConfig({
      DATA_DIR: 'memory://',
      TRANSCRIPTION_URL: 'http://127.0.0.1:8000/v1',
      TRANSCRIPTION_API_KEY: KEY,
      TRANSCRIPTION_MODEL: 'Systran/faster-whisper-small',
    });
    assert.equal(set.transcriptionUrl, 'http://127.0.0.1:8000/v1');
    assert.equal(set.transcriptionApiKey, KEY);
    assert.equal(set.transcriptionModel, 'Systran/faster-whisper-small');
  });

  test('a configured service first, else pocketsphinx where installed, else no engine', async () => {
    const configured = await transcriberFrom({
      transcriptionUrl: 'https://api.openai.com/v1',
      transcriptionApiKey: KEY,
      transcriptionModel: 'whisper-1',
    });
    assert.ok(configured instanceof OpenAiTranscriber);
    assert.equal(configured.engine, 'openai-compatible:whisper-1');

    assert.equal(await PocketsphinxTranscriber.available(), pocketsphinx);
    const offline = await transcriberFrom({ transcriptionModel: 'whisper-1' });
    assert.equal(offline?.engine, pocketsphinx ? 'pocketsphinx' : undefined);
  });
});

describe('pocketsphinx transcriber', { skip: !pocketsphinx && 'pocketsphinx not installed' }, () => {
  // A private temporary directory, so the test can see that the upsampled copy is removed.
  let scratch: string;
  let tmpdirBefore: string | undefined;
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'transcribers-test-'));
    tmpdirBefore = process.env.TMPDIR;
    process.env.TMPDIR = scratch;
  });
  after(async () => {
    if (tmpdirBefore === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpdirBefore;
    await rm(scratch, { recursive: true, force: true });
  });

  test('hears telephone-rate speech', { skip: !espeak && 'espeak-ng not installed' }, async (t) => {
    const spoken = 'hello please call me back tomorrow';
    const speech = await synthesise(spoken);
    assert.ok(speech, 'espeak-ng made no speech');
    const wav = encodeWav(speech);
    assert.equal(wav.readUInt32LE(24), SAMPLE_RATE);

    const engine = new PocketsphinxTranscriber();
    assert.equal(engine.engine, 'pocketsphinx');
    const text = await engine.transcribe(wav);
    t.diagnostic(`said "${spoken}", heard "${text}"`);
    assert.ok(text.trim().length > 0);
    const heard = text.toLowerCase().split(/\s+/);
    assert.ok(
      spoken.split(' ').some((word) => heard.includes(word)),
      `none of the spoken words was heard: "${text}"`,
    );
    assert.deepEqual(await readdir(scratch), [], 'the temporary WAV was left behind');
  });

  test('silence is an empty transcription: no words are invented', async () => {
    assert.equal(await new PocketsphinxTranscriber().transcribe(encodeWav(silence(1))), '');
  });

  test('bytes that are not a WAV are a final TranscriptionError, not a crash', async () => {
    const engine = new PocketsphinxTranscriber();
    for (const garbage of [Buffer.from('garbage'), Buffer.alloc(0), Buffer.from('RIFF\0\0\0\0WAVEfmt ')]) {
      const error = await failure(engine.transcribe(garbage));
      assert.equal(error.retryable, false);
    }
    assert.deepEqual(await readdir(scratch), []);
  });
});
