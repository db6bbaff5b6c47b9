// Voice and webhooks together, end to end: a recorded outbound call and an inbound call that leaves a voicemail
// reach a real receiver as signed call.ringing, call.answered, call.completed, recording.completed and
// voicemail.created events, each carrying the record as the API shows it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { type Receiver, startReceiver, verifyWithBoth } from './helpers/receiver.ts';

let t: TestApp;
let receiver: Receiver;
before(async () => {
  t = await startTestApp();
  receiver = await startReceiver(() => t.ctx.clock.nowMs());
});
after(async () => {
  await receiver.close();
  await t.close();
});

test('calls, recordings and voicemails reach the receiver as signed events with the API records', async () => {
  const org = await sender(t);
  const token = await signIn(t, await createUser(t, { role: 'owner', organizationIds: [org.id] }));
  const hook = await t.request('POST', '/api/webhooks', {
    token,
    body: {
      url: `${receiver.url}/hooks`,
      events: ['call.ringing', 'call.answered', 'call.completed', 'recording.completed', 'voicemail.created'],
    },
  });
  assert.equal(hook.status, 201, hook.text);
  const secret = hook.body.data.secret as string;
  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: org.key, body });

  const placed = await api('POST', '/calls', { from: org.number, to: '+14155550190', record: true });
  const callId = placed.body.data.id as string;
  for (const event of ['ringing', 'answered', 'completed']) {
    assert.equal((await t.admin('POST', `/test/pbx/calls/${callId}`, { event })).status, 200);
  }
  const ext = (await api('POST', '/extensions', { extension: '300', name: 'Desk' })).body.data;
  await api('PATCH', `/numbers/${(await api('GET', '/numbers')).body.data[0].id}`, {
    voiceRoute: { type: 'voicemail', target: ext.id },
  });
  const missed = await t.admin('POST', '/test/pbx/inbound', {
    from: '+14155550191',
    to: org.number,
    outcome: 'no_answer',
  });
  assert.equal(missed.status, 201, missed.text);
  await t.ctx.jobs.drain();

  const events = receiver.received.map((delivery) => {
    verifyWithBoth(secret, delivery);
    return JSON.parse(delivery.body) as { type: string; data: Record<string, any> };
  });
  const of = (type: string, id: string) => events.filter((e) => e.type === type && e.data.id === id);

  const call = (await api('GET', `/calls/${callId}`)).body.data;
  assert.equal(of('call.ringing', callId).length, 1);
  assert.equal(of('call.answered', callId)[0]?.data.status, 'in_progress');
  assert.deepEqual(of('call.completed', callId)[0]?.data, call);
  const recording = (await api('GET', `/recordings/${call.recordingId}`)).body.data;
  assert.deepEqual(of('recording.completed', recording.id)[0]?.data, recording);

  const voicemailCall = (await api('GET', `/calls/${missed.body.data.id}`)).body.data;
  assert.deepEqual(of('call.completed', voicemailCall.id)[0]?.data, voicemailCall);
  const voicemail = (await api('GET', `/voicemails/${voicemailCall.voicemailId}`)).body.data;
  assert.deepEqual(of('voicemail.created', voicemail.id)[0]?.data, voicemail);
});
