// One slow receiver cannot starve the others (issue 12). An endpoint whose receiver holds every request open
// has many deliveries waiting, more than the worker has slots, queued ahead of a few for another endpoint of
// the same organization. The started worker (the real loop, not drain) delivers all of the second endpoint's while the slow
// receiver never has more than ENDPOINT_CONCURRENCY requests open at once (counted at the receiver), and,
// once it answers again, its backlog is delivered too, still within that bound. Nothing here asserts a
// duration: waits are bounded loops on the outcome.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { ContactOptedIn, ContactOptedOut } from '../src/modules/contacts/events.ts';
import { ENDPOINT_CONCURRENCY } from '../src/modules/webhooks/delivery.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createUser } from './helpers/portal.ts';

async function waitFor(condition: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A receiver that holds each request open until `release()`, counting those open now and at most. */
async function startHangingReceiver() {
  const held: http.ServerResponse[] = [];
  const state = { open: 0, mostOpen: 0, received: 0, released: false };
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      state.received++;
      if (state.released) {
        response.writeHead(204).end();
        return;
      }
      state.open++;
      state.mostOpen = Math.max(state.mostOpen, state.open);
      response.on('close', () => state.open--);
      held.push(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    state,
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/slow`,
    release() {
      state.released = true;
      for (const response of held.splice(0)) response.writeHead(204).end();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of held.splice(0)) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('webhook fairness', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { workerConcurrency: 8 } });
  });
  after(() => t.close());

  test('a receiver that hangs holds at most ENDPOINT_CONCURRENCY attempts; the other endpoint is delivered', async () => {
    const slow = await startHangingReceiver();
    let fastReceived = 0;
    const fast = http.createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        fastReceived++;
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => fast.listen(0, '127.0.0.1', resolve));
    try {
      const user = await createUser(t, { role: 'owner' });
      const organizationId = user.organizationId;
      const fastPort = (fast.address() as { port: number }).port;
      const slowHook = await t.ctx.webhooks.create(organizationId, {
        url: slow.url,
        events: ['contact.opted_out'],
      });
      const fastHook = await t.ctx.webhooks.create(organizationId, {
        url: `http://127.0.0.1:${fastPort}/fast`,
        events: ['contact.opted_in'],
      });
      const phone = (n: number) => `+1202555${String(n).padStart(4, '0')}`;
      const at = () => t.ctx.clock.now().toISOString();
      // 30 deliveries for the slow endpoint, more than the worker's 8 slots, queued ahead of 5 for the other.
      for (let n = 0; n < 30; n++) {
        await t.ctx.db.transaction((tx) =>
          t.ctx.events.record(tx, ContactOptedOut, {
            organizationId,
            data: { contactId: null, phone: phone(n), method: 'api', reason: null, optedOutAt: at() },
          }),
        );
      }
      for (let n = 30; n < 35; n++) {
        await t.ctx.db.transaction((tx) =>
          t.ctx.events.record(tx, ContactOptedIn, {
            organizationId,
            data: { contactId: null, phone: phone(n), method: 'manual', reason: null, optedInAt: at() },
          }),
        );
      }

      const statuses = async (endpointId: string) => {
        const rows = await t.ctx.db.query<{ status: string; count: number }>(
          'SELECT status, count(*)::int AS count FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY status',
          [endpointId],
        );
        return Object.fromEntries(rows.map((row) => [row.status, row.count]));
      };

      t.ctx.jobs.start();
      await waitFor(async () => (await statuses(fastHook.endpoint.id)).succeeded === 5);
      assert.equal(fastReceived, 5);
      // The slow endpoint used its whole room, and no more.
      await waitFor(() => slow.state.open === ENDPOINT_CONCURRENCY);
      assert.ok(
        slow.state.mostOpen <= ENDPOINT_CONCURRENCY,
        `the slow receiver had ${slow.state.mostOpen} requests open at once`,
      );
      assert.equal((await statuses(slowHook.endpoint.id)).pending, 30);

      slow.release();
      await waitFor(async () => (await statuses(slowHook.endpoint.id)).succeeded === 30);
      assert.ok(slow.state.mostOpen <= ENDPOINT_CONCURRENCY);
      assert.equal(slow.state.received, 30, 'each delivery was sent once');
    } finally {
      await t.ctx.jobs.stop();
      await slow.close();
      fast.closeAllConnections();
      await new Promise((resolve) => fast.close(resolve));
    }
  });
});
