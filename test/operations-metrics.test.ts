// GET /metrics (CONTRACT section 15, docs/operations.md) over a real socket: scraped before and after sending
// messages, delivering webhooks (one accepted, one refused by the receiver) and ending a call on the simulated
// PBX, each counter moved by exactly what was done; a phone's registration counted in SIP messages and read as a
// registration; an AI agent's turns observed once each; the exposition parses strictly; every metric the docs
// list is exposed and every exposed one is listed; the token is required (401 in Shape A), and without
// METRICS_TOKEN the route does not exist (404).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Metrics } from '../src/platform/metrics/index.ts';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { runFor, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { moved, parsePrometheus, type Scrape, seriesValue } from './helpers/prometheus.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import { sipOffice } from './helpers/sip-office.ts';
import { SipPhone } from './helpers/sip-phone.ts';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

describe('GET /metrics', () => {
  let t: TestApp;
  let receiver: Receiver;
  before(async () => {
    t = await startTestApp({ config: { metricsToken: METRICS_TOKEN } });
    receiver = await startReceiver(() => t.ctx.clock.nowMs());
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  async function scrape(): Promise<Scrape> {
    const res = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return parsePrometheus(await res.text());
  }

  test('each counter moves by exactly what was done: messages, webhook deliveries, a call', async () => {
    const org = await sender(t);
    const owner = await createUser(t, { role: 'owner', organizationIds: [org.id] });
    const token = await signIn(t, owner);
    const hook = await t.request('POST', '/api/webhooks', {
      token,
      body: { url: `${receiver.url}/hooks`, events: ['message.sent'] },
    });
    assert.equal(hook.status, 201, hook.text);
    // The first delivery is accepted, the second refused (and retried much later: not within this test).
    receiver.respond = (n) => (n === 1 ? { status: 204 } : { status: 500, body: 'down' });

    const first = await scrape();
    const sends = [];
    for (const text of ['Your table is ready', 'See you soon']) {
      sends.push(
        await t.request('POST', '/api/v2/messages/send', {
          apiKey: org.key,
          body: { to: '+12025550177', message: text },
        }),
      );
    }
    for (const sent of sends) assert.equal(sent.status, 202, sent.text);
    // Three more refused by validation: counted as requests with their status, never as messages.
    for (let i = 0; i < 3; i++) {
      const refused = await t.request('POST', '/api/v2/messages/send', { apiKey: org.key, body: {} });
      assert.equal(refused.status, 400);
    }
    await runFor(t, 3);
    const receipt = await t.admin('POST', '/test/carrier/receipts', {
      messageId: sends[0]!.body.data.id,
      status: 'delivered',
    });
    assert.equal(receipt.status, 200, receipt.text);
    await t.ctx.jobs.drain();
    assert.equal(receiver.received.length, 2, 'both message.sent deliveries were attempted');

    // A call placed, rung, answered and hung up.
    const extension = await t.request('POST', '/api/v2/extensions', {
      apiKey: org.key,
      body: { extension: '101', name: 'Reception' },
    });
    assert.equal(extension.status, 201, extension.text);
    const placed = await t.request('POST', '/api/v2/calls', {
      apiKey: org.key,
      body: { from: org.number, to: '(415) 555-0123', extensionId: extension.body.data.id },
    });
    assert.equal(placed.status, 202, placed.text);
    const callId = placed.body.data.id as string;
    const during = await scrape();
    for (const event of ['ringing', 'answered', 'ringing', 'answered', 'completed']) {
      assert.equal((await t.admin('POST', `/test/pbx/calls/${callId}`, { event })).status, 200);
    }
    await t.ctx.jobs.drain();
    const last = await scrape();

    const carrier = 'simulated';
    assert.equal(moved(first, last, 'comms_messages_total', { status: 'queued', carrier }), 2);
    assert.equal(moved(first, last, 'comms_messages_total', { status: 'sent', carrier }), 2);
    assert.equal(moved(first, last, 'comms_messages_total', { status: 'delivered', carrier }), 1);
    assert.equal(moved(first, last, 'comms_messages_total', { status: 'failed', carrier }), 0);

    assert.equal(moved(first, last, 'comms_webhook_deliveries_total', { outcome: 'succeeded' }), 1);
    assert.equal(moved(first, last, 'comms_webhook_deliveries_total', { outcome: 'failed' }), 1);
    assert.equal(
      moved(first, last, 'comms_webhook_delivery_duration_seconds_count', { outcome: 'succeeded' }),
      1,
    );
    assert.equal(
      moved(first, last, 'comms_webhook_delivery_duration_seconds_count', { outcome: 'failed' }),
      1,
    );
    // The endpoint has failed since its last success: one failing endpoint, a count and no endpoint id.
    assert.equal(seriesValue(last, 'comms_webhook_endpoints', { state: 'failing' }), 1);
    assert.equal(seriesValue(last, 'comms_webhook_endpoints', { state: 'healthy' }), 0);

    assert.equal(seriesValue(during, 'comms_calls_active', { status: 'queued' }), 1);
    assert.equal(moved(first, last, 'comms_calls_ended_total', { outcome: 'completed' }), 1);
    for (const status of ['queued', 'ringing', 'in_progress'])
      assert.equal(seriesValue(last, 'comms_calls_active', { status }), 0);

    // Requests by their route pattern, never the raw URL.
    const send = { method: 'POST', route: '/api/v2/messages/send' };
    assert.equal(moved(first, last, 'comms_http_requests_total', { ...send, status: '202' }), 2);
    assert.equal(moved(first, last, 'comms_http_requests_total', { ...send, status: '400' }), 3);
    const drive = { method: 'POST', route: '/admin/v1/test/pbx/calls/:id', status: '200' };
    assert.equal(moved(first, last, 'comms_http_requests_total', drive), 5);
    assert.equal(
      moved(first, last, 'comms_http_request_duration_seconds_count', { ...send, status_class: '2xx' }),
      2,
    );
    assert.ok(![...last.samples.keys()].some((key) => key.includes(callId)), 'no series names a call id');

    // Jobs: both dispatches ran and completed; the refused delivery waits for its retry, scheduled.
    assert.equal(moved(first, last, 'comms_jobs_completed_total', { queue: 'messages.dispatch' }), 2);
    assert.equal(moved(first, last, 'comms_job_duration_seconds_count', { queue: 'messages.dispatch' }), 2);
    assert.equal(seriesValue(last, 'comms_jobs_scheduled', { queue: 'webhooks.deliver' }), 1);
    assert.equal(seriesValue(last, 'comms_jobs_waiting', { queue: 'messages.dispatch' }), 0);
    assert.equal(seriesValue(last, 'comms_jobs_running', { queue: 'messages.dispatch' }), 0);
  });

  test('jobs waiting are read from the queue at scrape time, with the age of the oldest', async () => {
    const org = await sender(t);
    const before = t.ctx.clock.nowMs();
    const sent = await t.request('POST', '/api/v2/messages/send', {
      apiKey: org.key,
      body: { to: '+12025550178', message: 'Waiting for a worker' },
    });
    assert.equal(sent.status, 202, sent.text);
    // This process does not trace: nothing of a trace is stored with the job.
    const [job] = await t.ctx.db.query<{ traceparent: string | null }>(
      `SELECT traceparent FROM jobs WHERE payload->>'messageId' = $1`,
      [sent.body.data.id],
    );
    assert.equal(job?.traceparent, null);
    t.ctx.clock.advance(90);
    const waiting = await scrape();
    assert.equal(seriesValue(waiting, 'comms_jobs_waiting', { queue: 'messages.dispatch' }), 1);
    const age = seriesValue(waiting, 'comms_jobs_oldest_waiting_seconds', { queue: 'messages.dispatch' });
    // At least the 90 s the clock was moved, at most everything the app clock saw since just before the send.
    const bound = (t.ctx.clock.nowMs() - before) / 1000;
    assert.ok(age >= 90 && age <= bound, `the oldest job waited ${age} s by the app clock (90 to ${bound})`);
    await t.ctx.jobs.drain();
    const drained = await scrape();
    assert.equal(seriesValue(drained, 'comms_jobs_waiting', { queue: 'messages.dispatch' }), 0);
    assert.equal(
      seriesValue(drained, 'comms_jobs_oldest_waiting_seconds', { queue: 'messages.dispatch' }),
      0,
    );
  });

  test('every exposed metric is listed in docs/operations.md, and every listed one is exposed', async () => {
    const scraped = await scrape();
    const docs = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
    const listed = new Set([...docs.matchAll(/^\| `(comms_[a-z_]+)`/gm)].map((match) => match[1]!));
    const ours = [...scraped.families.values()].filter(
      // Node's process metrics (prom-client's defaults) are listed as one group.
      (family) => !/^comms_(process_|nodejs_)/.test(family.name),
    );
    for (const family of ours) {
      assert.match(family.name, /^comms_[a-z_]+$/);
      if (family.type === 'counter') assert.match(family.name, /_total$/, family.name);
      assert.ok(listed.has(family.name), `${family.name} is not in docs/operations.md`);
    }
    // With the embedded database there is no pool (PGlite is one connection): those series are absent.
    const absent = new Set([
      'comms_db_pool_max_connections',
      'comms_db_pool_connections',
      'comms_db_pool_waiting',
    ]);
    for (const name of listed) {
      if (t.ctx.db.engine === 'pglite' && absent.has(name)) continue;
      assert.ok(scraped.families.has(name), `${name} is listed but not exposed`);
    }
    assert.ok(scraped.families.has('comms_process_resident_memory_bytes'), 'process metrics are exposed');
  });

  test('refused without the token, or with a wrong one: 401 in Shape A, and nothing is rendered', async () => {
    for (const headers of <Record<string, string>[]>[
      {},
      { authorization: 'Bearer wrong-token-0123456789abcdef' },
      { authorization: `Basic ${Buffer.from(`x:${METRICS_TOKEN}`).toString('base64')}` },
      { authorization: `Bearer ${METRICS_TOKEN}x` },
    ]) {
      const res = await fetch(`${t.url}/metrics`, { headers });
      assert.equal(res.status, 401);
      const body = await res.json();
      assert.ok(isShapeA(body), JSON.stringify(body));
      assert.ok(!JSON.stringify(body).includes('comms_'));
    }
  });
});

test('without METRICS_TOKEN, /metrics does not exist', async () => {
  const t = await startTestApp();
  try {
    const res = await t.request('GET', '/metrics', {
      headers: { authorization: 'Bearer anything-at-all-here' },
    });
    assert.equal(res.status, 404);
    assert.ok(isShapeA(res.body));
  } finally {
    await t.close();
  }
});

test('SIP: registrations are read from their table, and each message in and out is counted once', async () => {
  const { t, port, create } = await sipOffice({ config: { metricsToken: METRICS_TOKEN } });
  const phone = await SipPhone.open(port, await create('101'));
  try {
    const scrape = async () => {
      const res = await t.request('GET', '/metrics', {
        headers: { authorization: `Bearer ${METRICS_TOKEN}` },
      });
      assert.equal(res.status, 200);
      return parsePrometheus(res.text);
    };
    const first = await scrape();
    assert.equal(seriesValue(first, 'comms_sip_registrations'), 0);
    // One REGISTER challenged (401), then one answered with credentials (200).
    assert.equal(await phone.register(), 200);
    const last = await scrape();
    assert.equal(seriesValue(last, 'comms_sip_registrations'), 1);
    assert.equal(seriesValue(last, 'comms_sip_registered_extensions'), 1);
    const sip = (direction: string, statusClass: string) => ({
      direction,
      method: 'REGISTER',
      status_class: statusClass,
    });
    assert.equal(moved(first, last, 'comms_sip_messages_total', sip('in', 'request')), 2);
    assert.equal(moved(first, last, 'comms_sip_messages_total', sip('out', '4xx')), 1);
    assert.equal(moved(first, last, 'comms_sip_messages_total', sip('out', '2xx')), 1);
  } finally {
    phone.close();
    t.ctx.sipListener.stop();
    await t.close();
  }
});

test('agent turns: each answered utterance is one observation of the turn latency', async () => {
  const t = await startTestApp({ config: { metricsToken: METRICS_TOKEN } });
  try {
    const office = await sender(t);
    const api = (method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
    const agent = await api('POST', '/agents', {
      name: 'Receptionist',
      firstMessage: 'Hello, how can I help?',
    });
    assert.equal(agent.status, 201, agent.text);
    const [number] = (await api('GET', '/numbers')).body.data;
    const routed = await api('PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'agent', target: agent.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
    const scrape = async () => {
      const res = await t.request('GET', '/metrics', {
        headers: { authorization: `Bearer ${METRICS_TOKEN}` },
      });
      return parsePrometheus(res.text);
    };
    const first = await scrape();
    const arrived = await t.admin('POST', '/test/pbx/inbound', {
      from: '+14155550123',
      to: office.number,
      utterances: ['Are you open on Saturdays?', 'Thanks, that is all. Goodbye!'],
    });
    assert.equal(arrived.status, 201, arrived.text);
    // The agent talks in the background and ends the call on the goodbye.
    let outcome: string | null = null;
    for (let i = 0; i < 200 && !outcome; i++) {
      await sleep(50);
      const rows = (await api('GET', '/agent-calls?limit=10')).body.data as {
        callId: string;
        outcome: string;
      }[];
      outcome = rows.find((row) => row.callId === arrived.body.data.id)?.outcome ?? null;
    }
    assert.equal(outcome, 'ended_by_agent');
    const last = await scrape();
    assert.equal(moved(first, last, 'comms_agent_turn_latency_seconds_count'), 2);
    assert.ok(moved(first, last, 'comms_agent_turn_latency_seconds_sum') > 0);
  } finally {
    await t.close();
  }
});

test('a value not yet known is written NaN, as the text format spells it (prom-client writes "Nan")', async () => {
  const metrics = new Metrics();
  metrics.readings({
    gauges: [{ name: 'comms_test_unknown', help: 'A gauge whose value is not known yet' }],
    read: async () => ({ comms_test_unknown: [{ value: Number.NaN }] }),
  });
  const { body } = await metrics.render();
  assert.match(body, /^comms_test_unknown NaN$/m);
  assert.equal(Number.isNaN(seriesValue(parsePrometheus(body), 'comms_test_unknown')), true);
});
