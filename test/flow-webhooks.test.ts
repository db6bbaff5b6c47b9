// Call flows served by the customer's app (issue 33, docs/voice.md "Flows from your app"), on the simulated PBX
// through the HTTP API, with a real HTTP server on 127.0.0.1 as the app. The app checks every request with the
// public `standardwebhooks` verifier and the organization's signing secret; it answers a gather whose
// actionUrl gets the keys and answers a dial; an app that times out, answers invalid JSON, invalid steps or
// a 500 gets the fallback flow, or without one an apology and a `webhook_failed` end, never a dropped call.
// The deadline is shortened (flowAppTimeoutMs) so that no test waits 5 s. In production a private or plain
// http URL is refused when saved, with the webhooks module's rule.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

/** How the test app answers one request: a status, a body, after a delay. */
interface AppAnswer {
  status?: number;
  body?: unknown;
  /** Sent as is (not JSON-encoded). */
  raw?: string;
  delayMs?: number;
}

interface AppRequest {
  path: string;
  headers: Record<string, string>;
  body: Record<string, any>;
  /** The signature checked with the secret the app holds (standardwebhooks' Webhook.verify). */
  verified: boolean;
}

/** The customer's app: a real HTTP server answering by path, checking each request's signature. */
async function startApp() {
  const state = {
    secrets: [] as string[],
    received: [] as AppRequest[],
    routes: new Map<string, (request: AppRequest) => AppAnswer>(),
  };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(
        Object.entries(request.headers).filter(
          (entry): entry is [string, string] => typeof entry[1] === 'string',
        ),
      );
      const verified =
        state.secrets.length > 0 &&
        state.secrets.every((secret) => {
          try {
            new Webhook(secret).verify(raw, headers);
            return true;
          } catch {
            return false;
          }
        });
      const entry: AppRequest = { path: request.url ?? '/', headers, body: JSON.parse(raw), verified };
      state.received.push(entry);
      const answer = state.routes.get(entry.path)?.(entry) ?? { status: 404, raw: 'no such path' };
      if (answer.delayMs) await sleep(answer.delayMs);
      if (response.destroyed) return;
      response.writeHead(answer.status ?? 200, { 'content-type': 'application/json' });
      response.end(answer.raw ?? JSON.stringify(answer.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    ...state,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('call flows from an app over a webhook (simulated PBX)', () => {
  let t: TestApp;
  let who: Sender;
  let numberId: string;
  let sales: { id: string };
  let app: Awaited<ReturnType<typeof startApp>>;
  before(async () => {
    t = await startTestApp({ config: { flowAppTimeoutMs: 300 }, captureLog: true });
    who = await sender(t);
    app = await startApp();
    sales = (await api('POST', '/extensions', { extension: '101', name: 'Sales' })).body.data;
    numberId = (await api('GET', '/numbers')).body.data[0].id;
    const secret = await api('GET', '/call-flows/signing-secret');
    assert.equal(secret.status, 200, secret.text);
    app.secrets.push(secret.body.data.secret);
  });
  after(async () => {
    await app?.close();
    await t?.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const drive = (callId: string, body: Record<string, unknown>) =>
    t.admin('POST', `/test/pbx/calls/${callId}`, body);
  const arrive = async () => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550198', to: who.number });
    assert.equal(arrived.status, 201, arrived.text);
    return arrived.body.data as Record<string, any>;
  };
  const call = async (id: string) => (await t.ctx.calls.get(who.id, id)) as unknown as Record<string, any>;
  const until = async <T>(what: () => Promise<T> | T, ok: (value: T) => boolean): Promise<T> => {
    for (let i = 0; i < 200; i++) {
      const now = await what();
      if (ok(now)) return now;
      await sleep(25);
    }
    throw new Error(`never got there: ${JSON.stringify(await what())}`);
  };
  const ended = (id: string) =>
    until(
      () => call(id),
      (now) => now.endedAt !== null,
    );
  const routeToApp = async (path: string, fallbackFlowId?: string) => {
    const routed = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: {
        type: 'webhook',
        target: `${app.url}${path}`,
        ...(fallbackFlowId ? { fallbackFlowId } : {}),
      },
    });
    assert.equal(routed.status, 200, routed.text);
    return routed.body.data;
  };
  const requestsTo = (path: string, callId: string) =>
    app.received.filter((each) => each.path === path && each.body.callId === callId);
  const dialSales = () => ({ type: 'dial', targets: [{ type: 'extension', target: sales.id }] });
  /** A fallback flow: it says so, then rings sales. */
  const fallbackFlow = async () => {
    const flow = await api('POST', '/call-flows', {
      name: 'When the app is down',
      steps: [{ type: 'say', text: 'One moment.' }, dialSales()],
    });
    assert.equal(flow.status, 201, flow.text);
    return flow.body.data.id as string;
  };
  /** The call rings sales (the fallback's or the app's dial); answered, then hung up: completed, not dropped. */
  const answeredBySales = async (callId: string) => {
    await until(
      () => call(callId),
      (now) => now.extensionId === sales.id,
    );
    await drive(callId, { event: 'answered' });
    await drive(callId, { event: 'completed' });
    const done = await ended(callId);
    assert.deepEqual([done.status, done.extensionId], ['completed', sales.id]);
  };

  test('a webhook route is checked when saved: its URL, its fallback flow of the organization', async () => {
    for (const target of ['ftp://example.com/voice', 'not a url', 'https://user:pw@example.com/voice']) {
      const refused = await api('PATCH', `/numbers/${numberId}`, { voiceRoute: { type: 'webhook', target } });
      assert.equal(refused.status, 400, target);
      assert.match(refused.body.error, /^voiceRoute\.target: url must/, target);
    }
    const missing = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: {
        type: 'webhook',
        target: `${app.url}/voice`,
        fallbackFlowId: 'flow_0000000001abcdefabcdefabcd',
      },
    });
    assert.equal(missing.status, 400);
    assert.match(missing.body.error, /voiceRoute\.fallbackFlowId: no call flow/);
    // Another organization's flow is no flow of this one.
    const other = await sender(t);
    const theirs = await t.request('POST', '/api/v2/call-flows', {
      apiKey: other.key,
      body: { name: 'Theirs', steps: [{ type: 'hangup' }] },
    });
    const foreign = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'webhook', target: `${app.url}/voice`, fallbackFlowId: theirs.body.data.id },
    });
    assert.equal(foreign.status, 400);
    const fallbackId = await fallbackFlow();
    // Only a webhook route has a fallback.
    const onFlow = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'flow', target: fallbackId, fallbackFlowId: fallbackId },
    });
    assert.equal(onFlow.status, 400);
    const routed = await routeToApp('/voice', fallbackId);
    assert.deepEqual(routed.voiceRoute, {
      type: 'webhook',
      target: `${app.url}/voice`,
      fallbackFlowId: fallbackId,
    });
    assert.deepEqual((await api('GET', `/numbers/${numberId}`)).body.data.voiceRoute, routed.voiceRoute);
    // The fallback flow is in use as a route is: it cannot be deleted under the number.
    const deleting = await api('DELETE', `/call-flows/${fallbackId}`);
    assert.equal(deleting.status, 409);
    assert.equal(deleting.body.code, 'CALL_FLOW_IN_USE');
    // A stored flow's actionUrl and redirect url are checked as URLs too.
    const badUrl = await api('POST', '/call-flows', {
      name: 'Bad',
      steps: [{ type: 'redirect', url: 'https://user:pw@example.com/next' }],
    });
    assert.equal(badUrl.status, 400);
    assert.equal(badUrl.body.code, 'INVALID_FLOW_STEP');
    assert.equal(badUrl.body.data.path, 'steps.0.url');
  });

  test("the app's steps drive the call: a gather whose actionUrl gets the keys and answers a dial to an extension", async () => {
    app.routes.set('/voice', () => ({
      body: {
        steps: [
          {
            type: 'gather',
            input: ['dtmf'],
            numDigits: 1,
            timeoutSeconds: 30,
            prompt: { type: 'say', text: 'Press 1 for sales.' },
            actionUrl: `${app.url}/menu`,
          },
          { type: 'say', text: 'Never reached: the action answers instead.' },
        ],
      },
    }));
    app.routes.set('/menu', (request) =>
      request.body.digits === '1'
        ? { body: { steps: [dialSales()] } }
        : { body: { steps: [{ type: 'hangup' }] } },
    );
    await routeToApp('/voice');
    const arrived = await arrive();
    // The app's gather answered the call to speak its menu.
    assert.equal(arrived.status, 'in_progress');
    await drive(arrived.id, { event: 'digits', digits: '1' });
    await answeredBySales(arrived.id);

    const [first] = requestsTo('/voice', arrived.id);
    assert.ok(first?.verified, 'the first request verifies with standardwebhooks and the signing secret');
    assert.deepEqual(first.body, {
      callId: arrived.id,
      from: '+14155550198',
      to: who.number,
      direction: 'inbound',
      status: 'queued',
    });
    assert.match(first.headers['webhook-id']!, /^msg_/);
    const [menu] = requestsTo('/menu', arrived.id);
    assert.ok(menu?.verified);
    assert.deepEqual(menu.body, { ...first.body, status: 'in_progress', digits: '1' });
    assert.notEqual(menu.headers['webhook-id'], first.headers['webhook-id']);
    // The call's end goes to the route's URL the same way, signed, its final status in `status`.
    const told = await until(
      () => requestsTo('/voice', arrived.id),
      (all) => all.length === 2,
    );
    assert.ok(told[1]!.verified);
    assert.deepEqual(told[1]!.body, { ...first.body, status: 'completed' });
  });

  test('an app that times out gets the fallback flow: the caller reaches sales, the call is not dropped', async () => {
    const fallbackId = await fallbackFlow();
    app.routes.set('/slow', () => ({ delayMs: 1500, body: { steps: [{ type: 'hangup' }] } }));
    await routeToApp('/slow', fallbackId);
    const started = performance.now();
    const arrived = await arrive();
    assert.ok(performance.now() - started < 1400, 'the deadline (300 ms here) ended the wait');
    await answeredBySales(arrived.id);
    assert.ok(t.logs().some((line) => line.includes(arrived.id) && /Timed out after 0.3 s/.test(line)));
  });

  test('invalid JSON, invalid steps, a 500, a redirect or an answer over 64 KB all get the fallback flow', async () => {
    const fallbackId = await fallbackFlow();
    const answers: [string, AppAnswer, RegExp][] = [
      ['/not-json', { raw: '<Response><Say>TwiML</Say></Response>' }, /the answer is not JSON/],
      ['/no-steps', { body: { verbs: [] } }, /not an object with `steps`/],
      [
        '/bad-step',
        {
          body: {
            steps: [{ type: 'dial', targets: [{ type: 'extension', target: 'ext_0000000001nowhere' }] }],
          },
        },
        /invalid steps: steps\.0\.targets\.0\.target names no extension/,
      ],
      ['/broken', { status: 500, body: { error: 'boom' } }, /answered HTTP 500/],
      [
        '/huge',
        { body: { steps: [{ type: 'hangup' }], padding: 'x'.repeat(70_000) } },
        /the answer is longer than 65536 bytes/,
      ],
      ['/moved', { status: 302, body: {} }, /answered HTTP 302/],
    ];
    for (const [path, answer, reason] of answers) {
      app.routes.set(path, () => answer);
      await routeToApp(path, fallbackId);
      const arrived = await arrive();
      await answeredBySales(arrived.id);
      assert.ok(
        t.logs().some((line) => line.includes(arrived.id) && reason.test(line)),
        `the log says why for ${path}`,
      );
    }
  });

  test('POST /calls/{id}/hangup while the app is being asked ends the call once it answers', async () => {
    app.routes.set('/thinking', () => ({ delayMs: 150, body: { steps: [dialSales()] } }));
    await routeToApp('/thinking');
    const arriving = t.admin('POST', '/test/pbx/inbound', { from: '+14155550198', to: who.number });
    const [asked] = await until(
      () => app.received.filter((each) => each.path === '/thinking'),
      (all) => all.length === 1,
    );
    const hungUp = await api('POST', `/calls/${asked!.body.callId}/hangup`);
    assert.equal(hungUp.status, 200, hungUp.text);
    assert.equal((await arriving).status, 201);
    const done = await ended(asked!.body.callId);
    assert.deepEqual([done.status, done.hangupCause], ['canceled', 'hangup_requested']);
  });

  test('without a fallback flow a failing app gets an apology and the call ends failed, webhook_failed', async () => {
    app.routes.set('/down', () => ({ status: 503, raw: 'down' }));
    await routeToApp('/down');
    const arrived = await arrive();
    const done = await ended(arrived.id);
    assert.deepEqual([done.status, done.hangupCause], ['failed', 'webhook_failed']);
    assert.ok(done.answeredAt, 'answered to hear the apology');
  });

  test("a gather's actionUrl that fails runs the gather's otherwise", async () => {
    app.routes.set('/menu-broken', () => ({ raw: 'not json' }));
    const flow = await api('POST', '/call-flows', {
      name: 'Menu with an action',
      steps: [
        {
          type: 'gather',
          input: ['dtmf'],
          numDigits: 1,
          timeoutSeconds: 30,
          actionUrl: `${app.url}/menu-broken`,
          otherwise: [dialSales()],
        },
      ],
    });
    assert.equal(flow.status, 201, flow.text);
    await api('PATCH', `/numbers/${numberId}`, { voiceRoute: { type: 'flow', target: flow.body.data.id } });
    const arrived = await arrive();
    await drive(arrived.id, { event: 'digits', digits: '5' });
    await answeredBySales(arrived.id);
    const [action] = requestsTo('/menu-broken', arrived.id);
    assert.ok(action?.verified, "a stored flow's actionUrl is signed the same way");
    assert.equal(action.body.digits, '5');
  });

  test('a redirect to a url runs the steps the app answers in place of the rest of the flow', async () => {
    app.routes.set('/next', () => ({ body: { steps: [{ type: 'say', text: 'Connecting.' }, dialSales()] } }));
    const flow = await api('POST', '/call-flows', {
      name: 'Hand over',
      steps: [{ type: 'redirect', url: `${app.url}/next` }, { type: 'hangup' }],
    });
    assert.equal(flow.status, 201, flow.text);
    await api('PATCH', `/numbers/${numberId}`, { voiceRoute: { type: 'flow', target: flow.body.data.id } });
    const arrived = await arrive();
    await answeredBySales(arrived.id);
    assert.equal(requestsTo('/next', arrived.id).length, 1);
  });

  test('the signing secret: flows:write on a key, owners and admins in the portal; one per organization', async () => {
    const reader = await sender(t, {}, { scopes: ['flows:read'], number: null });
    const byReader = await t.request('GET', '/api/v2/call-flows/signing-secret', { apiKey: reader.key });
    assert.equal(byReader.status, 403);
    assert.equal(byReader.body.code, 'insufficient_scope');
    const rotateByReader = await t.request('POST', '/api/v2/call-flows/signing-secret/rotate', {
      apiKey: reader.key,
    });
    assert.equal(rotateByReader.status, 403);
    const ours = (await api('GET', '/call-flows/signing-secret')).body.data.secret;
    const owner = await signIn(t, await createUser(t, { role: 'owner', organizationIds: [who.id] }));
    const member = await signIn(t, await createUser(t, { role: 'member', organizationIds: [who.id] }));
    const inPortal = await t.request('GET', '/v2/portal/call-flows/signing-secret', { token: owner });
    assert.equal(inPortal.status, 200, inPortal.text);
    assert.equal(inPortal.body.data.secret, ours, 'the portal twin reads the same secret');
    const byMember = await t.request('GET', '/v2/portal/call-flows/signing-secret', { token: member });
    assert.equal(byMember.status, 403);
    assert.ok(isShapeA(byMember.body));
    // Another organization has a secret of its own; it is sealed at rest, never stored in the clear.
    const other = await sender(t, {}, { number: null });
    const theirs = await t.request('GET', '/api/v2/call-flows/signing-secret', { apiKey: other.key });
    assert.match(theirs.body.data.secret, /^whsec_/);
    assert.notEqual(theirs.body.data.secret, ours);
    const stored = await t.ctx.db.query<{ secret_sealed: string }>(
      'SELECT secret_sealed FROM flow_app_secrets WHERE organization_id = $1',
      [who.id],
    );
    assert.equal(stored.length, 1);
    assert.ok(!stored[0]!.secret_sealed.includes(ours.slice('whsec_'.length)));
  });

  test('rotating the signing secret: requests carry both signatures for 24 hours', async () => {
    const before = (await api('GET', '/call-flows/signing-secret')).body.data;
    const rotated = await api('POST', '/call-flows/signing-secret/rotate');
    assert.equal(rotated.status, 200, rotated.text);
    assert.match(rotated.body.data.secret, /^whsec_/);
    assert.notEqual(rotated.body.data.secret, before.secret);
    assert.ok(rotated.body.data.previousSecretExpiresAt);
    assert.equal((await api('GET', '/call-flows/signing-secret')).body.data.secret, rotated.body.data.secret);
    // The app holds both: each verifies the request on its own (the verifier checks every signature given).
    app.secrets.splice(0, app.secrets.length, before.secret, rotated.body.data.secret);
    app.routes.set('/rotated', () => ({ body: { steps: [dialSales()] } }));
    await routeToApp('/rotated');
    const arrived = await arrive();
    await answeredBySales(arrived.id);
    const [request] = requestsTo('/rotated', arrived.id);
    assert.ok(request?.verified);
    assert.equal(request.headers['webhook-signature']!.split(' ').length, 2);
  });
});

