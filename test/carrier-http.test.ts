// The HTTP carrier adapter against a local server that speaks the provider's documented API (Telnyx's
// Messaging API v2: POST /v2/messages with a Bearer key; webhooks signed with Ed25519 over `timestamp|body`).
// Messages go in through our API and leave through the dispatch job; the provider's webhooks come back to
// POST /carriers/http/webhook over a real socket: submit with an idempotency key, a refusal, a provider
// outage retried without a second message, a status report, an inbound text, a forged or stale signature
// refused, and a duplicate webhook ignored.
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { MediaProbe } from '../src/modules/messaging/media-probe.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, runFor, type Sender, sender } from './helpers/messaging.ts';

const API_KEY = 'KEY0123456789abcdef';

interface Submit {
  key: string | undefined;
  authorization: string | undefined;
  body: { from: string; to: string; text: string; media_urls?: string[] };
  id: string;
}

/** The provider: its messages endpoint, and its webhooks signed with its private key. */
class Provider {
  readonly submits: Submit[] = [];
  /** Answers the next N submits with 503, as an outage would. */
  failNext = 0;
  readonly keys = generateKeyPairSync('ed25519');
  private server?: Server;
  url = '';

  /** `now`: the clock its webhooks are stamped with (the app's, as a provider's clock agrees with ours). */
  constructor(private readonly now: () => number) {}

