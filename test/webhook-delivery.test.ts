// Webhook delivery end to end (issue 7): real events (contact opt-out and opt-in through the developer API,
// contact import, webhook.test) delivered to a real HTTP receiver on loopback; every delivery verified with
// both `standardwebhooks` and `svix`; the retry schedule walked with the test clock; a delivery surviving a
// restart mid-retry; 410 and five days of failure disabling an endpoint; rotation signing with both secrets
// for 24 hours; webhook-id stable across retries and unique per event; the delivery log and redelivery.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { RETRY_SCHEDULE_SECONDS } from '../src/modules/webhooks/delivery.ts';
import {
  DELIVERY_TIMEOUT_MS,
  RESPONSE_EXCERPT_BYTES,
  WebhookTransport,
} from '../src/modules/webhooks/transport.ts';
import { freshDatabase, startTestApp, type TestApp } from './helpers/app.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { type Receiver, rejectedByBoth, startReceiver, verifyWithBoth } from './helpers/receiver.ts';

interface Tenant {
  organizationId: string;
  email: string;
  password: string;
  token: string;
  key: string;
}

async function tenant(t: TestApp): Promise<Tenant> {
  const user = await createUser(t, { role: 'owner' });
  const { secret } = await t.ctx.apiKeys.create(user.organizationId, { name: 'k', scopes: ['*'] });
  return { ...user, token: await signIn(t, user), key: secret };
}

let phoneCounter = 100;
/** Creates a contact and opts it out through the developer API: one contact.opted_out event. */
async function optOut(t: TestApp, who: Tenant): Promise<string> {
  const phone = `+1202555${String(phoneCounter++).padStart(4, '0')}`;
  const created = await t.request('POST', '/api/v2/contacts', { apiKey: who.key, body: { phone } });
  assert.equal(created.status, 201, created.text);
  const res = await t.request('POST', `/api/v2/contacts/${created.body.data.id}/opt-out`, {
    apiKey: who.key,
  });
  assert.equal(res.status, 200, res.text);
  return created.body.data.id;
}

async function createHook(t: TestApp, who: Tenant, url: string, events: string[]) {
  const res = await t.request('POST', '/api/webhooks', { token: who.token, body: { url, events } });
  assert.equal(res.status, 201, res.text);
  return res.body.data as { id: string; secret: string };
}

async function deliveriesOf(t: TestApp, who: Tenant, endpointId: string) {
  // Sessions last 8 hours; tests that move the clock by days sign in again.
  const res = await t.request('GET', `/api/webhooks/${endpointId}/deliveries?limit=100`, {
    token: await signIn(t, who),
  });
  assert.equal(res.status, 200, res.text);
  return res.body.data as any[];
}