describe('flows from an app: the SSRF rules in production', () => {
  let t: TestApp;
  let who: Sender;
  before(async () => {
    t = await startTestApp({ config: { appEnv: 'production', trustProxy: true } });
    who = await sender(t);
  });
  after(() => t.close());

  test("a private or plain http URL is refused when saved, with the webhooks module's error", async () => {
    const numberId = (await t.request('GET', '/api/v2/numbers', { apiKey: who.key })).body.data[0].id;
    for (const target of [
      'https://127.0.0.1/voice',
      'https://10.0.0.7/voice',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/voice',
      'http://93.184.215.14/voice',
    ]) {
      const refused = await t.request('PATCH', `/api/v2/numbers/${numberId}`, {
        apiKey: who.key,
        body: { voiceRoute: { type: 'webhook', target } },
      });
      assert.equal(refused.status, 400, target);
      assert.match(
        refused.body.error,
        /^voiceRoute\.target: url must (point to a public address|use https)/,
        target,
      );
    }
    const actionUrl = await t.request('POST', '/api/v2/call-flows', {
      apiKey: who.key,
      body: {
        name: 'Private',
        steps: [{ type: 'gather', input: ['dtmf'], actionUrl: 'https://192.168.0.10/menu' }],
      },
    });
    assert.equal(actionUrl.status, 400);
    assert.equal(actionUrl.body.data.path, 'steps.0.actionUrl');
    assert.match(actionUrl.body.error, /public address/);
    const ok = await t.request('PATCH', `/api/v2/numbers/${numberId}`, {
      apiKey: who.key,
      body: { voiceRoute: { type: 'webhook', target: 'https://93.184.215.14/voice' } },
    });
    assert.equal(ok.status, 200, ok.text);
  });
});
