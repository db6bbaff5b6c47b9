// The SSRF guard (issue 7): in production a webhook may only reach public addresses over https, checked on
// the resolved address (not the name) at creation, at every change and at every delivery, with the socket
// pinned to the addresses that were checked. Outside production, http and private addresses are allowed for
// local development (the delivery tests use a loopback receiver).
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { WebhookTransport } from '../src/modules/webhooks/transport.ts';
import {
  checkHost,
  ForbiddenAddressError,
  isForbiddenAddress,
  pinnedLookup,
} from '../src/platform/http/address-guard.ts';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';

describe('address rules', () => {
  test('loopback, private, link-local, unique-local, CGNAT, multicast and unspecified are forbidden', () => {
    for (const address of [
      '127.0.0.1',
      '127.255.0.9',
      '10.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '100.127.255.254',
      '0.0.0.0',
      '224.0.0.1',
      '239.255.255.250',
      '255.255.255.255',
      '::',
      '::1',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:a9fe:a9fe',
      '0:0:0:0:0:ffff:c0a8:0101',
      '64:ff9b::a00:1',
      '::ffff:0:7f00:1',
      '2002:7f00:1::',
      '[::1]',
      'not-an-ip',
    ]) {
      assert.equal(isForbiddenAddress(address), true, address);
    }
    for (const address of [
      '8.8.8.8',
      '93.184.215.14',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700:4700::1111',
      '::ffff:8.8.8.8',
    ]) {
      assert.equal(isForbiddenAddress(address), false, address);
    }
  });

  test('a name is judged by every address it resolves to', async () => {
    const resolver = (answers: string[]) => async () =>
      answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    await assert.rejects(checkHost('hooks.example.com', resolver(['127.0.0.1'])), ForbiddenAddressError);
    await assert.rejects(
      checkHost('hooks.example.com', resolver(['93.184.215.14', '10.0.0.7'])),
      ForbiddenAddressError,
    );
    await assert.rejects(
      checkHost('hooks.example.com', resolver(['::ffff:169.254.169.254'])),
      ForbiddenAddressError,
    );
    await assert.rejects(checkHost('localhost', resolver(['93.184.215.14'])), ForbiddenAddressError);
    await assert.rejects(checkHost('[::1]', resolver([])), ForbiddenAddressError);
    assert.deepEqual(await checkHost('hooks.example.com', resolver(['93.184.215.14'])), [
      { address: '93.184.215.14', family: 4 },
    ]);
  });

  test('the socket connects only to the checked addresses, whatever the name resolves to later', () => {
    const lookup = pinnedLookup([
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ]);
    lookup('rebinding.example.com', { all: true }, (error, addresses) => {
      assert.equal(error, null);
      assert.deepEqual(
        (addresses as { address: string }[]).map((a) => a.address),
        ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
      );
    });
    lookup('rebinding.example.com', { family: 4 }, (error, address, family) => {
      assert.equal(error, null);
      assert.equal(address, '93.184.215.14');
      assert.equal(family, 4);
    });
  });

  test('a socket given the pinned lookup connects to those addresses and asks DNS nothing', async () => {
    const receiver = await startReceiver(() => Date.now());
    try {
      const port = Number(new URL(receiver.url).port);
      // `.invalid` never resolves (RFC 6761): reaching the receiver proves the name was not looked up again.
      const status = await new Promise<number>((resolve, reject) => {
        const request = http.request(
          {
            host: 'rebinding.invalid',
            port,
            path: '/pinned',
            method: 'POST',
            agent: false,
            lookup: pinnedLookup([{ address: '127.0.0.1', family: 4 }]),
          },
          (response) => {
            response.resume();
            resolve(response.statusCode!);
          },
        );
        request.on('error', reject);
        request.end('{}');
      });
      assert.equal(status, 200);
      assert.equal(receiver.received[0]!.path, '/pinned');
      assert.equal(receiver.received[0]!.headers.host, `rebinding.invalid:${port}`);
    } finally {
      await receiver.close();
    }
  });

  test('a guarded transport resolves once, refuses a private answer and never connects', async () => {
    const receiver = await startReceiver(() => Date.now());
    try {
      let lookups = 0;
      const transport = new WebhookTransport({
        guarded: true,
        resolver: async () => {
          lookups++;
          return [{ address: '127.0.0.1', family: 4 }];
        },
      });
      const port = new URL(receiver.url).port;
      const result = await transport.post(`https://hooks.example.com:${port}/x`, {}, '{}');
      assert.equal(result.statusCode, null);
      assert.match(result.error!, /^Refused: hooks.example.com resolves to 127.0.0.1/);
      assert.equal(lookups, 1);
      const plain = await transport.post(`http://93.184.215.14:${port}/x`, {}, '{}');
      assert.match(plain.error!, /https/);
      assert.equal(receiver.received.length, 0);
      // Unguarded (development), the same loopback receiver is reachable.
      const open = new WebhookTransport({ guarded: false });
      assert.equal((await open.post(`${receiver.url}/x`, {}, '{}')).statusCode, 200);
    } finally {
      await receiver.close();
    }
  });
});

