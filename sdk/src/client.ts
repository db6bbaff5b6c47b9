// The client: one method per developer-API operation, named from its operationId (`messages.send` is
// `comms.messages.send(…)`), built from the generated operation table and typed from the generated OpenAPI
// types. Arguments: the path parameters in path order, then the body (writes) or the query (reads), then
// per-request options. Single resources resolve to the envelope's `data`; lists are ListCalls (await for a
// page, `for await` for everything); files resolve to the fetch Response, to stream.
//
// Retries: a 429 or 503 changed nothing (every refusal is atomic), so it is retried whatever the method,
// after the server's Retry-After (or RateLimit-Reset), unless that wait is longer than maxRetryWaitSeconds or
// the refusal says retrying cannot help (TRIAL_LIMIT_REACHED `lifetime`). A failure with no answer (reset,
// timeout) and a 502/504 are retried only when repeating the request is safe: reads, PUT/PATCH/DELETE, and
// writes carrying an Idempotency-Key. The client adds a key by itself to every write that honours one (every
// write of the developer API), the same on each retry of one call, so a write whose answer was lost is retried
// and acts once; a retry that finds its first attempt still running (409 IDEMPOTENCY_KEY_IN_USE) waits and
// asks again.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  apiError,
  type CommsApiError,
  CommsConnectionError,
  CommsError,
  CommsTimeoutError,
} from './errors.ts';
import type { operations } from './generated/openapi.ts';
import { OPERATIONS, type OperationId } from './generated/operations.ts';
import { ListCall, type Page } from './pagination.ts';
import { webhooks as webhookHelpers } from './webhooks.ts';

export const SDK_VERSION = '0.1.0';

export interface ClientOptions {
  /** The organization's API key (`x-api-key`). Default: the COMMS_API_KEY environment variable. */
  apiKey?: string;
  /** The server. Default: COMMS_BASE_URL, else http://localhost:3000. */
  baseUrl?: string;
  /** Pin an API version (`API-Version`); default: the organization's pinned version. */
  apiVersion?: string;
  /** Retries after the first attempt; 2 unless said. */
  maxRetries?: number;
  /** Each attempt's timeout; 60 s unless said. */
  timeoutMs?: number;
  /** A server-given wait longer than this is not waited out: the error is thrown with its retryAfter. */
  maxRetryWaitSeconds?: number;
  /** Another fetch (a proxy agent, tests). */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  maxRetries?: number;
  /** Sent as Idempotency-Key (the client makes one for every write, which all honour it, if none is given). */
  idempotencyKey?: string;
  headers?: Record<string, string>;
  /** Uploads: called as the body is sent. */
  onUploadProgress?: (sentBytes: number, totalBytes: number) => void;
}

/** A file to upload. */
export type Upload = Blob | Uint8Array | ArrayBuffer;

// Types of each operation, from the generated OpenAPI types.
type Entry<K extends OperationId> = (typeof OPERATIONS)[K];
type Operation<K extends OperationId> = operations[K];
type SuccessJson<K extends OperationId> =
  Operation<K> extends { responses: infer Responses }
    ? Responses[Extract<keyof Responses, 200 | 201 | 202>] extends {
        content: { 'application/json': infer Json };
      }
      ? Json
      : never
    : never;
type Data<K extends OperationId> = SuccessJson<K> extends { data: infer D } ? D : SuccessJson<K>;
type Item<K extends OperationId> = Data<K> extends (infer I)[] ? I : never;
type Query<K extends OperationId> =
  Operation<K> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type JsonBody<K extends OperationId> =
  Operation<K> extends {
    requestBody?: { content: { 'application/json': infer Body } };
  }
    ? Body
    : never;
type MultipartInput<K extends OperationId> =
  Operation<K> extends {
    requestBody?: { content: { 'multipart/form-data': infer Fields } };
  }
    ? Omit<Fields, 'file'> & { file: Upload; filename?: string; contentType?: string }
    : never;
type Input<K extends OperationId> =
  Entry<K> extends { body: 'json' }
    ? JsonBody<K>
    : Entry<K> extends { body: 'multipart' }
      ? MultipartInput<K>
      : Entry<K> extends { body: 'json-or-multipart' }
        ? JsonBody<K> | MultipartInput<K>
        : Entry<K> extends { query: true }
          ? Query<K>
          : never;
type Strings<T extends readonly unknown[]> = T extends readonly [unknown, ...infer Rest]
  ? [string, ...Strings<Rest>]
  : [];
type PathArgs<K extends OperationId> = Strings<Entry<K>['pathParams']>;
type InputArgs<K extends OperationId> = [Input<K>] extends [never]
  ? [options?: RequestOptions]
  : Operation<K> extends { requestBody: object }
    ? [input: Input<K>, options?: RequestOptions]
    : [input?: Input<K>, options?: RequestOptions];