  get publicKey(): string {
    // The raw 32 bytes: the end of the SubjectPublicKeyInfo.
    return this.keys.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');
  }

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      let raw = '';
      request.on('data', (chunk) => {
        raw += chunk;
      });
      request.on('end', () => {
        const json = (status: number, body: unknown) => {
          response.writeHead(status, { 'content-type': 'application/json' });
          response.end(JSON.stringify(body));
        };
        if (request.method !== 'POST' || request.url !== '/v2/messages') return json(404, { errors: [] });
        if (request.headers.authorization !== `Bearer ${API_KEY}`) {
          return json(401, { errors: [{ code: '10009', title: 'Authentication failed' }] });
        }
        const body = JSON.parse(raw);
        const key = request.headers['idempotency-key'] as string | undefined;
        if (this.failNext > 0) {
          this.failNext--;
          this.submits.push({ key, authorization: request.headers.authorization, body, id: '' });
          return json(503, { errors: [{ code: '10011', title: 'Service unavailable' }] });
        }
        if (String(body.to).endsWith('0666')) {
          return json(422, {
            errors: [
              { code: '40310', title: 'Invalid destination', detail: 'The destination is not reachable' },
            ],
          });
        }
        // The provider's own idempotency: the same key answers the same message.
        const earlier = this.submits.find((each) => each.key === key && each.id);
        const id = earlier?.id ?? randomUUID();
        this.submits.push({ key, authorization: request.headers.authorization, body, id });
        json(200, {
          data: {
            record_type: 'message',
            id,
            from: { phone_number: body.from },
            to: [{ phone_number: body.to, status: 'queued' }],
            text: body.text,
          },
        });
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** A webhook as the provider sends it: body and signature headers. */
  webhook(
    eventType: string,
    payload: Record<string, unknown>,
    options: { timestamp?: number; signWith?: ReturnType<typeof generateKeyPairSync>['privateKey'] } = {},
  ) {
    const body = JSON.stringify({
      data: { event_type: eventType, id: randomUUID(), occurred_at: new Date().toISOString(), payload },
      meta: { attempt: 1, delivered_to: 'http://example.invalid' },
    });
    const timestamp = String(options.timestamp ?? Math.floor(this.now() / 1000));
    const signature = sign(
      null,
      Buffer.from(`${timestamp}|${body}`),
      options.signWith ?? this.keys.privateKey,
    );
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'telnyx-timestamp': timestamp,
        'telnyx-signature-ed25519': signature.toString('base64'),
      },
    };
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}

describe('the HTTP carrier against a provider speaking its documented API', () => {
  let provider: Provider;
  let t: TestApp;
  let who: Sender;

  before(async () => {
    provider = new Provider(() => t.ctx.clock.now().getTime());
    await provider.start();
    t = await startTestApp({
      config: { httpCarrier: { baseUrl: provider.url, apiKey: API_KEY, publicKey: provider.publicKey } },
    });
    who = await sender(t, {}, { number: '+12025550188' });
  });
  after(async () => {
    await t.close();
    await provider.close();
  });

  const send = async (to: string, message: string) => {
    const res = await t.request('POST', '/api/v2/messages/send', { apiKey: who.key, body: { to, message } });
    assert.equal(res.status, 202, res.text);
    return res.body.data.id as string;
  };
  const message = async (id: string) =>
    (await t.request('GET', `/api/v2/messages/${id}`, { apiKey: who.key })).body.data;
  /** Runs the dispatch (and receipt) jobs due over the next `seconds` of the test clock. */
  const run = (seconds = 2) => runFor(t, seconds);
  const post = (hook: { body: string; headers: Record<string, string> }, name = 'http') =>
    fetch(`${t.url}/carriers/${name}/webhook`, { method: 'POST', headers: hook.headers, body: hook.body });
  const carrierIdOf = async (id: string) =>
    (
      await t.ctx.db.query<{ carrier_message_id: string }>(
        'SELECT carrier_message_id FROM messages WHERE id = $1',
        [id],
      )
    )[0]!.carrier_message_id;

  test('submit: the provider gets the text with our key and an Idempotency-Key; its id is kept', async () => {
    const id = await send('+14155550201', 'Your order has shipped');
    await run();
    const submit = provider.submits.find((each) => each.body.to === '+14155550201')!;
    assert.ok(submit, 'submitted');
    assert.equal(submit.authorization, `Bearer ${API_KEY}`);
    assert.equal(submit.key, id, 'the Idempotency-Key is our message id');
    assert.deepEqual(submit.body, {
      from: '+12025550188',
      to: '+14155550201',
      text: 'Your order has shipped',
    });
    assert.equal((await message(id)).status, 'sent');
    assert.equal(await carrierIdOf(id), submit.id);
  });

  test('a refusal fails the message with the provider’s code; an outage is retried and sends once', async () => {
    const refused = await send('+14155550666', 'Nobody home');
    await run();
    const failed = await message(refused);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.errorCode, 'http_40310');
    assert.equal(failed.errorMessage, 'The destination is not reachable');

    provider.failNext = 1;
    const id = await send('+14155550202', 'After the outage');
    await run();
    assert.equal((await message(id)).status, 'queued', 'kept while the provider is down');
    await run(10); // the dispatch job's next attempt (5 s later)
    assert.equal((await message(id)).status, 'sent');
    const attempts = provider.submits.filter((each) => each.body.to === '+14155550202');
    assert.equal(attempts.length, 2);
    assert.equal(attempts[0]!.key, attempts[1]!.key, 'the retry carries the same key');
    assert.equal(attempts.filter((each) => each.id).length, 1, 'one message at the provider');
  });

  test('a status webhook delivers the message; the same webhook twice changes nothing', async () => {
    const id = await send('+14155550203', 'Track it here');
    await run();
    const hook = provider.webhook('message.finalized', {
      id: await carrierIdOf(id),
      to: [{ phone_number: '+14155550203', status: 'delivered' }],
    });
    assert.equal((await post(hook)).status, 200);
    await run(2);
    const delivered = await message(id);
    assert.equal(delivered.status, 'delivered');
    assert.equal((await post(hook)).status, 200, 'a repeat is acknowledged');
    await run(2);
    assert.deepEqual(await message(id), delivered);

    const failing = await send('+14155550204', 'Will not arrive');
    await run();
    const failure = provider.webhook('message.finalized', {
      id: await carrierIdOf(failing),
      to: [{ phone_number: '+14155550204', status: 'delivery_failed' }],
    });
    assert.equal((await post(failure)).status, 200);
    await run(2);
    assert.equal((await message(failing)).status, 'undelivered');
  });

  test('an inbound STOP is received and acted on once, however often the provider sends it', async () => {
    const providerId = randomUUID();
    const hook = provider.webhook('message.received', {
      id: providerId,
      from: { phone_number: '+14155550205' },
      to: [{ phone_number: '+12025550188' }],
      text: 'STOP',
    });
    assert.equal((await post(hook)).status, 200);
    assert.equal((await post(hook)).status, 200, 'the repeat is acknowledged');
    assert.equal(
      await countRows(t, "SELECT 1 FROM messages WHERE direction = 'inbound' AND from_number = $1", [
        '+14155550205',
      ]),
      1,
      'stored once',
    );
    assert.equal(
      await countRows(t, "SELECT 1 FROM messages WHERE origin = 'auto_reply' AND to_number = $1", [
        '+14155550205',
      ]),
      1,
      'one confirmation',
    );
    const [inbound] = (await t.request('GET', '/api/v2/messages?direction=inbound', { apiKey: who.key })).body
      .data;
    assert.equal(inbound.body, 'STOP');
    const refused = await t.request('POST', '/api/v2/messages/send', {
      apiKey: who.key,
      body: { to: '+14155550205', message: 'Still there?' },
    });
    assert.equal(refused.body.code, 'RECIPIENT_OPTED_OUT', refused.text);
  });

  test('forged, stale or unsigned webhooks are refused and change nothing; another carrier’s path is 404', async () => {
    const before = await countRows(t, "SELECT 1 FROM messages WHERE direction = 'inbound'");
    const payload = {
      id: randomUUID(),
      from: { phone_number: '+14155550206' },
      to: [{ phone_number: '+12025550188' }],
      text: 'Hello',
    };
    const forger = generateKeyPairSync('ed25519');
    const forged = await post(provider.webhook('message.received', payload, { signWith: forger.privateKey }));
    assert.equal(forged.status, 401);
    const refusal = await forged.json();
    assert.equal(refusal.code, 'INVALID_SIGNATURE');
    assert.match(refusal.message, /bad signature/);

    const stale = provider.webhook('message.received', payload, {
      timestamp: Math.floor(Date.now() / 1000) - 3600,
    });
    assert.equal((await post(stale)).status, 401);

    const genuine = provider.webhook('message.received', payload);
    const tampered = { ...genuine, body: genuine.body.replace('Hello', 'Hullo') };
    assert.equal((await post(tampered)).status, 401);
    const unsigned = { body: genuine.body, headers: { 'content-type': 'application/json' } };
    assert.equal((await post(unsigned)).status, 401);
    assert.equal((await post(genuine, 'smpp')).status, 404);
    assert.equal(await countRows(t, "SELECT 1 FROM messages WHERE direction = 'inbound'"), before);

    assert.equal((await post(genuine)).status, 200, 'the genuine one passes');
    assert.equal(await countRows(t, "SELECT 1 FROM messages WHERE direction = 'inbound'"), before + 1);
  });
});

