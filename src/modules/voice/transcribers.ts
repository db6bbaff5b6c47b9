// Transcription engines behind one seam. Voicemails and recordings (8 kHz mono 16-bit PCM WAV) become text here;
// every transcription names the engine that made it, and without an engine none is made.
//   OpenAiTranscriber       an OpenAI-compatible service: POST {url}/audio/transcriptions (multipart `file`,
//                           `model`, `response_format=json`) answering {text}. OpenAI, Groq, a local
//                           faster-whisper server and others speak it.
//   PocketsphinxTranscriber the offline recogniser Debian packages (`pocketsphinx`, `pocketsphinx-en-us`): its
//                           `pocketsphinx_continuous -infile` reads 16 kHz audio, so ours is upsampled first
//                           and heard with the model adapted to the telephone band (telephone-band.*).
//                           Told the speaker's domain (an AI agent's knowledge), it listens with that domain's
//                           small language model instead of the general one (domain-models.ts).
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { access, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeWav, encodeWav, resample, SAMPLE_RATE } from './audio.ts';
import { DomainModels, type SpeechDomain } from './domain-models.ts';
import { deferredStream, pocketsphinxStream, type SpeechStream } from './speech-stream.ts';

/** What may help an engine hear: who is speaking about what. An engine may ignore it. */
export interface TranscriptionHints {
  domain?: SpeechDomain;
}

export interface Transcriber {
  /** Named in every transcription it makes (`openai-compatible:whisper-1`, `pocketsphinx`). */
  readonly engine: string;
  transcribe(wav: Buffer, hints?: TranscriptionHints): Promise<string>;
  /**
   * Recognition while the caller speaks (speech-stream.ts): fed from the start of an utterance, its words come
   * soon after the end. Absent: the engine hears whole utterances only.
   */
  stream?(hints?: TranscriptionHints): SpeechStream;
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

  // The hints are not sent: the service's own model hears the call as it is (and its API takes no domain).
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
        // A redirect is not followed: the key and the caller's words go to the configured host or nowhere.
        redirect: 'manual',
        // Covers the answer's body too, so a service that stalls half-way still ends.
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw unreachable(error);
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      // The body is not quoted: a service may echo the key it was given.
      throw new TranscriptionError(
        `The transcription service answered ${response.status}`,
        response.status === 429 || response.status >= 500,
      );
    }
    let raw: string;
    try {
      raw = await response.text();
    } catch (error) {
      throw unreachable(error);
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      // A 200 that is not JSON comes from something in front of the service (a proxy, a portal): it passes.
      throw new TranscriptionError('The transcription service answered something that is not JSON', true);
    }
    const text = (body as { text?: unknown } | null)?.text;
    if (typeof text !== 'string') {
      throw new TranscriptionError('The transcription service answered without a text', false);
    }
    return text;
  }
}

/** Down, refusing connections or too slow: worth trying again. The URL is not named (it may hold a key). */
function unreachable(error: unknown): TranscriptionError {
  const why = error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : 'could not be reached';
  return new TranscriptionError(`The transcription service ${why}`, true);
}

/** Debian 12's pocketsphinx is 0.8 (5prealpha): this program, not version 5's `pocketsphinx single`. */
const POCKETSPHINX = 'pocketsphinx_continuous';
/** The US English model of `pocketsphinx-en-us`: acoustic model, language model, pronunciations. */
const POCKETSPHINX_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
const POCKETSPHINX_MODEL = {
  '-hmm': join(POCKETSPHINX_MODEL_DIR, 'en-us'),
  '-lm': join(POCKETSPHINX_MODEL_DIR, 'en-us.lm.bin'),
  '-dict': join(POCKETSPHINX_MODEL_DIR, 'cmudict-en-us.dict'),
};
/**
 * The model's rate: pocketsphinx refuses a WAV whose header says another, and cannot analyse 8 kHz audio (its
 * filters reach 6.8 kHz), so ours is upsampled.
 */
const POCKETSPHINX_RATE = 16_000;
/**
 * How it analyses telephone audio upsampled to its rate, chosen by measurement (docs/voice.md "Hearing on
 * the telephone"): the band above 4 kHz holds nothing, so its filters there see near-zero energy; a little
 * dither keeps their logarithms finite, and its noise removal (which takes that empty band for the noise
 * floor) is off. A fixed seed makes the dither, and so the words heard, the same on every run. Analysing at
 * 8 kHz with a narrower filter bank (`-samprate 8000 -nfft 256 -upperf 3500`) was measured too and is far
 * worse: the acoustic model was trained on the 25 filters from 130 Hz to 6.8 kHz of feat.params.
 */
const TELEPHONE_FEATURES = ['-dither', 'yes', '-seed', '1', '-remove_noise', 'no'];
/**
 * The acoustic model adapted to that band, learnt from real people's transcribed speech (Debian's
 * pocketsphinx-testdata) put through 8 kHz µ-law and upsampled as here; `scripts/telephone-band-mllr.ts` makes
 * both files, docs/voice.md has the figures. The MLLR transform moves the model's means (a 13×13 matrix and a
 * shift per feature stream). The feature parameters are the model's own but for `-cmninit`, where the live
 * cepstral mean normalisation starts: the model's is wideband speech's, and the band's is far from it, so the
 * first second of every utterance was normalised wrongly (the model's feat.params overrides `-cmninit` on the
 * command line, hence a file). Beside this file, so the compiled build (which copies src/'s other files) has them.
 */