describe('SSRF guard in production', () => {
  let t: TestApp;
  let receiver: Receiver;
  let token: string;
  before(async () => {
    t = await startTestApp({ config: { appEnv: 'production', trustProxy: true } });
    receiver = await startReceiver(() => t.ctx.clock.nowMs());
    token = await signIn(t, await createUser(t, { role: 'owner' }));
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  test('creating or changing a webhook to a non-public or non-https URL is refused (400)', async () => {
    const port = new URL(receiver.url).port;
    for (const url of [
      `https://localhost:${port}/hooks`,
      'https://api.localhost/hooks',
      `https://127.0.0.1:${port}/hooks`,
      'https://10.1.2.3/hooks',
      'https://169.254.169.254/latest/meta-data',
      'https://100.64.0.1/hooks',
      'https://0.0.0.0/hooks',
      'https://[::1]/hooks',
      'https://[::ffff:127.0.0.1]/hooks',
      'https://[fe80::1]/hooks',
      'https://[fd00::1]/hooks',
      'http://93.184.215.14/hooks',
      `${receiver.url}/hooks`,
    ]) {
      const res = await t.request('POST', '/api/webhooks', {
        token,
        body: { url, events: ['webhook.test'] },
      });
      assert.equal(res.status, 400, url);
      assert.ok(isShapeA(res.body));
      assert.match(res.body.message, /public address|https/, url);
    }
    const ok = await t.request('POST', '/api/webhooks', {
      token,
      body: { url: 'https://93.184.215.14/hooks', events: ['webhook.test'] },
    });
    assert.equal(ok.status, 201);
    const patched = await t.request('PATCH', `/api/webhooks/${ok.body.data.id}`, {
      token,
      body: { url: 'https://192.168.0.10/hooks' },
    });
    assert.equal(patched.status, 400);
    assert.equal(receiver.received.length, 0);
  });

  test('at delivery the resolved address is checked again: loopback and private targets are never contacted', async () => {
    const port = new URL(receiver.url).port;
    for (const target of [
      `https://localhost:${port}/rebound`,
      `https://127.0.0.1:${port}/rebound`,
      'https://10.0.0.1/rebound',
      'https://169.254.169.254/rebound',
      `http://93.184.215.14:${port}/plain`,
    ]) {
      const created = await t.request('POST', '/api/webhooks', {
        token,
        body: { url: 'https://93.184.215.14/hooks', events: ['webhook.test'] },
      });
      // As if the URL had become dangerous after it was accepted (a name now resolving elsewhere).
      await t.ctx.db.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [
        created.body.data.id,
        target,
      ]);
      const sent = await t.request('POST', `/api/webhooks/${created.body.data.id}/test`, { token });
      assert.equal(sent.status, 202);
      await t.ctx.jobs.drain();
      const log = await t.request('GET', `/api/webhooks/${created.body.data.id}/deliveries`, { token });
      const [delivery] = log.body.data;
      assert.equal(delivery.lastStatusCode, null, target);
      assert.match(delivery.lastError, /^(Refused|Only https)/, target);
      assert.equal(delivery.status, 'pending', 'it is retried: the address may become valid again');
    }
    assert.equal(receiver.received.length, 0);
  });
});