type Result<K extends OperationId> =
  Entry<K> extends { response: 'binary' }
    ? Promise<Response>
    : Entry<K> extends { list: string }
      ? ListCall<Item<K>>
      : Promise<Data<K>>;
export type Method<K extends OperationId> = (...args: [...PathArgs<K>, ...InputArgs<K>]) => Result<K>;

type Split<S extends string> = S extends `${infer Head}.${infer Tail}` ? [Head, ...Split<Tail>] : [S];
type Nest<Path extends string[], Value> = Path extends [
  infer Head extends string,
  ...infer Tail extends string[],
]
  ? { [Name in Head]: Nest<Tail, Value> }
  : Value;
type UnionToIntersection<U> = (U extends unknown ? (each: U) => void : never) extends (all: infer I) => void
  ? I
  : never;
type AllResources = UnionToIntersection<{ [K in OperationId]: Nest<Split<K>, Method<K>> }[OperationId]>;
/** The resources, with `webhooks` holding both the API's webhook list and the signature helpers. */
export type Resources = Omit<AllResources, 'webhooks'> & {
  webhooks: AllResources['webhooks'] & typeof webhookHelpers;
};

type Json = Record<string, unknown>;
const SAFE_TO_REPEAT = new Set(['get', 'put', 'patch', 'delete']);

function isUpload(value: unknown): value is Upload {
  return value instanceof Blob || value instanceof Uint8Array || value instanceof ArrayBuffer;
}

// The resource methods are made in the constructor from the operation table; this merge gives them their types.
export interface Comms extends Resources {}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the constructor assigns every member the interface adds.
export class Comms {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly options: ClientOptions;
  private readonly fetch: typeof fetch;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? process.env.COMMS_API_KEY;
    if (!apiKey) throw new CommsError('An API key is needed: new Comms({ apiKey }) or COMMS_API_KEY');
    this.apiKey = apiKey;
    this.baseUrl = (options.baseUrl ?? process.env.COMMS_BASE_URL ?? 'http://localhost:3000').replace(
      /\/+$/,
      '',
    );
    this.options = options;
    this.fetch = options.fetch ?? globalThis.fetch;
    const root: Json = {};
    for (const operationId of Object.keys(OPERATIONS) as OperationId[]) {
      const names = operationId.split('.');
      let node = root;
      for (const name of names.slice(0, -1)) {
        node[name] ??= {};
        node = node[name] as Json;
      }
      node[names.at(-1)!] = (...args: unknown[]) => this.call(operationId, args);
    }
    Object.assign(root.webhooks as Json, webhookHelpers);
    Object.assign(this, root);
  }

  private call(operationId: OperationId, args: unknown[]): unknown {
    const operation = OPERATIONS[operationId];
    const pathValues = args.slice(0, operation.pathParams.length).map(String);
    const takesInput = 'body' in operation || operation.query;
    const input = takesInput ? (args[pathValues.length] as Json | undefined) : undefined;
    const options = (args[pathValues.length + (takesInput ? 1 : 0)] ?? {}) as RequestOptions;
    if ('list' in operation) {
      return new ListCall(
        async (query) => {
          const body = (await (await this.request(operationId, pathValues, query, options)).json()) as Json;
          return {
            data: body.data as unknown[],
            pagination: body.pagination as Page<unknown>['pagination'],
            nextCursor: (body.next_cursor as string | null | undefined) ?? null,
          };
        },
        { ...input },
        operation.list,
      );
    }
    return this.request(operationId, pathValues, input, options).then(async (response) => {
      if (operation.response === 'binary') return response;
      if (response.status === 204) return undefined;
      const body = (await response.json()) as Json;
      return 'data' in body ? body.data : body;
    });
  }

  /**
   * One operation, with retries; resolves to the successful Response (its body unread), rejects with a
   * CommsApiError for a refusal, CommsConnectionError/CommsTimeoutError when no answer came, or the signal's
   * reason when the caller aborted.
   */
  async request(
    operationId: OperationId,
    pathValues: string[],
    input: Json | undefined,
    options: RequestOptions = {},
  ): Promise<Response> {
    const operation = OPERATIONS[operationId];
    const values = [...pathValues];
    let url =
      this.baseUrl + operation.path.replace(/\{\w+\}/g, () => encodeURIComponent(values.shift() ?? ''));
    const headers: Record<string, string> = {
      accept: 'application/json',
      'x-api-key': this.apiKey,
      'user-agent': `commsplatform-sdk/${SDK_VERSION} node/${process.versions.node}`,
      ...(this.options.apiVersion && { 'api-version': this.options.apiVersion }),
      ...options.headers,
    };
    let body: Uint8Array | undefined;
    if ('body' in operation) {
      const multipart =
        operation.body === 'multipart' || (operation.body === 'json-or-multipart' && isUpload(input?.file));
      if (multipart) {
        const encoded = await encodeMultipart(input ?? {});
        body = encoded.bytes;
        headers['content-type'] = encoded.contentType;
      } else {
        body = new TextEncoder().encode(JSON.stringify(input ?? {}));
        headers['content-type'] = 'application/json';
      }
    } else if (operation.query && input) {
      const search = new URLSearchParams();
      for (const [name, value] of Object.entries(input)) {
        if (value === undefined || value === null) continue;
        for (const each of Array.isArray(value) ? value : [value]) search.append(name, String(each));
      }
      const query = search.toString();
      if (query) url += `?${query}`;
    }
    const idempotencyKey = options.idempotencyKey ?? (operation.idempotencyKey ? randomUUID() : undefined);
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    const safeToRepeat = SAFE_TO_REPEAT.has(operation.method) || idempotencyKey !== undefined;
    const maxRetries = options.maxRetries ?? this.options.maxRetries ?? 2;
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs ?? 60_000;

    for (let attempt = 0; ; attempt++) {
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let response: Response;
      try {
        response = await this.fetch(url, {
          method: operation.method.toUpperCase(),
          headers,
          body: body && (options.onUploadProgress ? progressStream(body, options.onUploadProgress) : body),
          signal,
          ...(body && options.onUploadProgress && { duplex: 'half' }),
        } as RequestInit);
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        const failure = timeout.aborted
          ? new CommsTimeoutError(`No answer within ${timeoutMs} ms`, { cause: error })
          : new CommsConnectionError(`Connection failed: ${describe(error)}`, { cause: error });
        // A refused connection never reached the server: repeating it is always safe.
        if (attempt < maxRetries && (safeToRepeat || refused(error))) {
          await sleep(backoffMs(attempt), undefined, { signal: options.signal });
          continue;
        }
        throw failure;
      }
      if (response.ok) return response;
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {}
      const error = apiError(response.status, response.headers, parsed);
      const wait = attempt < maxRetries ? this.retryWait(error, safeToRepeat, attempt) : undefined;
      if (wait === undefined) throw error;
      await sleep(wait, undefined, { signal: options.signal });
    }
  }

  /** Milliseconds to wait before retrying a refusal, or undefined when it is not retried. */
  private retryWait(error: CommsApiError, safeToRepeat: boolean, attempt: number): number | undefined {
    const retried =
      (error.status === 429 && !(error.code === 'TRIAL_LIMIT_REACHED' && error.reason === 'lifetime')) ||
      error.status === 503 ||
      ((error.status === 502 || error.status === 504) && safeToRepeat) ||
      // The first attempt of this call (whose answer was lost) is still running: its answer will be replayed.
      (error.status === 409 && error.code === 'IDEMPOTENCY_KEY_IN_USE');
    if (!retried) return undefined;
    if (error.retryAfter === undefined) return backoffMs(attempt);
    if (error.retryAfter > (this.options.maxRetryWaitSeconds ?? 60)) return undefined;
    // A little over the server's wait, so the window has surely moved on.
    return error.retryAfter * 1000 + 50 + Math.random() * 100;
  }
}

