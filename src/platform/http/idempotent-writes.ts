// Idempotency-Key on every write of an interface that asks for it (the developer API), so no route can forget
// it: a POST, PUT, PATCH or DELETE carrying the header reserves the key before its handler runs, and its
// answer is recorded when the handler has finished. A retry of the same request within 24 hours is answered
// the recorded status, headers and body again with `Idempotent-Replayed: true`, and the handler does not run;
// the same key on another request (method, path or body) is a 422 IDEMPOTENCY_KEY_REUSED; a twin arriving
// while the first still runs is a 409 IDEMPOTENCY_KEY_IN_USE with Retry-After. Only answers below 400 are
// recorded: a refusal changed nothing (house rule), so its key is released and a retry runs afresh.
//
// The request hash covers the method, the path with its query and the body. A JSON body is hashed as parsed
// (object keys in any order); a multipart upload is streamed to its handler unparsed, so its bytes are hashed
// as the handler reads them (with the random multipart boundary left out, so a client re-encoding the same
// form matches) and the hash is settled when the answer is recorded. Routes whose write stores the key in
// its own transaction (`config.idempotency: 'transaction'`, messages.send) are left to that. The storage
// and its rules are platform/idempotency.ts; docs/idempotency.md says why this shape.
import { createHash, type Hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyContextConfig, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  hashRequest,
  IDEMPOTENCY_LOCK_MS,
  type Idempotency,
  type KeyedRequest,
  type RecordedAnswer,
} from '../idempotency.ts';
import type { App } from './app-type.ts';

/** The header's rule, the same wherever it is read: 1–255 printable ASCII characters. */
export const IdempotencyKeyHeader = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x20-\\x7E]+$',
  description:
    'Makes a retry safe: the same key and request within 24 hours answer the first answer again ' +
    '(`Idempotent-Replayed: true`) without acting twice; the same key on another request is 422 ' +
    'IDEMPOTENCY_KEY_REUSED; while the first is still running, 409 IDEMPOTENCY_KEY_IN_USE. 1–255 printable ' +
    'ASCII characters, e.g. a UUID.',
});

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** The headers of an answer that belong to it (not to the request that carried it: rate limits, version). */
const RECORDED_HEADERS = ['content-type', 'location'];
const HEADER = 'idempotency-key';
/** How long a request's reservation is kept alive at most (the longest import takes minutes). */
const MAX_RESERVATION_MS = 60 * 60 * 1000;

/** Whether a route takes the key at the request level: every write, unless its service stores the key. */
export function takesIdempotencyKey(
  method: string | string[],
  config: Pick<FastifyContextConfig, 'idempotency'>,
): boolean {
  const methods = Array.isArray(method) ? method : [method];
  return methods.every((each) => WRITE_METHODS.has(each.toUpperCase())) && config.idempotency === undefined;
}

/** A route's headers schema with the Idempotency-Key added (validated, and named in the OpenAPI document). */
export function withIdempotencyKeyHeader(headers: unknown): Record<string, unknown> {
  const schema = (headers ?? { type: 'object' }) as Record<string, unknown> & {
    properties?: Record<string, unknown>;
  };
  if (schema.properties?.[HEADER]) return schema;
  return { ...schema, properties: { ...schema.properties, [HEADER]: IdempotencyKeyHeader } };
}

interface Identity {
  /** The request's hash as far as it is known before the handler runs. */
  hash: string;
  /** The hash once a streamed body has been read whole (multipart uploads only). */
  whole?: () => Promise<string>;
}

interface Running {
  keyed: KeyedRequest;
  token: string;
  identity: Identity;
  heartbeat: NodeJS.Timeout;
}

