// Hosted media checked before a carrier that fetches it (the HTTP provider) is handed the URL: each URL is
// asked for with HEAD (GET when HEAD is not allowed, the body left unread), through the webhooks' SSRF guard
// in production (https only, public addresses only, the connection pinned to the addresses checked, redirects
// checked again), and must answer 2xx with an MMS image type and at most the upload size limit. A refusal fails
// the message with its reason; no answer (a timeout, a 5xx, a name that does not resolve now) throws, and the
// dispatch is tried again. Answers are remembered for five minutes, so a campaign's thousand messages with one
// image ask once.
import http from 'node:http';
import https from 'node:https';
import {
  checkHost,
  ForbiddenAddressError,
  pinnedLookup,
  type Resolver,
  systemResolver,
} from '../../platform/http/address-guard.ts';
import { ALLOWED_MEDIA_TYPES, MAXIMUM_UPLOAD_BYTES } from './media.ts';

export interface MediaRefusal {
  errorCode: 'MEDIA_URL_FORBIDDEN' | 'MEDIA_URL_UNREACHABLE' | 'MEDIA_TYPE_UNSUPPORTED' | 'MEDIA_TOO_LARGE';
  errorMessage: string;
}

const REMEMBER_MS = 5 * 60 * 1000;
const MAX_REDIRECTS = 3;

export class MediaProbe {
  private readonly remembered = new Map<string, { refusal: MediaRefusal | undefined; until: number }>();
  private readonly resolver: Resolver;

  constructor(
    private readonly options: {
      guarded: boolean;
      resolver?: Resolver;
      timeoutMs?: number;
      now?: () => number;
    },
  ) {
    this.resolver = options.resolver ?? systemResolver;
  }

  /** The first URL's refusal, or undefined when all may go; throws when one could not be asked now. */
  async refusal(urls: readonly string[]): Promise<MediaRefusal | undefined> {
    for (const url of urls) {
      const now = this.options.now?.() ?? Date.now();
      let entry = this.remembered.get(url);
      if (!entry || entry.until < now) {
        entry = { refusal: await this.probe(url), until: now + REMEMBER_MS };
        this.remembered.set(url, entry);
      }
      if (entry.refusal) return entry.refusal;
    }
    return undefined;
  }

  private async probe(url: string): Promise<MediaRefusal | undefined> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return { errorCode: 'MEDIA_URL_FORBIDDEN', errorMessage: `Media URL is not a URL: ${url}` };
    }
    for (let redirects = 0; ; redirects++) {
      const allowed = this.options.guarded ? ['https:'] : ['https:', 'http:'];
      if (!allowed.includes(target.protocol)) {
        return { errorCode: 'MEDIA_URL_FORBIDDEN', errorMessage: `Media URLs must be https: ${target.href}` };
      }
      let lookup: ReturnType<typeof pinnedLookup> | undefined;
      if (this.options.guarded) {
        try {
          lookup = pinnedLookup(await checkHost(target.hostname, this.resolver));
        } catch (error) {
          if (error instanceof ForbiddenAddressError) {
            return { errorCode: 'MEDIA_URL_FORBIDDEN', errorMessage: `Media URL refused: ${error.message}` };
          }
          throw error; // not resolvable right now: tried again later
        }
      }
      let answer = await this.ask(target, 'HEAD', lookup);
      if (answer.status === 405 || answer.status === 501) answer = await this.ask(target, 'GET', lookup);
      if (answer.status >= 300 && answer.status < 400 && answer.location) {
        if (redirects >= MAX_REDIRECTS) {
          return {
            errorCode: 'MEDIA_URL_UNREACHABLE',
            errorMessage: `Media URL redirects too often: ${url}`,
          };
        }
        target = new URL(answer.location, target);
        continue;
      }
      if (answer.status >= 500) throw new Error(`media host answered ${answer.status}: ${target.href}`);
      if (answer.status < 200 || answer.status >= 300) {
        return {
          errorCode: 'MEDIA_URL_UNREACHABLE',
          errorMessage: `Media URL answered ${answer.status}: ${url}`,
        };
      }
      const type = answer.contentType?.split(';')[0]?.trim().toLowerCase();
      if (type && !(ALLOWED_MEDIA_TYPES as readonly string[]).includes(type)) {
        return {
          errorCode: 'MEDIA_TYPE_UNSUPPORTED',
          errorMessage: `Media must be ${ALLOWED_MEDIA_TYPES.join(', ')}; ${url} is ${type}`,
        };
      }
      if (answer.length !== undefined && answer.length > MAXIMUM_UPLOAD_BYTES) {
        return {
          errorCode: 'MEDIA_TOO_LARGE',
          errorMessage: `Media may be at most ${MAXIMUM_UPLOAD_BYTES} bytes; ${url} is ${answer.length}`,
        };
      }
      return undefined;
    }
  }

  /** The answer's status and headers; the body is never read. */
  private ask(
    target: URL,
    method: 'HEAD' | 'GET',
    lookup: ReturnType<typeof pinnedLookup> | undefined,
  ): Promise<{ status: number; contentType?: string; length?: number; location?: string }> {
    return new Promise((resolve, reject) => {
      const request = (target.protocol === 'https:' ? https : http).request(
        target,
        { method, ...(lookup && { lookup: lookup as never }), timeout: this.options.timeoutMs ?? 10_000 },
        (response) => {
          const length = Number(response.headers['content-length']);
          resolve({
            status: response.statusCode ?? 0,
            contentType: response.headers['content-type'],
            length: Number.isFinite(length) ? length : undefined,
            location: response.headers.location,
          });
          response.destroy();
        },
      );
      request.on('timeout', () => request.destroy(new Error(`no answer from ${target.host}`)));
      request.on('error', reject);
      request.end();
    });
  }
}
