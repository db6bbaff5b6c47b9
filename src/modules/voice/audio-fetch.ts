// Audio a call flow's `play` step names by URL, fetched when the step runs: one GET under one short deadline
// (DNS to the last byte), no redirects followed, at most MAX_AUDIO_BYTES read, and decoded as the WAV files
// audio.ts reads (linear PCM, float, A-law, µ-law; any rate and channels, made 8 kHz mono). In production the
// URL must be https and may only reach public addresses, checked on the addresses the name resolves to with
// the connection pinned to them (the webhooks' SSRF guard, platform/http/address-guard.ts), since the URL is
// the customer's and we fetch it from inside our network. A failure is an AudioFetchError whose message says
// why (never the answer's body); the flow then skips the step (flow-media.ts).
import http from 'node:http';
import https from 'node:https';
import {
  checkHost,
  ForbiddenAddressError,
  pinnedLookup,
  type Resolver,
  systemResolver,
} from '../../platform/http/address-guard.ts';
import { decodeWav, telephoneAudio } from './audio.ts';

/** The whole fetch, DNS to the last byte: a caller waits in silence meanwhile. */
export const AUDIO_FETCH_TIMEOUT_MS = 5_000;
/** The most bytes read: ten minutes of 8 kHz 16-bit mono is 9.6 MB; a minute of CD audio is 10.6 MB. */
export const MAX_AUDIO_BYTES = 10 * 1024 * 1024;

export class AudioFetchError extends Error {
  override readonly name = 'AudioFetchError';
}

export class AudioFetcher {
  private readonly resolver: Resolver;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;

  constructor(
    private readonly options: {
      /** Production: https only, public addresses only. */
      guarded: boolean;
      resolver?: Resolver;
      timeoutMs?: number;
      maxBytes?: number;
    },
  ) {
    this.resolver = options.resolver ?? systemResolver;
    this.timeoutMs = options.timeoutMs ?? AUDIO_FETCH_TIMEOUT_MS;
    this.maxBytes = options.maxBytes ?? MAX_AUDIO_BYTES;
  }

  /** The audio at `url` as 8 kHz mono samples; an AudioFetchError says why not. */
  async fetch(url: string): Promise<Int16Array> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw new AudioFetchError('not an absolute URL');
    }
    const secure = target.protocol === 'https:';
    if (!secure && (this.options.guarded || target.protocol !== 'http:')) {
      throw new AudioFetchError('only https URLs are fetched');
    }
    const deadline = AbortSignal.timeout(this.timeoutMs);
    let lookup: ReturnType<typeof pinnedLookup> | undefined;
    if (this.options.guarded) {
      try {
        lookup = pinnedLookup(await checkHost(target.hostname, this.resolver));
      } catch (error) {
        if (error instanceof ForbiddenAddressError) throw new AudioFetchError(`refused: ${error.message}`);
        throw new AudioFetchError(`${target.hostname} does not resolve`);
      }
    }
    const bytes = await this.get(target, lookup, deadline);
    try {
      const samples = telephoneAudio(decodeWav(bytes));
      if (samples.length === 0) throw new Error('it holds no audio');
      return samples;
    } catch (error) {
      throw new AudioFetchError(`not audio we play: ${(error as Error).message}`);
    }
  }

  private get(
    target: URL,
    lookup: ReturnType<typeof pinnedLookup> | undefined,
    deadline: AbortSignal,
  ): Promise<Buffer> {
    const limit = this.maxBytes;
    const seconds = this.timeoutMs / 1000;
    return new Promise<Buffer>((resolve, reject) => {
      let settled = false;
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        request.destroy();
        reject(new AudioFetchError(why));
      };
      const request = (target.protocol === 'https:' ? https : http).get(
        target,
        {
          agent: false,
          headers: { accept: 'audio/wav, audio/x-wav, audio/*', 'user-agent': 'commsplatform-voice/1' },
          signal: deadline,
          ...(lookup ? { lookup } : {}),
        },
        (response) => {
          const status = response.statusCode ?? 0;
          // A redirect is an answer like any other: following it would reach a place nobody checked.
          if (status < 200 || status >= 300) return fail(`the URL answered ${status}`);
          const declared = Number(response.headers['content-length']);
          if (Number.isFinite(declared) && declared > limit)
            return fail(`the audio is larger than ${limit} bytes`);
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > limit) return fail(`the audio is larger than ${limit} bytes`);
            chunks.push(chunk);
          });
          response.on('end', () => {
            if (settled) return;
            settled = true;
            resolve(Buffer.concat(chunks));
          });
          response.on('error', () =>
            fail(deadline.aborted ? `timed out after ${seconds} s` : 'the answer broke off'),
          );
        },
      );
      request.on('error', (error) => {
        if (deadline.aborted) return fail(`timed out after ${seconds} s`);
        fail(`could not be fetched: ${error.message}`);
      });
    });
  }
}
