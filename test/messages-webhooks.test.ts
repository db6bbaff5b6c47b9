// Messaging and webhooks together, end to end: a message sent through the developer API reaches a real
// receiver as signed message.sent and message.delivered events whose data is the message as the API shows
// it; an inbound text arrives as message.received, and a STOP as contact.opted_out.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { type Receiver, startReceiver, verifyWithBoth } from './helpers/receiver.ts';

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

test('a sent, delivered and answered message reaches the receiver as signed events', async () => {
  const org = await sender(t);
  const owner = await createUser(t, { role: 'owner', organizationIds: [org.id] });
  const token = await signIn(t, owner);
  const hook = await t.request('POST', '/api/webhooks', {
    token,
    body: {
      url: `${receiver.url}/hooks`,
      events: ['message.sent', 'message.delivered', 'message.received', 'contact.opted_out'],
    },
  });
  assert.equal(hook.status, 201, hook.text);
  const secret = hook.body.data.secret as string;

  const sent = await t.request('POST', '/api/v2/messages/send', {
    apiKey: org.key,
    body: { to: '+12025550177', message: 'Your table is ready' },
  });
  assert.equal(sent.status, 202, sent.text);
  const messageId = sent.body.data.id as string;
  await t.ctx.jobs.drain();
  const receipt = await t.admin('POST', '/test/carrier/receipts', { messageId, status: 'delivered' });
  assert.equal(receipt.status, 200, receipt.text);
  await t.ctx.jobs.drain();
  await t.admin('POST', '/test/carrier/inbound', { from: '+12025550177', to: org.number, text: 'STOP' });
  await t.ctx.jobs.drain();

  const events = receiver.received.map((delivery) => {
    verifyWithBoth(secret, delivery);
    return JSON.parse(delivery.body) as { type: string; data: Record<string, any> };
  });
  const byType = (type: string) => events.filter((event) => event.type === type);

  const [sentEvent] = byType('message.sent');
  assert.ok(sentEvent, JSON.stringify(events.map((e) => e.type)));
  assert.equal(sentEvent.data.id, messageId);
  assert.equal(sentEvent.data.status, 'sent');
  assert.equal(sentEvent.data.to, '+12025550177');
  assert.equal(sentEvent.data.body, 'Your table is ready');

  const [delivered] = byType('message.delivered');
  assert.equal(delivered?.data.id, messageId);
  assert.equal(delivered?.data.status, 'delivered');
  // The event carries the message as the API shows it.
  const read = await t.request('GET', `/api/v2/messages/${messageId}`, { apiKey: org.key });
  assert.deepEqual(Object.keys(delivered!.data).sort(), Object.keys(read.body.data).sort());

  const received = byType('message.received');
  assert.equal(received.length, 1);
  assert.equal(received[0]!.data.body, 'STOP');
  assert.equal(received[0]!.data.direction, 'inbound');
  const [optedOut] = byType('contact.opted_out');
  assert.equal(optedOut?.data.phone, '+12025550177');
  assert.equal(optedOut?.data.method, 'sms_stop');
});
