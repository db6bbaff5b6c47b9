// One deadline per delivery attempt (issue 11, finding: double POST). An attempt that outlived the job's lease
// could be taken up by a second worker and POSTed again, so the whole exchange (resolving the host, connecting,
// sending, reading the answer, the one resend) runs under a single deadline well inside the lease. Each case
// ends as a failure with a timeout error, and a delivery whose attempt timed out is retried on the schedule.
// Deadlines here are short (the transport's `timeoutMs`); the tests assert outcomes, never durations.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { LEASE_SECONDS, WebhookDelivery } from '../src/modules/webhooks/delivery.ts';
import { DELIVER_QUEUE } from '../src/modules/webhooks/service.ts';
import { WebhookTransport } from '../src/modules/webhooks/transport.ts';
import { JobQueue } from '../src/platform/jobs.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { verifyWithBoth } from './helpers/receiver.ts';

const DEADLINE_MS = 300;
// Without a deadline these would wait forever: fail instead.
const BOUNDED = { timeout: 20_000 };

/** A server that holds every connection it accepts and never says a word. */
async function silentServer() {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** An HTTP server whose handler the test decides; every connection is closed at the end. */
async function httpServer(handler: http.RequestListener) {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('webhook transport deadline', () => {
  test('a resolver that never answers: the attempt fails with a timeout', BOUNDED, async () => {
    let lookups = 0;
    const transport = new WebhookTransport({
      guarded: true,
      timeoutMs: DEADLINE_MS,
      resolver: () => {
        lookups++;
        return new Promise(() => {});
      },
    });
    const result = await transport.post('https://hooks.example.com/x', {}, '{}');
    assert.equal(lookups, 1);
    assert.equal(result.statusCode, null);
    assert.equal(result.responseExcerpt, null);
    assert.match(result.error!, /^Timed out after 0\.3 s resolving hooks\.example\.com$/);
  });

  test('a receiver that accepts the connection and never answers: a timeout', BOUNDED, async () => {
    const silent = await silentServer();
    try {
      const transport = new WebhookTransport({ guarded: false, timeoutMs: DEADLINE_MS });
      const result = await transport.post(`http://127.0.0.1:${silent.port}/hook`, {}, '{}');
      assert.equal(silent.sockets.size, 1, 'the connection was made');
      assert.equal(result.statusCode, null);
      assert.match(result.error!, /^Timed out after 0\.3 s waiting for the answer$/);
    } finally {
      await silent.close();
    }
  });

  test(
    'a receiver that answers 200 but never finishes its body: a timeout, not a success',
    BOUNDED,
    async () => {
      const trickle = await httpServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.write('o'); // and nothing more
      });
      try {
        const transport = new WebhookTransport({ guarded: false, timeoutMs: DEADLINE_MS });
        const result = await transport.post(`${trickle.url}/hook`, {}, '{}');
        assert.equal(result.statusCode, null);
        assert.match(result.error!, /^Timed out after 0\.3 s reading the answer$/);
      } finally {
        await trickle.close();
      }
    },
  );

  test('a prompt receiver is unaffected by the deadline', BOUNDED, async () => {
    const prompt = await httpServer((_request, response) => response.writeHead(204).end());
    try {
      const transport = new WebhookTransport({ guarded: false, timeoutMs: DEADLINE_MS });
      for (let i = 0; i < 3; i++) {
        const result = await transport.post(`${prompt.url}/hook`, {}, '{}');
        assert.equal(result.statusCode, 204);
        assert.equal(result.error, null);
      }
    } finally {
      await prompt.close();
    }
  });

  test('a deadline that is not well inside the job lease is refused at start', () => {
    const build = (timeoutMs: number) =>
      new WebhookDelivery({
        db: undefined as never,
        clock: undefined as never,
        jobs: undefined as never,
        events: undefined as never,
        service: undefined as never,
        transport: new WebhookTransport({ guarded: false, timeoutMs }),
        concurrency: 16,
      });
    assert.throws(() => build(LEASE_SECONDS * 1000), /under half the job lease/);
    assert.doesNotThrow(() => build(15_000));
  });
});

