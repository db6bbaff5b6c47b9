// Traces (OpenTelemetry, OTLP over HTTP), on when OTEL_EXPORTER_OTLP_ENDPOINT is set and off otherwise: every
// helper here first asks whether tracing was started and does nothing more when it was not, so a server that
// does not trace pays one boolean test per job and per webhook (docs/operations.md "Traces").
// What is traced, and how the spans hang together:
//   (the SDK and its instrumentations are in sdk.ts, loaded only when tracing is started)
//   requests   @fastify/otel, registered as a plugin of the app (no load-time hook needed): a SERVER span per
//              request, the child of the caller's `traceparent` when it sent one, with its route as name.
//   outgoing   node's http client and PostgreSQL's `pg` by their OpenTelemetry instrumentations. Those patch the
//              modules' exports in place when the modules are required after the SDK started; the app is ESM,
//              whose imports the require hook never sees, so `startTelemetry` requires them once itself: the
//              patch then holds for every importer, whenever it imported them. (PGlite, the embedded engine,
//              is not `pg`: its statements are not traced.)
//   jobs       the enqueuing context's `traceparent` is stored with the job (jobs.traceparent); the job's run is
//              a CONSUMER span, the child of that context, so a request's trace follows it into the jobs it
//              enqueued, and into the jobs those enqueue in turn (a send, its dispatch, the event's fan-out,
//              the webhook delivery), whichever process runs them.
//   webhooks   the delivery's POST carries the `traceparent` of the delivery job's span (injectTraceHeaders).
import type { FastifyOtelInstrumentation } from '@fastify/otel';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

export interface Telemetry {
  /** Sends every span ended so far. */
  flush(): Promise<void>;
  /** Sends what is left and stops tracing (the process is ending). */
  shutdown(): Promise<void>;
}

let started: { fastify: FastifyOtelInstrumentation } | undefined;

/** True once `startTelemetry` ran in this process. */
export function tracingEnabled(): boolean {
  return started !== undefined;
}

/**
 * Starts tracing for this process: spans go in batches to `${endpoint}/v1/traces` as OTLP/HTTP JSON. Call it
 * before the app is built. Once per process (the SDK is process-wide): a second call is refused. The SDK is
 * loaded here, not with this module: it is some 6 MB of JavaScript (every exporter of sdk-node), which a server
 * that does not trace should not compile at every start (docs/performance.md).
 */
export async function startTelemetry(options: {
  endpoint: string;
  serviceName?: string;
}): Promise<Telemetry> {
  if (started) throw new Error('Tracing is already started in this process');
  const { startSdk } = await import('./sdk.ts');
  const sdk = startSdk(options);
  started = { fastify: sdk.fastify };
  return {
    flush: sdk.flush,
    shutdown: async () => {
      await sdk.shutdown();
      started = undefined;
    },
  };
}

/** The Fastify plugin that makes a span of each request, or undefined when tracing is off. */
export function requestTracing(): ReturnType<FastifyOtelInstrumentation['plugin']> | undefined {
  return started?.fastify.plugin();
}

/** The W3C `traceparent` of the active span, to store with work done later; null when not tracing. */
export function currentTraceparent(): string | null {
  if (!started) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** Adds `traceparent` (and `tracestate`) of the active span to outgoing headers; nothing when not tracing. */
export function injectTraceHeaders(headers: Record<string, string>): void {
  if (started) propagation.inject(context.active(), headers);
}

/**
 * Runs a job's work in a CONSUMER span, the child of the context that enqueued it (`traceparent`), so that what
 * the work does (statements, requests, jobs it enqueues) belongs to that trace. Without tracing, just runs it.
 * `failed` tells an error from a planned retry, which is not one.
 */
export function inJobSpan<T>(
  job: { id: string; queue: string; attempts: number; traceparent?: string | null },
  work: () => Promise<T>,
  failed: (error: unknown) => boolean,
): Promise<T> {
  if (!started) return work();
  const parent = job.traceparent
    ? propagation.extract(ROOT_CONTEXT, { traceparent: job.traceparent })
    : ROOT_CONTEXT;
  return trace.getTracer('commsplatform.jobs').startActiveSpan(
    `job ${job.queue}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'commsplatform.jobs',
        'messaging.destination.name': job.queue,
        'messaging.message.id': job.id,
        'job.attempt': job.attempts,
      },
    },
    parent,
    async (span: Span) => {
      try {
        return await work();
      } catch (error) {
        if (failed(error)) {
          span.recordException(error instanceof Error ? error : String(error));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        throw error;
      } finally {
        span.end();
      }
    },
  );
}