const TELEPHONE_BAND = {
  '-featparams': fileURLToPath(new URL('./telephone-band.feat.params', import.meta.url)),
  '-mllr': fileURLToPath(new URL('./telephone-band.mllr', import.meta.url)),
};

export class PocketsphinxTranscriber implements Transcriber {
  readonly engine = 'pocketsphinx';
  private static installed?: Promise<boolean>;
  private readonly models: DomainModels;

  /** `modelsDir`: where domain language models are kept between runs (built once per version of a domain). */
  constructor(
    private readonly timeoutMs = 120_000,
    modelsDir = join(tmpdir(), 'commsplatform-speech-models'),
  ) {
    this.models = new DomainModels(modelsDir, POCKETSPHINX_MODEL['-dict']);
  }

  /** Whether the recogniser and its English model are installed (looked for once). */
  static available(): Promise<boolean> {
    PocketsphinxTranscriber.installed ??= (async () => {
      try {
        await Promise.all(
          [...Object.values(POCKETSPHINX_MODEL), ...Object.values(TELEPHONE_BAND)].map((path) =>
            access(path),
          ),
        );
      } catch {
        return false;
      }
      // It has no --version and exits 1 on any unknown option: only "not found" (ENOENT) means missing.
      return new Promise<boolean>((resolve) =>
        execFile(POCKETSPHINX, ['-h'], { timeout: 10_000 }, (error) =>
          resolve(!error || (error as NodeJS.ErrnoException).code !== 'ENOENT'),
        ),
      );
    })();
    return PocketsphinxTranscriber.installed;
  }

  /** The same recogniser and models as transcribe(), on a pipe fed as the caller speaks. */
  stream(hints: TranscriptionHints = {}): SpeechStream {
    return deferredStream(
      this.languageModel(hints.domain).then((language) =>
        pocketsphinxStream(POCKETSPHINX, this.arguments(language), this.timeoutMs),
      ),
    );
  }

  /** Everything but the input: the acoustic model, the language model and dictionary, the features. */
  private arguments(language: { lm: string; dict: string }): string[] {
    return [
      '-hmm',
      POCKETSPHINX_MODEL['-hmm'],
      '-lm',
      language.lm,
      '-dict',
      language.dict,
      ...TELEPHONE_FEATURES,
      ...Object.entries(TELEPHONE_BAND).flat(),
      '-logfn',
      '/dev/null',
    ];
  }

  async transcribe(wav: Buffer, hints: TranscriptionHints = {}): Promise<string> {
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
    const language = await this.languageModel(hints.domain);
    const path = join(tmpdir(), `commsplatform-transcribe-${randomUUID()}.wav`);
    // 'wx': a new file of our own, never one (or a link) someone else put there first.
    await writeFile(path, file, { mode: 0o600, flag: 'wx' });
    try {
      const output = await new Promise<string>((resolve, reject) =>
        execFile(
          POCKETSPHINX,
          ['-infile', path, ...this.arguments(language)],
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
      // Its input is a WAV we wrote ourselves, so a failure is the machine's (busy, killed), not the audio's.
      const killed = (error as { killed?: boolean }).killed === true;
      const why = killed ? `timed out after ${this.timeoutMs} ms` : (error as Error).message.split('\n')[0];
      throw new TranscriptionError(`pocketsphinx failed: ${why}`, true);
    } finally {
      await rm(path, { force: true });
    }
  }

  /**
   * The domain's model where there is one for its language (the acoustic model is US English), else the
   * general model. A domain model that cannot be built leaves the general one: the caller is still heard.
   */
  private async languageModel(domain?: SpeechDomain): Promise<{ lm: string; dict: string }> {
    const general = { lm: POCKETSPHINX_MODEL['-lm'], dict: POCKETSPHINX_MODEL['-dict'] };
    if (!domain || !/^en(-|$)/i.test(domain.language)) return general;
    try {
      const model = await this.models.modelFor(domain);
      return model.words > 0 ? model : general;
    } catch {
      return general;
    }
  }
}

/** The engine this server has: the configured service, else pocketsphinx where installed, else none. */
export async function transcriberFrom(config: {
  transcriptionUrl?: string;
  transcriptionApiKey?: string;
  transcriptionModel: string;
  /** Where domain language models are kept (a `speech-models` folder in it); the temporary folder without. */
  dataDir?: string;
}): Promise<Transcriber | undefined> {
  if (config.transcriptionUrl) {
    return new OpenAiTranscriber(
      config.transcriptionUrl,
      config.transcriptionApiKey,
      config.transcriptionModel,
    );
  }
  if (!(await PocketsphinxTranscriber.available())) return undefined;
  const onDisk = config.dataDir && !config.dataDir.startsWith('memory://');
  return new PocketsphinxTranscriber(undefined, onDisk ? join(config.dataDir!, 'speech-models') : undefined);
}
