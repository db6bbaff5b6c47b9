// The OpenTelemetry SDK of a process that traces (index.ts says what is traced and why it is loaded only then).
import { createRequire } from 'node:module';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK, tracing } from '@opentelemetry/sdk-node';

export function startSdk(options: { endpoint: string; serviceName?: string }): {
  fastify: FastifyOtelInstrumentation;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
} {
  const exporter = new OTLPTraceExporter({ url: `${options.endpoint.replace(/\/+$/, '')}/v1/traces` });
  const processor = new tracing.BatchSpanProcessor(exporter);
  const fastify = new FastifyOtelInstrumentation({ registerOnInitialization: false });
  const sdk = new NodeSDK({
    serviceName: options.serviceName ?? 'commsplatform',
    spanProcessors: [processor],
    instrumentations: [
      // The server side of a request is the Fastify plugin's span; this instruments outgoing calls.
      new HttpInstrumentation({ disableIncomingRequestInstrumentation: true }),
      new PgInstrumentation(),
      fastify,
    ],
  });
  sdk.start();
  // See index.ts's header: the in-place patches of the modules the app imports as ESM.
  const require = createRequire(import.meta.url);
  require('node:http');
  require('node:https');
  require('pg');
  return { fastify, flush: () => processor.forceFlush(), shutdown: () => sdk.shutdown() };
}