/** Adds the request-level idempotency to every route of `scope` (before its routes are registered). */
export function addIdempotentWrites(scope: App, idempotency: Idempotency): void {
  const running = new WeakMap<FastifyRequest, Running>();

  // After the guard and validation: a refused or malformed request never reserves a key.
  scope.addHook('preHandler', async (request, reply) => {
    const key = request.headers[HEADER];
    const config = request.routeOptions.config;
    if (typeof key !== 'string' || !request.caller || !takesIdempotencyKey(request.method, config)) return;
    const keyed: KeyedRequest = {
      organizationId: request.caller.organizationId,
      operation:
        (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId ??
        `${request.method} ${request.routeOptions.url}`,
      key,
    };
    const identity = identify(request);
    const reservation = await idempotency.reserve(keyed, identity.hash, identity.whole);
    if (!reservation.reserved) {
      const { status, headers, body } = reservation.answer;
      return reply
        .code(status)
        .headers({ ...headers, 'idempotent-replayed': 'true' })
        .send(body);
    }
    // A long request (an import of minutes) keeps its reservation from looking abandoned; one that has not
    // answered in an hour is stuck, and its key frees itself a minute later.
    const started = Date.now();
    const heartbeat = setInterval(() => {
      if (Date.now() - started > MAX_RESERVATION_MS) {
        clearInterval(heartbeat);
        return;
      }
      idempotency.refresh(keyed, reservation.token).catch((error: unknown) => {
        request.log.warn({ err: error }, 'idempotency key reservation not refreshed');
      });
    }, IDEMPOTENCY_LOCK_MS / 4);
    heartbeat.unref();
    running.set(request, { keyed, token: reservation.token, identity, heartbeat });
  });

  // Before the answer leaves: a retry arriving the moment the client has it finds it recorded.
  scope.addHook('onSend', async (request, reply, payload) => {
    const run = running.get(request);
    if (!run) return payload;
    running.delete(request);
    clearInterval(run.heartbeat);
    const body = payload === null || payload === undefined ? '' : payload;
    try {
      if (reply.statusCode >= 400 || typeof body !== 'string') {
        await idempotency.release(run.keyed, run.token);
        return payload;
      }
      const answer: RecordedAnswer = { status: reply.statusCode, headers: {}, body };
      for (const name of RECORDED_HEADERS) {
        const value = reply.getHeader(name);
        if (value !== undefined) answer.headers[name] = String(value);
      }
      const hash = run.identity.whole ? await run.identity.whole() : run.identity.hash;
      if (!(await idempotency.complete(run.keyed, run.token, answer, hash))) {
        request.log.warn(
          { operation: run.keyed.operation },
          'idempotency key was taken over before its answer',
        );
      }
    } catch (error) {
      // The write is done and its answer goes out; unrecorded, the key frees itself after IDEMPOTENCY_LOCK_MS.
      request.log.error({ err: error, operation: run.keyed.operation }, 'idempotent answer not recorded');
    }
    return payload;
  });

  // A request that ended without an answer of its own (hijacked, or its connection gone before onSend).
  scope.addHook('onResponse', async (request) => {
    const run = running.get(request);
    if (run) clearInterval(run.heartbeat);
  });
}

function identify(request: FastifyRequest): Identity {
  const target = { method: request.method, url: request.url };
  const contentType = request.headers['content-type'] ?? '';
  if (!/^multipart\//i.test(contentType))
    return { hash: hashRequest({ ...target, body: request.body ?? null }) };
  const body = tapBody(request.raw, boundaryOf(contentType));
  return {
    hash: hashRequest({ ...target, body: 'multipart' }),
    whole: async () => hashRequest({ ...target, multipart: await body.digest() }),
  };
}

function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/**
 * Hashes a request body as whoever reads it reads it. The stream is paused first, so the listener does not
 * start the flow before the handler reads (a 'data' listener sees every chunk, whoever consumes it); `digest`
 * reads what the handler left and settles the hash once the body has ended.
 */
function tapBody(raw: IncomingMessage, boundary: string | undefined): { digest(): Promise<string> } {
  const hash = new BoundaryBlindHash(boundary);
  const ended = new Promise<void>((resolve) => {
    raw.once('end', resolve);
    raw.once('close', resolve);
    raw.once('error', () => resolve());
  });
  raw.pause();
  raw.on('data', (chunk: Buffer) => hash.update(chunk));
  let digest: Promise<string> | undefined;
  return {
    digest() {
      digest ??= (async () => {
        if (!raw.readableEnded) raw.resume();
        await ended;
        return hash.digest();
      })();
      return digest;
    },
  };
}

/**
 * SHA-256 of a stream with each occurrence of the multipart boundary replaced by a fixed marker: the
 * boundary is random per encoding, the rest is the form. The last boundary-length bytes wait for the next
 * chunk, so a boundary split across chunks is still found.
 */
class BoundaryBlindHash {
  private readonly hash: Hash = createHash('sha256');
  private readonly boundary: Buffer | undefined;
  private carry = Buffer.alloc(0);

  constructor(boundary: string | undefined) {
    this.boundary = boundary ? Buffer.from(boundary, 'latin1') : undefined;
  }

  update(chunk: Buffer): void {
    if (!this.boundary) {
      this.hash.update(chunk);
      return;
    }
    let data = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    for (let at = data.indexOf(this.boundary); at !== -1; at = data.indexOf(this.boundary)) {
      this.hash.update(data.subarray(0, at));
      this.hash.update('\u0000boundary\u0000');
      data = data.subarray(at + this.boundary.length);
    }
    const kept = Math.min(data.length, this.boundary.length - 1);
    this.hash.update(data.subarray(0, data.length - kept));
    this.carry = Buffer.from(data.subarray(data.length - kept));
  }

  digest(): string {
    this.hash.update(this.carry);
    return this.hash.digest('base64url');
  }
}