/** 0.5 s, 1 s, 2 s… (at most 8 s), each with up to a quarter more at random so clients do not align. */
function backoffMs(attempt: number): number {
  const base = Math.min(8000, 500 * 2 ** attempt);
  return base + Math.random() * base * 0.25;
}

function refused(error: unknown): boolean {
  return (error as { cause?: { code?: string } })?.cause?.code === 'ECONNREFUSED';
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

/** A multipart body as bytes, so that a retry can send it again. */
async function encodeMultipart(input: Json): Promise<{ bytes: Uint8Array; contentType: string }> {
  const form = new FormData();
  const { file, filename, contentType, ...fields } = input as Json & { file?: Upload };
  // Text fields before the file: a server reading the stream has them when the file arrives.
  for (const [name, value] of Object.entries(fields))
    if (value !== undefined) form.append(name, String(value));
  if (file !== undefined) {
    const blob =
      file instanceof Blob
        ? file
        : new Blob([file as BlobPart], { type: (contentType as string) ?? 'application/octet-stream' });
    form.append(
      'file',
      blob,
      (filename as string | undefined) ?? (file instanceof File ? file.name : 'upload'),
    );
  }
  const encoded = new Response(form);
  return {
    bytes: new Uint8Array(await encoded.arrayBuffer()),
    contentType: encoded.headers.get('content-type') ?? 'multipart/form-data',
  };
}

/** The body as a stream of 64 kB chunks, reporting how much has been read by the connection. */
function progressStream(
  bytes: Uint8Array,
  onProgress: (sent: number, total: number) => void,
): ReadableStream {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      const chunk = bytes.subarray(offset, offset + 64 * 1024);
      offset += chunk.length;
      controller.enqueue(chunk);
      onProgress(offset, bytes.length);
    },
  });
}
