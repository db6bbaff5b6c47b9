// Traces (CONTRACT section 15, docs/operations.md "Traces") received by a local OTLP/HTTP collector: an HTTP
// server of this test that takes the exporter's JSON at /v1/traces. One API send, made under a caller's own
// traceparent, gives one trace: the request's span (the caller's span its parent), the message's dispatch
// job, the event's fan-out and the webhook delivery job, each the child of the work that enqueued it; the
// webhook's POST carries that trace on to the receiver. (Without tracing, jobs store no traceparent:
// operations-metrics.test.ts, whose process does not trace.)
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { startTelemetry, type Telemetry } from '../src/platform/telemetry/index.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP collector: every span of every JSON export it receives. */
async function startCollector(): Promise<{ url: string; spans: OtlpSpan[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      assert.equal(request.method, 'POST');
      assert.equal(request.url, '/v1/traces');
      assert.match(request.headers['content-type'] ?? '', /^application\/json/);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const resource of body.resourceSpans ?? [])
        for (const scope of resource.scopeSpans ?? []) spans.push(...scope.spans);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const SPAN_KIND = { SERVER: 2, CONSUMER: 5 };
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

let collector: Awaited<ReturnType<typeof startCollector>>;
let telemetry: Telemetry;
let t: TestApp;
let receiver: Receiver;
before(async () => {
  collector = await startCollector();
  // Before the app is built, as src/serve.ts does.
  telemetry = await startTelemetry({ endpoint: collector.url, serviceName: 'commsplatform-test' });
  t = await startTestApp();
  receiver = await startReceiver(() => t.ctx.clock.nowMs());
});
after(async () => {
  await receiver.close();
  await t.close();
  await telemetry.shutdown();
  await collector.close();
});

test('one trace spans the API send, its dispatch job, the fan-out and the webhook delivery', async () => {
  const org = await sender(t);
  const owner = await createUser(t, { role: 'owner', organizationIds: [org.id] });
  const token = await signIn(t, owner);
  const hook = await t.request('POST', '/api/webhooks', {
    token,
    body: { url: `${receiver.url}/hooks`, events: ['message.sent'] },
  });
  assert.equal(hook.status, 201, hook.text);

  const sent = await t.request('POST', '/api/v2/messages/send', {
    apiKey: org.key,
    headers: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
    body: { to: '+12025550177', message: 'Traced all the way' },
  });
  assert.equal(sent.status, 202, sent.text);
  const [job] = await t.ctx.db.query<{ traceparent: string | null }>(
    `SELECT traceparent FROM jobs WHERE queue = 'messages.dispatch' AND payload->>'messageId' = $1`,
    [sent.body.data.id],
  );
  assert.match(job?.traceparent ?? '', new RegExp(`^00-${CALLER_TRACE}-[0-9a-f]{16}-01$`));
  await t.ctx.jobs.drain();
  assert.equal(receiver.received.length, 1);
  await telemetry.flush();

  const trace = collector.spans.filter((span) => span.traceId === CALLER_TRACE);
  const byId = new Map(trace.map((span) => [span.spanId, span]));
  const ancestry = (span: OtlpSpan): OtlpSpan[] => {
    const chain: OtlpSpan[] = [];
    for (
      let at = span.parentSpanId && byId.get(span.parentSpanId);
      at;
      at = at.parentSpanId && byId.get(at.parentSpanId)
    )
      chain.push(at);
    return chain;
  };
  const one = (name: string, kind: number) => {
    const found = trace.filter((span) => span.name === name && span.kind === kind);
    assert.equal(found.length, 1, `one ${name} span in the trace: ${trace.map((s) => s.name).join(', ')}`);
    return found[0]!;
  };

  // The request: a SERVER span whose parent is the caller's span.
  const requestSpan = trace.find(
    (span) =>
      span.kind === SPAN_KIND.SERVER &&
      span.attributes?.some((a) => a.key === 'http.route' && a.value.stringValue === '/api/v2/messages/send'),
  );
  assert.ok(requestSpan, `a SERVER span of the send: ${trace.map((s) => s.name).join(', ')}`);
  assert.equal(requestSpan.parentSpanId, CALLER_SPAN);

  const dispatch = one('job messages.dispatch', SPAN_KIND.CONSUMER);
  const fanOut = one('job events.dispatch', SPAN_KIND.CONSUMER);
  const delivery = one('job webhooks.deliver', SPAN_KIND.CONSUMER);
  assert.ok(ancestry(dispatch).includes(requestSpan), 'the dispatch job descends from the request');
  assert.equal(fanOut.parentSpanId, dispatch.spanId, 'the fan-out is the child of the dispatch that sent it');
  assert.equal(delivery.parentSpanId, fanOut.spanId, 'the delivery is the child of the fan-out');
  assert.equal(ancestry(delivery).at(-1), requestSpan, "the whole chain's root is the request");

  // The receiver's trace continues from the delivery: its traceparent names a span under the delivery job.
  const delivered = receiver.received[0]!.headers.traceparent ?? '';
  const [, traceId, parentId, flags] =
    /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(delivered) ?? [];
  assert.equal(traceId, CALLER_TRACE, `the webhook carries the trace: ${delivered}`);
  assert.equal(flags, '01');
  const outgoing = byId.get(parentId!);
  assert.ok(outgoing, 'the parent named to the receiver is a span of the trace');
  assert.ok(outgoing === delivery || ancestry(outgoing).includes(delivery), 'under the delivery job');
});