describe('hosted media is checked before the HTTP carrier fetches it', () => {
  const resolver = async (host: string) => {
    const table: Record<string, string> = {
      'cdn.example.com': '93.184.216.34',
      'intranet.example.com': '10.0.0.5',
      'metadata.example.com': '169.254.169.254',
    };
    if (!table[host]) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return [{ address: table[host]!, family: 4 }];
  };

  /** A media host on loopback: what each path answers to HEAD (and GET). */
  async function mediaHost() {
    const asked: string[] = [];
    const server = createServer((request, response) => {
      asked.push(`${request.method} ${request.url}`);
      const answers: Record<string, [number, Record<string, string>]> = {
        '/menu.jpg': [200, { 'content-type': 'image/jpeg', 'content-length': '5120' }],
        '/no-head.png': [request.method === 'HEAD' ? 405 : 200, { 'content-type': 'image/png' }],
        '/moved.gif': [302, { location: '/menu.jpg' }],
        '/page.html': [200, { 'content-type': 'text/html; charset=utf-8' }],
        '/huge.jpg': [200, { 'content-type': 'image/jpeg', 'content-length': '9000000' }],
        '/down.jpg': [503, {}],
      };
      const [status, headers] = answers[request.url ?? ''] ?? [404, {}];
      response.writeHead(status, headers);
      response.end(request.method === 'GET' ? 'x'.repeat(10) : undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked, server };
  }

  /** An app whose carrier is the HTTP provider (a local one), and a media host, for `work`; all closed after. */
  async function withHttpCarrier(
    work: (setup: {
      t: TestApp;
      host: Awaited<ReturnType<typeof mediaHost>>;
      provider: Provider;
    }) => Promise<void>,
  ) {
    const host = await mediaHost();
    const provider = new Provider(() => Date.now());
    await provider.start();
    const t = await startTestApp({
      config: { httpCarrier: { baseUrl: provider.url, apiKey: API_KEY, publicKey: provider.publicKey } },
    });
    try {
      await work({ t, host, provider });
    } finally {
      await t.close();
      await provider.close();
      host.server.close();
    }
  }

  test('guarded (production): http, loopback, private and metadata addresses are refused unasked', async () => {
    const probe = new MediaProbe({ guarded: true, resolver });
    for (const [url, why] of [
      ['http://cdn.example.com/menu.jpg', /must be https/],
      ['https://127.0.0.1/menu.jpg', /not a public address/],
      ['https://localhost/menu.jpg', /this machine/],
      ['https://intranet.example.com/menu.jpg', /10\.0\.0\.5/],
      ['https://metadata.example.com/latest', /169\.254\.169\.254/],
      ['https://[::1]/menu.jpg', /not a public address/],
      ['not a url', /not a URL/],
    ] as const) {
      const refusal = await probe.refusal([url]);
      assert.equal(refusal?.errorCode, 'MEDIA_URL_FORBIDDEN', url);
      assert.match(refusal!.errorMessage, why);
    }
    await assert.rejects(probe.refusal(['https://gone.example.com/x.jpg']), /ENOTFOUND/, 'tried again later');
  });

  test('the media is asked for: an image passes (HEAD, GET where HEAD is refused, redirects); others are refused', async () => {
    const host = await mediaHost();
    try {
      const probe = new MediaProbe({ guarded: false });
      assert.equal(await probe.refusal([`${host.url}/menu.jpg`, `${host.url}/no-head.png`]), undefined);
      assert.equal(await probe.refusal([`${host.url}/moved.gif`]), undefined, 'followed to the image');
      assert.deepEqual(host.asked.slice(0, 3), ['HEAD /menu.jpg', 'HEAD /no-head.png', 'GET /no-head.png']);
      assert.equal((await probe.refusal([`${host.url}/page.html`]))?.errorCode, 'MEDIA_TYPE_UNSUPPORTED');
      assert.equal((await probe.refusal([`${host.url}/huge.jpg`]))?.errorCode, 'MEDIA_TOO_LARGE');
      assert.equal((await probe.refusal([`${host.url}/missing.jpg`]))?.errorCode, 'MEDIA_URL_UNREACHABLE');
      await assert.rejects(probe.refusal([`${host.url}/down.jpg`]), /503/, 'a 5xx is tried again later');
      const before = host.asked.length;
      assert.equal(await probe.refusal([`${host.url}/menu.jpg`]), undefined);
      assert.equal(host.asked.length, before, 'remembered: not asked again within five minutes');
    } finally {
      host.server.close();
    }
  });

  test("a campaign's hosted media is asked for at launch as its messages' would be (issue 31 finding 7)", () =>
    withHttpCarrier(async ({ t, host }) => {
      const who = await sender(t);
      const api = (method: string, path: string, body?: unknown) =>
        t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
      const list = (await api('POST', '/contact-lists', { name: 'Menu fans' })).body.data.id as string;
      const contact = (await api('POST', '/contacts', { phone: '+14155550231' })).body.data.id as string;
      assert.equal(
        (await api('POST', `/contact-lists/${list}/members`, { contactIds: [contact] })).status,
        200,
      );
      const create = (mediaUrls: string[]) =>
        api('POST', '/campaigns', { name: 'Menu', message: 'Our menu', contactListIds: [list], mediaUrls });
      // The message media rule at create: credentials and whitespace are refused, as for a send.
      for (const url of [`http://user:secret@127.0.0.1/menu.jpg`, `${host.url}/menu .jpg`]) {
        const refused = await create([url]);
        assert.equal(refused.status, 400, refused.text);
        assert.equal(refused.body.code, 'MEDIA_MALFORMED');
      }
      // A page is not an image: the launch is refused with the code each message would have failed with.
      const page = (await create([`${host.url}/page.html`])).body.data.id as string;
      const refused = await api('POST', `/campaigns/${page}/launch`);
      assert.equal(refused.status, 422, refused.text);
      assert.equal(refused.body.code, 'MEDIA_TYPE_UNSUPPORTED');
      assert.equal((await api('GET', `/campaigns/${page}`)).body.data.status, 'draft');
      assert.equal(await countRows(t, 'SELECT 1 FROM messages WHERE campaign_id = $1', [page]), 0);
      assert.ok(host.asked.includes('HEAD /page.html'), 'the media host was asked');
      // An image launches.
      const good = (await create([`${host.url}/menu.jpg`])).body.data.id as string;
      const launched = await api('POST', `/campaigns/${good}/launch`);
      assert.equal(launched.status, 200, launched.text);
    }));

  test('an MMS to the HTTP carrier: good media goes as media_urls; a page or an upload fails before the provider sees it', () =>
    withHttpCarrier(async ({ t, host, provider }) => {
      const who = await sender(t);
      const send = async (body: Record<string, unknown>) => {
        const res = await t.request('POST', '/api/v2/messages/send', { apiKey: who.key, body });
        assert.equal(res.status, 202, res.text);
        return res.body.data.id as string;
      };
      const good = await send({ to: '+14155550207', message: 'Menu', media: [`${host.url}/menu.jpg`] });
      const page = await send({ to: '+14155550208', message: 'Menu', media: [`${host.url}/page.html`] });
      const upload = await send({
        to: '+14155550209',
        message: 'Menu',
        mediaFiles: [
          {
            contentType: 'image/gif',
            data: Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;').toString('base64'),
          },
        ],
      });
      for (let i = 0; i < 3; i++) {
        t.ctx.clock.advance(1);
        await t.ctx.jobs.drain();
      }
      const get = async (id: string) =>
        (await t.request('GET', `/api/v2/messages/${id}`, { apiKey: who.key })).body.data;
      assert.equal((await get(good)).status, 'sent');
      assert.deepEqual(provider.submits.find((each) => each.body.to === '+14155550207')?.body.media_urls, [
        `${host.url}/menu.jpg`,
      ]);
      assert.equal((await get(page)).errorCode, 'MEDIA_TYPE_UNSUPPORTED');
      assert.equal((await get(upload)).errorCode, 'uploaded_media_not_supported');
      assert.ok(!provider.submits.some((each) => ['+14155550208', '+14155550209'].includes(each.body.to)));
    }));
});