describe('a delivery whose attempt runs out of time', () => {
  let t: TestApp;
  let token: string;
  let queue: JobQueue;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
    token = await signIn(t, await createUser(t, { role: 'owner' }));
    // The app's delivery queue, worked by a worker whose transport has a short deadline. The app's own queue
    // is never drained here.
    const delivery = new WebhookDelivery({
      db: t.ctx.db,
      clock: t.ctx.clock,
      jobs: t.ctx.jobs,
      events: t.ctx.events,
      service: () => t.ctx.webhooks,
      transport: new WebhookTransport({
        guarded: true,
        timeoutMs: DEADLINE_MS,
        resolver: () => new Promise(() => {}),
      }),
      concurrency: t.ctx.config.webhookConcurrency,
    });
    queue = new JobQueue(t.ctx.db, t.ctx.clock, { workerId: 'short-deadline' });
    queue.register(DELIVER_QUEUE, delivery.queue.handler, delivery.queue.options);
  });
  after(() => t.close());

  async function hookTo(url: string) {
    const res = await t.request('POST', '/api/webhooks', {
      token,
      body: { url: 'http://127.0.0.1/placeholder', events: ['webhook.test'] },
    });
    assert.equal(res.status, 201, res.text);
    // Set directly: outside production the API takes only http(s) URLs it does not resolve, and the guarded
    // worker here wants https with a name to resolve.
    await t.ctx.db.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [res.body.data.id, url]);
    return res.body.data as { id: string; secret: string };
  }

  async function onlyDelivery(endpointId: string) {
    const res = await t.request('GET', `/api/webhooks/${endpointId}/deliveries`, { token });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.length, 1);
    return res.body.data[0];
  }

  async function jobOf(deliveryId: string) {
    const [row] = await t.ctx.db.query<{ status: string; run_at: Date }>(
      `SELECT status, run_at FROM jobs WHERE queue = $1 AND payload->>'deliveryId' = $2`,
      [DELIVER_QUEUE, deliveryId],
    );
    return row!;
  }

  test('DNS that never answers: a timeout failure, retried on the schedule', BOUNDED, async () => {
    const hook = await hookTo('https://hooks.example.com/never-resolves');
    const sent = await t.request('POST', `/api/webhooks/${hook.id}/test`, { token });
    assert.equal(sent.status, 202, sent.text);
    assert.equal(await queue.drain(), 1);

    const delivery = await onlyDelivery(hook.id);
    assert.equal(delivery.status, 'pending');
    assert.equal(delivery.attempts, 1);
    assert.equal(delivery.lastStatusCode, null);
    assert.match(delivery.lastError, /^Timed out after 0\.3 s resolving hooks\.example\.com$/);
    const wait = Date.parse(delivery.nextAttemptAt) - Date.parse(delivery.lastAttemptAt);
    assert.ok(wait >= 4500 && wait <= 5500, `the second attempt is 5 s ± 10% later, got ${wait} ms`);
    const job = await jobOf(delivery.id);
    assert.equal(job.status, 'pending');
    assert.equal(new Date(job.run_at).toISOString(), delivery.nextAttemptAt);

    t.ctx.clock.advance(6);
    assert.equal(await queue.drain(), 1);
    const retried = await onlyDelivery(hook.id);
    assert.equal(retried.attempts, 2);
    assert.match(retried.attemptLog[1].error, /^Timed out/);
    // Done with it: its later retries are no business of the next test's worker.
    await t.ctx.db.query(`DELETE FROM jobs WHERE payload->>'deliveryId' = $1`, [delivery.id]);
  });

  test('a receiver that never answers: a timeout failure, then delivered on the retry', BOUNDED, async () => {
    const silent = await silentServer();
    let answering: Awaited<ReturnType<typeof httpServer>> | undefined;
    try {
      // The guarded worker connects to what its resolver gives; here, the loopback address of the test
      // servers is not allowed, so this delivery goes through an unguarded worker of its own.
      const delivery = new WebhookDelivery({
        db: t.ctx.db,
        clock: t.ctx.clock,
        jobs: t.ctx.jobs,
        events: t.ctx.events,
        service: () => t.ctx.webhooks,
        transport: new WebhookTransport({ guarded: false, timeoutMs: DEADLINE_MS }),
        concurrency: t.ctx.config.webhookConcurrency,
      });
      const worker = new JobQueue(t.ctx.db, t.ctx.clock, { workerId: 'short-deadline-open' });
      worker.register(DELIVER_QUEUE, delivery.queue.handler, delivery.queue.options);

      const hook = await hookTo(`http://127.0.0.1:${silent.port}/hook`);
      const sent = await t.request('POST', `/api/webhooks/${hook.id}/test`, { token });
      assert.equal(sent.status, 202, sent.text);
      assert.equal(await worker.drain(), 1);
      assert.equal(silent.sockets.size, 1, 'the receiver took the connection');

      const first = await onlyDelivery(hook.id);
      assert.equal(first.status, 'pending');
      assert.equal(first.attempts, 1);
      assert.equal(first.lastStatusCode, null);
      assert.match(first.lastError, /^Timed out after 0\.3 s waiting for the answer$/);
      const wait = Date.parse(first.nextAttemptAt) - Date.parse(first.lastAttemptAt);
      assert.ok(wait >= 4500 && wait <= 5500, `the second attempt is 5 s ± 10% later, got ${wait} ms`);

      // The receiver comes back and answers; the retry is made on the schedule and succeeds.
      const received: http.IncomingHttpHeaders[] = [];
      const bodies: string[] = [];
      answering = await httpServer((request, response) => {
        const chunks: Buffer[] = [];
        request.on('data', (chunk: Buffer) => chunks.push(chunk));
        request.on('end', () => {
          received.push(request.headers);
          bodies.push(Buffer.concat(chunks).toString('utf8'));
          response.writeHead(204).end();
        });
      });
      await t.ctx.db.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [
        hook.id,
        `${answering.url}/hook`,
      ]);
      t.ctx.clock.advance(3);
      assert.equal(await worker.drain(), 0, 'not before its time');
      assert.equal(received.length, 0);
      t.ctx.clock.advance(3);
      assert.equal(await worker.drain(), 1);
      assert.equal(received.length, 1);
      verifyWithBoth(hook.secret, {
        path: '/hook',
        headers: received[0] as Record<string, string>,
        body: bodies[0]!,
        at: t.ctx.clock.nowMs(),
        realAt: performance.now(),
      });
      const done = await onlyDelivery(hook.id);
      assert.equal(done.status, 'succeeded');
      assert.equal(done.attempts, 2);
      assert.deepEqual(
        done.attemptLog.map((attempt: { statusCode: number | null }) => attempt.statusCode),
        [null, 204],
      );
    } finally {
      await silent.close();
      await answering?.close();
    }
  });
});
