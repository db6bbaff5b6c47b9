// One HTTP POST of a webhook: node's own http/https client, so nothing but this file decides where the bytes
// go. Redirects are never followed (a 3xx is an answer like any other non-2xx, and a failure). The whole
// exchange is bounded by a timeout (15 s); at most a short excerpt of the answer is read and kept for the
// delivery log. In production the URL must be https and the connection goes only to addresses the SSRF guard
// has checked (address-guard.ts).
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import {
  checkHost,
  ForbiddenAddressError,
  pinnedLookup,
  type Resolver,
  systemResolver,
} from './address-guard.ts';

export const DELIVERY_TIMEOUT_MS = 15_000;
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface PostResult {
  /** The HTTP status, or null when no answer came (refused, timed out, unreachable, forbidden address). */
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseExcerpt: string | null;
  /** The answer's Retry-After header as given, when there was one. */
  retryAfter: string | null;
}

export interface TransportOptions {
  /** Production: https only, and only public addresses (checked on the resolved address). */
  guarded: boolean;
  resolver?: Resolver;
  timeoutMs?: number;
}

// Keep-alive pools: most deliveries go to the same few receivers. A pooled socket was opened to an address
// that passed the guard, so reusing it never reaches anything new.
const httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 64 });

export class WebhookTransport {
  private readonly resolver: Resolver;
  private readonly timeoutMs: number;

  constructor(private readonly options: TransportOptions) {
    this.resolver = options.resolver ?? systemResolver;
    this.timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  }

  async post(url: string, headers: Record<string, string>, body: string): Promise<PostResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const failure = (error: string): PostResult => ({
      statusCode: null,
      durationMs: elapsed(),
      error,
      responseExcerpt: null,
      retryAfter: null,
    });

    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return failure('Invalid URL');
    }
    const secure = target.protocol === 'https:';
    if (!secure && (this.options.guarded || target.protocol !== 'http:')) {
      return failure('Only https URLs may receive webhooks');
    }

    let lookup: ReturnType<typeof pinnedLookup> | undefined;
    if (this.options.guarded) {
      try {
        lookup = pinnedLookup(await checkHost(target.hostname, this.resolver));
      } catch (error) {
        if (error instanceof ForbiddenAddressError) return failure(`Refused: ${error.message}`);
        return failure(`Could not resolve ${target.hostname}: ${(error as Error).message}`);
      }
    }

    return this.send(target, headers, body, lookup, elapsed, false);
  }

  private send(
    target: URL,
    headers: Record<string, string>,
    body: string,
    lookup: ReturnType<typeof pinnedLookup> | undefined,
    elapsed: () => number,
    retried: boolean,
  ): Promise<PostResult> {
    const secure = target.protocol === 'https:';
    return new Promise<PostResult>((resolve) => {
      let settled = false;
      const finish = (result: PostResult | Promise<PostResult>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const request = (secure ? https : http).request(
        target,
        {
          method: 'POST',
          // A retry of a dead pooled socket gets a connection of its own.
          agent: retried ? false : secure ? httpsAgent : httpAgent,
          headers: {
            ...headers,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'commsplatform-webhooks/1',
          },
          ...(lookup ? { lookup } : {}),
        },
        (response) => {
          const chunks: Buffer[] = [];
          let kept = 0;
          const done = () => {
            const retryAfter = response.headers['retry-after'];
            finish({
              statusCode: response.statusCode ?? null,
              durationMs: elapsed(),
              error: null,
              responseExcerpt: Buffer.concat(chunks).toString('utf8').slice(0, RESPONSE_EXCERPT_BYTES),
              retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
            });
          };
          response.on('data', (chunk: Buffer) => {
            if (kept < RESPONSE_EXCERPT_BYTES) {
              chunks.push(chunk.subarray(0, RESPONSE_EXCERPT_BYTES - kept));
              kept += Math.min(chunk.length, RESPONSE_EXCERPT_BYTES - kept);
            }
            // Nothing past the excerpt matters: stop reading rather than take an endless answer.
            if (kept >= RESPONSE_EXCERPT_BYTES) {
              done();
              response.destroy();
            }
          });
          response.on('end', done);
          response.on('close', done);
          response.on('error', done);
        },
      );
      const timer = setTimeout(() => {
        request.destroy(new Error(`Timed out after ${this.timeoutMs / 1000} s`));
      }, this.timeoutMs);
      request.on('error', (error: NodeJS.ErrnoException) => {
        // A kept-alive socket the receiver closed while it sat idle fails at once, before the request was
        // read; that is our connection's fault, not the receiver's, so it is sent once more on a new one.
        if (!retried && request.reusedSocket && error.code === 'ECONNRESET') {
          finish(this.send(target, headers, body, lookup, elapsed, true));
          return;
        }
        finish({
          statusCode: null,
          durationMs: elapsed(),
          error: error.message || String(error),
          responseExcerpt: null,
          retryAfter: null,
        });
      });
      request.end(body);
    });
  }
}

/**
 * Seconds a Retry-After header asks for (delta-seconds or an HTTP date, read against `nowMs`), or null when
 * absent or unreadable.
 */
export function retryAfterSeconds(header: string | null, nowMs: number): number | null {
  if (!header) return null;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}
