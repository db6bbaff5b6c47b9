// One HTTP POST of a webhook: node's own http/https client, so nothing but this file decides where the bytes
// go. Redirects are never followed (a 3xx is an answer like any other non-2xx, and a failure). The whole
// exchange (resolving the host for the SSRF guard, connecting, TLS, sending, reading the answer, and the one
// resend on a fresh connection) runs under a single deadline (15 s) started when the attempt starts: the
// attempt must end well inside the job's lease, or another worker could take the job and POST it again. At
// most a short excerpt of the answer is read and kept for the delivery log. In production the URL must be
// https and the connection goes only to addresses the SSRF guard has checked (address-guard.ts).
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import {
  checkHost,
  ForbiddenAddressError,
  pinnedLookup,
  type Resolver,
  systemResolver,
} from '../../platform/http/address-guard.ts';

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
  /** The deadline of one whole attempt, DNS to the last byte read (default DELIVERY_TIMEOUT_MS). */
  timeoutMs?: number;
  /** How much of the answer is read and kept (default RESPONSE_EXCERPT_BYTES); an agent's tool wants more. */
  excerptBytes?: number;
}

/** The reason an attempt's deadline aborts it with: the attempt ends as a timeout failure. */
class DeadlineExceeded extends Error {}

// Keep-alive pools: most deliveries go to the same few receivers. A pooled socket was opened to an address
// that passed the guard, so reusing it never reaches anything new.
const httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 64 });

export class WebhookTransport {
  private readonly resolver: Resolver;
  /** The deadline of one whole attempt; the delivery queue checks it is well inside the job's lease. */
  readonly timeoutMs: number;
  private readonly excerptBytes: number;

  constructor(private readonly options: TransportOptions) {
    this.resolver = options.resolver ?? systemResolver;
    this.timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    this.excerptBytes = options.excerptBytes ?? RESPONSE_EXCERPT_BYTES;
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

    // One deadline for the whole attempt, whatever stage it is in when it runs out.
    const deadline = new AbortController();
    const seconds = this.timeoutMs / 1000;
    const timer = setTimeout(
      () => deadline.abort(new DeadlineExceeded(`Timed out after ${seconds} s`)),
      this.timeoutMs,
    );
    try {
      let lookup: ReturnType<typeof pinnedLookup> | undefined;
      if (this.options.guarded) {
        try {
          lookup = pinnedLookup(
            await beforeDeadline(checkHost(target.hostname, this.resolver), deadline.signal),
          );
        } catch (error) {
          if (error instanceof DeadlineExceeded)
            return failure(`${error.message} resolving ${target.hostname}`);
          if (error instanceof ForbiddenAddressError) return failure(`Refused: ${error.message}`);
          return failure(`Could not resolve ${target.hostname}: ${(error as Error).message}`);
        }
      }
      return await this.send({
        target,
        headers,
        body,
        lookup,
        elapsed,
        deadline: deadline.signal,
        resent: false,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  private send(exchange: Exchange): Promise<PostResult> {
    const { target, headers, body, lookup, elapsed, deadline } = exchange;
    const secure = target.protocol === 'https:';
    return new Promise<PostResult>((resolve) => {
      let settled = false;
      let stage = 'waiting for the answer';
      const finish = (result: PostResult | Promise<PostResult>) => {
        if (settled) return;
        settled = true;
        deadline.removeEventListener('abort', expire);
        resolve(result);
      };
      const failed = (error: string) =>
        finish({ statusCode: null, durationMs: elapsed(), error, responseExcerpt: null, retryAfter: null });
      // The attempt ends as a timeout at once; tearing the connection down after that changes nothing.
      const expire = () => {
        failed(`${(deadline.reason as Error).message} ${stage}`);
        request.destroy();
      };
      const request = (secure ? https : http).request(
        target,
        {
          method: 'POST',
          // A resend after a dead pooled socket gets a connection of its own.
          agent: exchange.resent ? false : secure ? httpsAgent : httpAgent,
          headers: {
            ...headers,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'commsplatform-webhooks/1',
          },
          ...(lookup ? { lookup } : {}),
        },
        (response) => {
          stage = 'reading the answer';
          const chunks: Buffer[] = [];
          let kept = 0;
          const done = () => {
            const retryAfter = response.headers['retry-after'];
            finish({
              statusCode: response.statusCode ?? null,
              durationMs: elapsed(),
              error: null,
              responseExcerpt: Buffer.concat(chunks).toString('utf8').slice(0, this.excerptBytes),
              retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
            });
          };
          response.on('data', (chunk: Buffer) => {
            if (kept < this.excerptBytes) {
              chunks.push(chunk.subarray(0, this.excerptBytes - kept));
              kept += Math.min(chunk.length, this.excerptBytes - kept);
            }
            // Nothing past the excerpt matters: stop reading rather than take an endless answer.
            if (kept >= this.excerptBytes) {
              done();
              response.destroy();
            }
          });
          response.on('end', done);
          response.on('close', done);
          response.on('error', done);
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (settled) return;
        // A kept-alive socket the receiver closed while it sat idle fails at once, before the request was
        // read; that is our connection's fault, not the receiver's, so it is sent once more on a new one,
        // under the same deadline.
        if (!exchange.resent && request.reusedSocket && error.code === 'ECONNRESET') {
          finish(this.send({ ...exchange, resent: true }));
          return;
        }
        failed(error.message || String(error));
      });
      if (deadline.aborted) {
        expire();
        return;
      }
      deadline.addEventListener('abort', expire, { once: true });
      request.end(body);
    });
  }
}

/** One POST under way: what to send where, and the attempt's deadline. */
interface Exchange {
  target: URL;
  headers: Record<string, string>;
  body: string;
  lookup: ReturnType<typeof pinnedLookup> | undefined;
  elapsed: () => number;
  deadline: AbortSignal;
  /** This is the one resend after a kept-alive socket turned out dead. */
  resent: boolean;
}

/**
 * `work`, or a rejection with the signal's reason once it aborts. The work itself is left to finish (a DNS
 * lookup cannot be cancelled); only its answer is no longer waited for.
 */
function beforeDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
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
