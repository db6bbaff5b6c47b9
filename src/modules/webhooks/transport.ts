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

/** An idle pooled connection is closed after this long (receivers commonly close theirs after 5-60 s). */
export const IDLE_CONNECTION_MS = 30_000;
/** Connections one transport keeps open at most to one receiver (origin and checked addresses). */
const SOCKETS_PER_RECEIVER = 64;

/** The request options a pooled connection is chosen by: ours add the addresses the SSRF guard let through. */
type PoolKeyOptions = Parameters<http.Agent['getName']>[0] & { checkedAddresses?: string };

// Keep-alive pools, one per transport (so a transport that is not guarded never hands a connection to one
// that is), and in each one pool per receiver: an origin and the addresses its name resolved to and passed
// the guard at this attempt. A pooled connection was opened to one of those addresses, so reusing it goes
// only where this attempt's check allows; a name that now resolves elsewhere gets connections of its own.
class CheckedHttpAgent extends http.Agent {
  override getName(options?: PoolKeyOptions): string {
    return `${super.getName(options)}|${options?.checkedAddresses ?? ''}`;
  }
}
class CheckedHttpsAgent extends https.Agent {
  override getName(options?: PoolKeyOptions & https.RequestOptions): string {
    return `${super.getName(options)}|${options?.checkedAddresses ?? ''}`;
  }
}

export class WebhookTransport {
  private readonly resolver: Resolver;
  /** The deadline of one whole attempt; the delivery queue checks it is well inside the job's lease. */
  readonly timeoutMs: number;
  private readonly excerptBytes: number;
  private readonly httpAgent = new CheckedHttpAgent({
    keepAlive: true,
    maxSockets: SOCKETS_PER_RECEIVER,
    timeout: IDLE_CONNECTION_MS,
  });
  private readonly httpsAgent = new CheckedHttpsAgent({
    keepAlive: true,
    maxSockets: SOCKETS_PER_RECEIVER,
    timeout: IDLE_CONNECTION_MS,
  });

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
      let checkedAddresses: string | undefined;
      if (this.options.guarded) {
        try {
          const addresses = await beforeDeadline(checkHost(target.hostname, this.resolver), deadline.signal);
          lookup = pinnedLookup(addresses);
          checkedAddresses = addresses
            .map((entry) => `${entry.family}/${entry.address}`)
            .sort()
            .join(',');
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
        checkedAddresses,
        elapsed,
        deadline: deadline.signal,
        resent: false,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  private send(exchange: Exchange): Promise<PostResult> {
    const { target, headers, body, lookup, checkedAddresses, elapsed, deadline } = exchange;
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
          agent: exchange.resent ? false : secure ? this.httpsAgent : this.httpAgent,
          headers: {
            ...headers,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'commsplatform-webhooks/1',
          },
          ...(lookup ? { lookup, checkedAddresses } : {}),
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
  /** The pool key of the addresses the guard let through (guarded transports only). */
  checkedAddresses: string | undefined;
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