describe('webhook delivery', () => {
  let t: TestApp;
  let receiver: Receiver;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
    receiver = await startReceiver(() => t.ctx.clock.nowMs());
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  const receivedAt = (path: string) => receiver.received.filter((r) => r.path === path);

  test('a real event is delivered once, signed so that standardwebhooks and svix both verify it', async () => {
    const who = await tenant(t);
    const hook = await createHook(t, who, `${receiver.url}/signed`, ['contact.opted_out']);
    const contactId = await optOut(t, who);
    await t.ctx.jobs.drain();

    const got = receivedAt('/signed');
    assert.equal(got.length, 1);
    const delivery = got[0]!;
    assert.equal(delivery.headers['content-type'], 'application/json');
    assert.match(delivery.headers['webhook-id']!, /^evt_/);
    assert.match(delivery.headers['webhook-timestamp']!, /^\d{10}$/);
    assert.ok(Math.abs(Number(delivery.headers['webhook-timestamp']) * 1000 - delivery.at) < 2000);
    assert.match(delivery.headers['webhook-signature']!, /^v1,[A-Za-z0-9+/=]+$/);
    const verified = verifyWithBoth(hook.secret, delivery);
    const body = JSON.parse(delivery.body);
    assert.deepEqual(Object.keys(body), ['type', 'timestamp', 'data']);
    assert.equal(body.type, 'contact.opted_out');
    assert.equal(body.data.contactId, contactId);
    assert.equal(body.data.method, 'api');
    assert.deepEqual(verified.standard, body);
    assert.deepEqual(verified.svix, body);
    // A wrong secret and a tampered body are refused by both.
    assert.equal(rejectedByBoth(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, delivery), true);
    assert.equal(
      rejectedByBoth(hook.secret, { ...delivery, body: delivery.body.replace('api', 'sms') }),
      true,
    );

    const log = await deliveriesOf(t, who, hook.id);
    assert.equal(log.length, 1);
    assert.equal(log[0].status, 'succeeded');
    assert.equal(log[0].event.id, delivery.headers['webhook-id']);
    assert.equal(log[0].event.type, 'contact.opted_out');
    assert.equal(log[0].attempts, 1);
    assert.equal(log[0].lastStatusCode, 200);
    assert.equal(log[0].lastResponseExcerpt, 'ok');
    assert.equal(typeof log[0].lastDurationMs, 'number');
    assert.deepEqual(log[0].payload, body);
  });

  test('only subscribed, enabled endpoints of the event organization receive it; ids are unique per event', async () => {
    const who = await tenant(t);
    const stranger = await tenant(t);
    await createHook(t, who, `${receiver.url}/subscribed`, ['contact.opted_out', 'contact.opted_in']);
    await createHook(t, who, `${receiver.url}/unsubscribed`, ['contact.import_completed']);
    const off = await createHook(t, who, `${receiver.url}/off`, ['contact.opted_out']);
    await t.request('PATCH', `/api/webhooks/${off.id}`, { token: who.token, body: { enabled: false } });
    await createHook(t, stranger, `${receiver.url}/stranger`, ['contact.opted_out']);

    const contactId = await optOut(t, who);
    const optIn = await t.request('POST', `/api/v2/contacts/${contactId}/opt-in`, {
      apiKey: who.key,
      body: { reason: 'asked again' },
    });
    assert.equal(optIn.status, 200, optIn.text);
    const imported = await t.request('POST', '/api/v2/contacts/import', {
      apiKey: who.key,
      body: { contacts: [{ phone: '+12025559001' }] },
    });
    assert.equal(imported.status, 200, imported.text);
    await t.ctx.jobs.drain();

    const got = receivedAt('/subscribed');
    // Deliveries run concurrently: no order between events is promised (receivers order by `timestamp`).
    assert.deepEqual(got.map((r) => JSON.parse(r.body).type).sort(), [
      'contact.opted_in',
      'contact.opted_out',
    ]);
    assert.notEqual(got[0]!.headers['webhook-id'], got[1]!.headers['webhook-id']);
    const imports = receivedAt('/unsubscribed');
    assert.equal(imports.length, 1);
    assert.equal(JSON.parse(imports[0]!.body).type, 'contact.import_completed');
    assert.deepEqual(JSON.parse(imports[0]!.body).data, { imported: 1, updated: 0, rejected: 0 });
    assert.equal(receivedAt('/off').length, 0);
    assert.equal(receivedAt('/stranger').length, 0);
  });

  test('webhook-ids are unique per event and ordered like the events: a later event has a greater id', async () => {
    const who = await tenant(t);
    await createHook(t, who, `${receiver.url}/ordered`, ['contact.opted_out']);
    for (let i = 0; i < 4; i++) {
      await optOut(t, who);
      t.ctx.clock.advance(1);
    }
    await t.ctx.jobs.drain();
    // On a loaded machine (seen on CI) a delivery can time out and be retried later, with its webhook-id:
    // the clock moves to the retry, and a retried event counts once.
    for (
      let i = 0;
      i < 5 && new Set(receivedAt('/ordered').map((r) => r.headers['webhook-id'])).size < 4;
      i++
    ) {
      t.ctx.clock.advance(RETRY_SCHEDULE_SECONDS[0]!);
      await t.ctx.jobs.drain();
    }
    const got = [...new Map(receivedAt('/ordered').map((r) => [r.headers['webhook-id'], r])).values()];
    assert.equal(got.length, 4);
    const ids = got.map((r) => r.headers['webhook-id']!);
    assert.equal(new Set(ids).size, 4);
    const byId = [...got].sort((a, b) => (a.headers['webhook-id']! < b.headers['webhook-id']! ? -1 : 1));
    const byTime = [...got].sort(
      (a, b) => Date.parse(JSON.parse(a.body).timestamp) - Date.parse(JSON.parse(b.body).timestamp),
    );
    assert.deepEqual(
      byId.map((r) => r.headers['webhook-id']),
      byTime.map((r) => r.headers['webhook-id']),
    );
  });

  test('fan-out is idempotent: dispatching the same event twice makes one delivery', async () => {
    const who = await tenant(t);
    const hook = await createHook(t, who, `${receiver.url}/once`, ['contact.opted_out']);
    await optOut(t, who);
    await t.ctx.jobs.drain();
    const [row] = await t.ctx.db.query<{ event_id: string }>(
      'SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1',
      [hook.id],
    );
    const event = await t.ctx.events.get(row!.event_id);
    await t.ctx.webhookDelivery.fanOut(event!);
    await t.ctx.webhookDelivery.fanOut(event!);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/once').length, 1);
    assert.equal((await deliveriesOf(t, who, hook.id)).length, 1);
  });

  test('retries: 500, 500, then 200, on the schedule (5 s, 5 min) with jitter; same webhook-id, fresh signatures', async (context) => {
    const who = await tenant(t);
    const hook = await createHook(t, who, `${receiver.url}/flaky`, ['contact.opted_out']);
    // Held still: what is not yet due must stay so however long the steps take in real time (4.4 s moved plus
    // a second of sign-ins on a loaded machine passed a 4.5 s retry drawn with its jitter).
    t.ctx.clock.freeze();
    context.after(() => t.ctx.clock.thaw());
    let calls = 0;
    receiver.respond = (_n, request) => {
      if (request.path !== '/flaky') return { status: 200, body: 'ok' };
      calls++;
      return calls <= 2 ? { status: 500, body: `boom ${calls}` } : { status: 204 };
    };
    await optOut(t, who);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/flaky').length, 1);
    let [log] = await deliveriesOf(t, who, hook.id);
    assert.equal(log.status, 'pending');
    assert.equal(log.attempts, 1);
    assert.equal(log.lastStatusCode, 500);
    assert.equal(log.lastResponseExcerpt, 'boom 1');
    assert.match(log.lastError, /500/);
    const wait = Date.parse(log.nextAttemptAt) - Date.parse(log.lastAttemptAt);
    assert.ok(wait >= 4500 && wait <= 5500, `5 s ± 10%, got ${wait} ms`);
    assert.ok(
      (await t.request('GET', `/api/webhooks/${hook.id}`, { token: who.token })).body.data.failingSince,
    );

    t.ctx.clock.advance(4.4);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/flaky').length, 1, 'not before the 5 s (less jitter) are up');
    t.ctx.clock.advance(1.2);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/flaky').length, 2);

    t.ctx.clock.advance(5 * 60 * 0.89);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/flaky').length, 2, 'not before 5 min (less jitter)');
    t.ctx.clock.advance(5 * 60 * 0.22);
    await t.ctx.jobs.drain();
    const got = receivedAt('/flaky');
    assert.equal(got.length, 3);

    assert.equal(
      new Set(got.map((r) => r.headers['webhook-id'])).size,
      1,
      'webhook-id is stable across retries',
    );
    assert.equal(new Set(got.map((r) => r.body)).size, 1, 'the same body every time');
    assert.equal(
      new Set(got.map((r) => r.headers['webhook-timestamp'])).size,
      3,
      'each attempt signs its own time',
    );
    for (const delivery of got) verifyWithBoth(hook.secret, delivery);

    [log] = await deliveriesOf(t, who, hook.id);
    assert.equal(log.status, 'succeeded');
    assert.equal(log.attempts, 3);
    assert.equal(log.lastStatusCode, 204);
    assert.equal(log.nextAttemptAt, null);
    assert.deepEqual(
      log.attemptLog.map((a: any) => [a.attempt, a.statusCode]),
      [
        [1, 500],
        [2, 500],
        [3, 204],
      ],
    );
    assert.equal(log.attemptLog[1].responseExcerpt, 'boom 2');
    const endpoint = await t.request('GET', `/api/webhooks/${hook.id}`, { token: await signIn(t, who) });
    assert.equal(endpoint.body.data.failingSince, null, 'a success ends the run of failures');
  });

  test('the whole schedule: 8 attempts (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), then failed', async () => {
    const who = await tenant(t);
    const hook = await createHook(t, who, `${receiver.url}/down`, ['contact.opted_out']);
    receiver.respond = (_n, request) => (request.path === '/down' ? { status: 503 } : { status: 200 });
    await optOut(t, who);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/down').length, 1);
    for (const [index, delay] of RETRY_SCHEDULE_SECONDS.entries()) {
      t.ctx.clock.advance(delay * 0.89);
      await t.ctx.jobs.drain();
      assert.equal(receivedAt('/down').length, index + 1, `attempt ${index + 2} not before ${delay} s - 10%`);
      t.ctx.clock.advance(delay * 0.22);
      await t.ctx.jobs.drain();
      assert.equal(receivedAt('/down').length, index + 2, `attempt ${index + 2} by ${delay} s + 10%`);
    }
    const got = receivedAt('/down');
    for (let i = 1; i < got.length; i++) {
      const gap = (got[i]!.at - got[i - 1]!.at) / 1000;
      // The app clock also runs in real time between the test's moves; on a busy machine that is not nothing.
      const realSeconds = (got[i]!.realAt - got[i - 1]!.realAt) / 1000;
      const delay = RETRY_SCHEDULE_SECONDS[i - 1]!;
      assert.ok(
        gap >= delay * 0.89 && gap <= delay * 1.12 + realSeconds,
        `gap ${i}: ${gap} s for ${delay} s (${realSeconds} s of it real time)`,
      );
    }
    t.ctx.clock.advance(48 * 3600);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/down').length, 8, 'no ninth attempt');
    const [log] = await deliveriesOf(t, who, hook.id);
    assert.equal(log.status, 'failed');
    assert.equal(log.attempts, 8);
    assert.equal(log.attemptLog.length, 8);
    assert.equal(log.nextAttemptAt, null);
    receiver.respond = () => ({ status: 200, body: 'ok' });
  });

  test('Retry-After longer than the schedule is honoured', async () => {
    const who = await tenant(t);
    const hook = await createHook(t, who, `${receiver.url}/busy`, ['contact.opted_out']);
    receiver.respond = (_n, request) =>
      request.path === '/busy' && receivedAt('/busy').length === 1
        ? { status: 429, headers: { 'retry-after': '600' } }
        : { status: 200 };
    await optOut(t, who);
    await t.ctx.jobs.drain();
    const [log] = await deliveriesOf(t, who, hook.id);
    const wait = Date.parse(log.nextAttemptAt) - Date.parse(log.lastAttemptAt);
    assert.ok(wait >= 600_000 && wait < 601_000, `Retry-After 600 s, got ${wait} ms`);
    t.ctx.clock.advance(590);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/busy').length, 1);
    t.ctx.clock.advance(15);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/busy').length, 2);
    receiver.respond = () => ({ status: 200, body: 'ok' });
  });

  test('a redirect is not followed and counts as a failure', async () => {
    const who = await tenant(t);
    const hook = await createHook(t, who, `${receiver.url}/moved`, ['contact.opted_out']);
    receiver.respond = (_n, request) =>
      request.path === '/moved'
        ? { status: 302, headers: { location: `${receiver.url}/elsewhere` } }
        : { status: 200 };
    await optOut(t, who);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/elsewhere').length, 0);
    const [log] = await deliveriesOf(t, who, hook.id);
    assert.equal(log.status, 'pending');
    assert.equal(log.lastStatusCode, 302);
    assert.match(log.lastError, /redirects are not followed/);
    receiver.respond = () => ({ status: 200, body: 'ok' });
  });

  test('410 Gone disables the endpoint and records webhook.endpoint_disabled for the other endpoints', async () => {
    const who = await tenant(t);
    const gone = await createHook(t, who, `${receiver.url}/gone`, ['contact.opted_out']);
    const watcher = await createHook(t, who, `${receiver.url}/watcher`, ['webhook.endpoint_disabled']);
    receiver.respond = (_n, request) => (request.path === '/gone' ? { status: 410 } : { status: 200 });
    await optOut(t, who);
    await t.ctx.jobs.drain();

    const endpoint = await t.request('GET', `/api/webhooks/${gone.id}`, { token: who.token });
    assert.equal(endpoint.body.data.enabled, false);
    assert.equal(endpoint.body.data.disabledReason, 'gone');
    const [log] = await deliveriesOf(t, who, gone.id);
    assert.equal(log.status, 'failed');
    assert.equal(log.attempts, 1);

    const notices = receivedAt('/watcher');
    assert.equal(notices.length, 1);
    verifyWithBoth(watcher.secret, notices[0]!);
    const notice = JSON.parse(notices[0]!.body);
    assert.equal(notice.type, 'webhook.endpoint_disabled');
    assert.equal(notice.data.endpointId, gone.id);
    assert.equal(notice.data.reason, 'gone');

    t.ctx.clock.advance(3600);
    await optOut(t, who);
    await t.ctx.jobs.drain();
    assert.equal(receivedAt('/gone').length, 1, 'a disabled endpoint receives nothing more');
    receiver.respond = () => ({ status: 200, body: 'ok' });
  });

  test('an endpoint failing without a success for 5 days is disabled', async () => {
    const who = await tenant(t);
    const hook = await createHook(t, who, `${receiver.url}/dead`, ['contact.opted_out']);
    receiver.respond = (_n, request) => (request.path === '/dead' ? { status: 500 } : { status: 200 });
    await optOut(t, who);
    await t.ctx.jobs.drain();
    const started = t.ctx.clock.nowMs();
    // Keep it failing: a new event every 20 hours for just under 5 days.
    const until = started + 4.9 * 86_400_000;
    while (t.ctx.clock.nowMs() < until - 1000) {
      t.ctx.clock.advance(Math.min(20 * 3600, (until - t.ctx.clock.nowMs()) / 1000));
      await optOut(t, who);
      await t.ctx.jobs.drain();
    }
    let endpoint = await t.request('GET', `/api/webhooks/${hook.id}`, { token: await signIn(t, who) });
    assert.equal(endpoint.body.data.enabled, true, 'not yet 5 days');
    assert.ok(Math.abs(Date.parse(endpoint.body.data.failingSince) - started) < 2000);

    t.ctx.clock.advance((0.2 * 86_400_000) / 1000);
    await optOut(t, who);
    await t.ctx.jobs.drain();
    endpoint = await t.request('GET', `/api/webhooks/${hook.id}`, { token: await signIn(t, who) });
    assert.equal(endpoint.body.data.enabled, false);
    assert.equal(endpoint.body.data.disabledReason, 'failing');
    const [event] = await t.ctx.db.query<{ data: any }>(
      "SELECT data FROM events WHERE organization_id = $1 AND type = 'webhook.endpoint_disabled'",
      [who.organizationId],
    );
    assert.equal(event!.data.endpointId, hook.id);
    assert.equal(event!.data.reason, 'failing');

    // Enabling it again starts a clean record.
    const enabled = await t.request('PATCH', `/api/webhooks/${hook.id}`, {
      token: await signIn(t, who),
      body: { enabled: true },
    });
    assert.equal(enabled.body.data.enabled, true);
    assert.equal(enabled.body.data.failingSince, null);
    receiver.respond = () => ({ status: 200, body: 'ok' });
  });

  test('rotation: for 24 hours both secrets sign (two v1 signatures), then only the new one', async () => {
    const who = await tenant(t);
    const hook = await createHook(t, who, `${receiver.url}/rotating`, ['contact.opted_out']);
    const rotated = await t.request('POST', `/api/webhooks/${hook.id}/rotate-secret`, { token: who.token });
    assert.equal(rotated.status, 200);
    const fresh = rotated.body.data.secret as string;

    await optOut(t, who);
    await t.ctx.jobs.drain();
    const during = receivedAt('/rotating')[0]!;
    const signatures = during.headers['webhook-signature']!.split(' ');
    assert.equal(signatures.length, 2);
    for (const signature of signatures) assert.match(signature, /^v1,/);
    verifyWithBoth(hook.secret, during);
    verifyWithBoth(fresh, during);

    t.ctx.clock.advance(23 * 3600);
    await optOut(t, who);
    await t.ctx.jobs.drain();
    const late = receivedAt('/rotating')[1]!;
    verifyWithBoth(hook.secret, late);
    verifyWithBoth(fresh, late);

    t.ctx.clock.advance(3600 + 1);
    await optOut(t, who);
    await t.ctx.jobs.drain();
    const after = receivedAt('/rotating')[2]!;
    assert.equal(after.headers['webhook-signature']!.split(' ').length, 1);
    verifyWithBoth(fresh, after);
    assert.equal(rejectedByBoth(hook.secret, after), true, 'the old secret no longer verifies');
  });

  test('webhook.test goes to that endpoint only; redelivery sends a finished delivery again under its id', async () => {
    const who = await tenant(t);
    const hook = await createHook(t, who, `${receiver.url}/tested`, ['contact.opted_in']);
    const bystander = await createHook(t, who, `${receiver.url}/bystander`, ['webhook.test']);
    const first = await t.request('POST', `/api/webhooks/${hook.id}/test`, { token: who.token });
    assert.equal(first.status, 202);
    assert.equal(first.body.data.event.type, 'webhook.test');
    assert.equal(first.body.data.status, 'pending');
    const second = await t.request('POST', `/api/webhooks/${hook.id}/test`, { token: who.token });
    await t.ctx.jobs.drain();

    const got = receivedAt('/tested');
    assert.equal(got.length, 2);
    assert.equal(receivedAt('/bystander').length, 0);
    for (const delivery of got) {
      const body = JSON.parse(delivery.body);
      assert.equal(body.type, 'webhook.test');
      assert.equal(body.data.endpointId, hook.id);
      verifyWithBoth(hook.secret, delivery);
    }
    assert.deepEqual(
      got.map((r) => r.headers['webhook-id']).sort(),
      [first.body.data.event.id, second.body.data.event.id].sort(),
    );
    assert.notEqual(first.body.data.event.id, second.body.data.event.id);

    const redo = await t.request(
      'POST',
      `/api/webhooks/${hook.id}/deliveries/${second.body.data.id}/redeliver`,
      { token: who.token },
    );
    assert.equal(redo.status, 202);
    assert.equal(redo.body.data.status, 'pending');
    const busy = await t.request(
      'POST',
      `/api/webhooks/${hook.id}/deliveries/${second.body.data.id}/redeliver`,
      {
        token: who.token,
      },
    );
    assert.equal(busy.status, 409, 'not while it is being attempted');
    await t.ctx.jobs.drain();
    const again = receivedAt('/tested');
    assert.equal(again.length, 3);
    assert.equal(again[2]!.headers['webhook-id'], second.body.data.event.id);
    const original = got.find((r) => r.headers['webhook-id'] === second.body.data.event.id)!;
    assert.equal(again[2]!.body, original.body, 'the same body as the first time');
    verifyWithBoth(hook.secret, again[2]!);

    const log = await deliveriesOf(t, who, hook.id);
    assert.equal(log.length, 2);
    const redelivered = log.find((d) => d.id === second.body.data.id);
    assert.equal(redelivered.status, 'succeeded');
    assert.equal(redelivered.attempts, 2);
    assert.equal(redelivered.attemptLog.length, 2);

    const missing = await t.request('POST', `/api/webhooks/${hook.id}/deliveries/whd_missing/redeliver`, {
      token: who.token,
    });
    assert.equal(missing.status, 404);
    const elsewhere = await t.request(
      'POST',
      `/api/webhooks/${bystander.id}/deliveries/${second.body.data.id}/redeliver`,
      { token: who.token },
    );
    assert.equal(elsewhere.status, 404, 'a delivery is found only under its own endpoint');
  });

  test('the delivery log pages by offset only: a cursor changes nothing', async () => {
    const who = await tenant(t);
    const hook = await createHook(t, who, `${receiver.url}/log`, ['webhook.test']);
    for (let i = 0; i < 3; i++)
      await t.request('POST', `/api/webhooks/${hook.id}/test`, { token: who.token });
    await t.ctx.jobs.drain();
    const page = await t.request('GET', `/api/webhooks/${hook.id}/deliveries?limit=2&page=1`, {
      token: who.token,
    });
    assert.equal(page.status, 200);
    assert.deepEqual(page.body.pagination, { page: 1, limit: 2, total: 3, totalPages: 2 });
    assert.equal(page.body.next_cursor, null);
    const withCursor = await t.request(
      'GET',
      `/api/webhooks/${hook.id}/deliveries?limit=2&page=1&cursor=zzz`,
      {
        token: who.token,
      },
    );
    assert.equal(withCursor.status, 200);
    assert.deepEqual(withCursor.body, page.body);
  });
});

