// Transcription engines behind one seam. Voicemails and recordings (8 kHz mono 16-bit PCM WAV) become text here;
// every transcription names the engine that made it, and without an engine none is made.
//   OpenAiTranscriber       an OpenAI-compatible service: POST {url}/audio/transcriptions (multipart `file`,
//                           `model`, `response_format=json`) answering {text}. OpenAI, Groq, a local
//                           faster-whisper server and others speak it.
//   PocketsphinxTranscriber the offline recogniser Debian packages (`pocketsphinx`, `pocketsphinx-en-us`): its
//                           `pocketsphinx_continuous -infile` reads 16 kHz audio, so ours is upsampled first.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { access, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeWav, encodeWav, resample, SAMPLE_RATE } from './audio.ts';

export interface Transcriber {
  /** Named in every transcription it makes (`openai-compatible:whisper-1`, `pocketsphinx`). */
  readonly engine: string;
  transcribe(wav: Buffer): Promise<string>;
}

/** A transcription that did not happen. `retryable`: the engine was down or busy, so trying later may work. */
export class TranscriptionError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'TranscriptionError';
  }
}

export class OpenAiTranscriber implements Transcriber {
  readonly engine: string;
  private readonly endpoint: string;

  constructor(
    baseUrl: string,
    private readonly apiKey: string | undefined,
    private readonly model: string,
    private readonly timeoutMs = 60_000,
  ) {
    this.endpoint = `${baseUrl.replace(/\/+$/, '')}/audio/transcriptions`;
    this.engine = `openai-compatible:${model}`;
  }

  async transcribe(wav: Buffer): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(wav)], { type: 'audio/wav' }), 'audio.wav');
    form.append('model', this.model);
    form.append('response_format', 'json');
    let response: Response;
    try {
      response = await fetch(this.endpoint, {
        method: 'POST',
        body: form,
        headers: this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {},
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const why =
        error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : 'could not be reached';
      throw new TranscriptionError(`The transcription service ${why}`, true);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new TranscriptionError(
        `The transcription service answered ${response.status}`,
        response.status === 429 || response.status >= 500,
      );
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      throw new TranscriptionError('The transcription service answered something that is not JSON', true);
    }
    const text = (body as { text?: unknown } | null)?.text;
    if (typeof text !== 'string') {
      throw new TranscriptionError('The transcription service answered without a text', false);
    }
    return text;
  }
}

const POCKETSPHINX = 'pocketsphinx_continuous';
const POCKETSPHINX_MODEL = '/usr/share/pocketsphinx/model/en-us/en-us';
const POCKETSPHINX_RATE = 16_000;

export class PocketsphinxTranscriber implements Transcriber {
  readonly engine = 'pocketsphinx';
  private static installed?: Promise<boolean>;

  constructor(private readonly timeoutMs = 120_000) {}

  /** Whether the recogniser and its English model are installed (looked for once). */
  static available(): Promise<boolean> {
    PocketsphinxTranscriber.installed ??= (async () => {
      try {
        await access(POCKETSPHINX_MODEL);
      } catch {
        return false;
      }
      return new Promise<boolean>((resolve) =>
        execFile(POCKETSPHINX, ['-h'], { timeout: 10_000 }, (error) =>
          resolve(!error || (error as NodeJS.ErrnoException).code !== 'ENOENT'),
        ),
      );
    })();
    return PocketsphinxTranscriber.installed;
  }

  async transcribe(wav: Buffer): Promise<string> {
    let audio: ReturnType<typeof decodeWav>;
    try {
      audio = decodeWav(wav);
    } catch (error) {
      throw new TranscriptionError(`The audio cannot be read: ${(error as Error).message}`, false);
    }
    const mono =
      audio.channels === 1 ? audio.samples : audio.samples.filter((_s, i) => i % audio.channels === 0);
    const upsampled = resample(mono, audio.sampleRate || SAMPLE_RATE, POCKETSPHINX_RATE);
    const file = encodeWav(upsampled);
    file.writeUInt32LE(POCKETSPHINX_RATE, 24);
    file.writeUInt32LE(POCKETSPHINX_RATE * 2, 28);
    const path = join(tmpdir(), `commsplatform-transcribe-${randomUUID()}.wav`);
    await writeFile(path, file, { mode: 0o600 });
    try {
      const output = await new Promise<string>((resolve, reject) =>
        execFile(
          POCKETSPHINX,
          ['-infile', path, '-logfn', '/dev/null'],
          { timeout: this.timeoutMs, maxBuffer: 4 * 1024 * 1024 },
          (error, stdout) => (error ? reject(error) : resolve(stdout)),
        ),
      );
      // One line per utterance it heard.
      return output
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '')
        .join(' ');
    } catch (error) {
      throw new TranscriptionError(`pocketsphinx failed: ${(error as Error).message.split('\n')[0]}`, true);
    } finally {
      await rm(path, { force: true });
    }
  }
}

/** The engine this server has: the configured service, else pocketsphinx where installed, else none. */
export async function transcriberFrom(config: {
  transcriptionUrl?: string;
  transcriptionApiKey?: string;
  transcriptionModel: string;
}): Promise<Transcriber | undefined> {
  if (config.transcriptionUrl) {
    return new OpenAiTranscriber(
      config.transcriptionUrl,
      config.transcriptionApiKey,
      config.transcriptionModel,
    );
  }
  return (await PocketsphinxTranscriber.available()) ? new PocketsphinxTranscriber() : undefined;
}