describe('webhook delivery across a restart', () => {
  test('a delivery that failed on one instance is retried by the next one after the clock moves', async () => {
    const database = await freshDatabase();
    let receiver: Receiver | undefined;
    let second: TestApp | undefined;
    try {
      const first = await startTestApp({ database, config: { trustProxy: true } });
      receiver = await startReceiver(() => (second ?? first).ctx.clock.nowMs());
      receiver.respond = (n) => (n === 1 ? { status: 500 } : { status: 200, body: 'ok' });
      const who = await tenant(first);
      const hook = await createHook(first, who, `${receiver.url}/restart`, ['contact.opted_out']);
      await optOut(first, who);
      await first.ctx.jobs.drain();
      assert.equal(receiver.received.length, 1);
      await first.close();

      // Instances share the database and JWT_SECRET (from which the secret box key is derived).
      second = await startTestApp({
        database,
        config: { trustProxy: true, jwtSecret: first.ctx.config.jwtSecret },
      });
      await second.ctx.jobs.drain();
      assert.equal(receiver.received.length, 1, 'the retry is not due yet');
      second.ctx.clock.advance(10);
      await second.ctx.jobs.drain();
      assert.equal(receiver.received.length, 2);
      const [a, b] = receiver.received;
      assert.equal(a!.headers['webhook-id'], b!.headers['webhook-id']);
      verifyWithBoth(hook.secret, b!);
      const log = await second.request('GET', `/api/webhooks/${hook.id}/deliveries`, {
        token: await signIn(second, who),
      });
      assert.equal(log.body.data[0].status, 'succeeded');
      assert.equal(log.body.data[0].attempts, 2);
    } finally {
      await receiver?.close();
      await second?.close();
      await database.drop();
    }
  });
});

describe('webhook transport', () => {
  test('an answer that does not come within the timeout is a failure; only an excerpt of a long answer is kept', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const server = http.createServer((request, response) => {
      if (request.url === '/silent') return; // never answers
      response.writeHead(500).end('x'.repeat(5000));
    });
    server.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const transport = new WebhookTransport({ guarded: false, timeoutMs: 300 });
      const silent = await transport.post(`${base}/silent`, {}, '{}');
      assert.equal(silent.statusCode, null);
      assert.match(silent.error!, /Timed out/);
      assert.ok(silent.durationMs >= 290 && silent.durationMs < 5000);
      const long = await transport.post(`${base}/long`, {}, '{}');
      assert.equal(long.statusCode, 500);
      assert.equal(long.responseExcerpt!.length, RESPONSE_EXCERPT_BYTES);
      assert.equal(DELIVERY_TIMEOUT_MS, 15_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
