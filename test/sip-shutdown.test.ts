// The voice side of a shutdown, in process (docs/voice.md "Real SIP: shutdown"; the whole process is
// test/shutdown.test.ts): once the listener refuses new calls, a new INVITE and an OPTIONS outside a dialog are
// answered 503 Service Unavailable with Retry-After (RFC 3261 sections 21.5.4 and 11.2), while REGISTER and the
// requests of the call under way are served; ending the calls for the shutdown sends each side a BYE and
// records the cause `server_shutdown`. Every message we send passes the strict phone's check (APP_ENV=test).
// The simulated PBX ends its calls with the same cause.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import type { Sender } from './helpers/messaging.ts';
import { sender } from './helpers/messaging.ts';
import { type SipExtension, sipOffice } from './helpers/sip-office.ts';
import { SipPhone } from './helpers/sip-phone.ts';

describe('the SIP listener during a shutdown', () => {
  let t: TestApp;
  let port: number;
  let office: Sender;
  const extensions: Record<string, SipExtension> = {};
  before(async () => {
    let create: (extension: string) => Promise<SipExtension>;
    ({ t, port, office, create } = await sipOffice());
    for (const extension of ['101', '102', '103']) extensions[extension] = await create(extension);
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await t.close();
  });

  test('new calls get 503 with Retry-After; the live call goes on until it is ended with a BYE and server_shutdown', async () => {
    const callee = await SipPhone.open(port, extensions['102']!);
    const caller = await SipPhone.open(port, extensions['101']!);
    const latecomer = await SipPhone.open(port, extensions['103']!);
    try {
      assert.equal(await callee.register(), 200);
      const dialog = await caller.call('102');
      await callee.next('ACK');
      assert.equal(t.ctx.calls.liveCount, 1);

      t.ctx.sipListener.refuseNewCalls(5);
      assert.equal(t.ctx.sipListener.refusingNewCalls, true);
      const { answer } = await latecomer.offer('102');
      assert.equal(answer.status, 503);
      assert.deepEqual(answer.headers['retry-after'], ['5']);
      const probe = await latecomer.outOfDialogRequest('OPTIONS', '102');
      assert.equal(probe.status, 503);
      assert.deepEqual(probe.headers['retry-after'], ['5']);
      // Registrations outlast the process (they are in the database): still taken.
      assert.equal(await latecomer.register(), 200);
      // The call under way is served: a request in its dialog is answered as before.
      assert.equal((await caller.inDialogRequest('OPTIONS', dialog)).status, 200);
      assert.equal(callee.received.filter((message) => message.method === 'INVITE').length, 1);
      const refused = await t.ctx.db.query('SELECT id FROM calls');
      assert.equal(refused.length, 1, 'a refused INVITE makes no call');

      const ended = await t.ctx.calls.endAll('server_shutdown', Date.now() + 5000);
      assert.equal(ended, 1);
      assert.equal((await callee.next('BYE')).method, 'BYE');
      assert.equal((await caller.next('BYE')).method, 'BYE');
      await t.ctx.sipListener.byesAnswered();
      const [call] = (await t.request('GET', '/api/v2/calls', { apiKey: office.key })).body.data;
      assert.equal(call.status, 'completed');
      assert.equal(call.hangupCause, 'server_shutdown');
      const [completed] = await t.ctx.db.query<{ data: { hangupCause: string } }>(
        "SELECT data FROM events WHERE type = 'call.completed' AND data->>'id' = $1",
        [call.id],
      );
      assert.equal(completed!.data.hangupCause, 'server_shutdown');
      assert.equal(t.ctx.calls.liveCount, 0);
    } finally {
      callee.close();
      caller.close();
      latecomer.close();
    }
  });
});

describe('the simulated PBX during a shutdown', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('a ringing call ends canceled and a talking one completed, both with server_shutdown', async () => {
    const who = await sender(t);
    const api = (method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
    const drive = (callId: string, event: string) => t.admin('POST', `/test/pbx/calls/${callId}`, { event });
    const ringing = (await api('POST', '/calls', { from: who.number, to: '(415) 555-0123' })).body.data;
    const talking = (await api('POST', '/calls', { from: who.number, to: '(415) 555-0124' })).body.data;
    assert.equal((await drive(ringing.id, 'ringing')).body.data.status, 'ringing');
    assert.equal((await drive(talking.id, 'answered')).body.data.status, 'in_progress');
    assert.equal(t.ctx.calls.liveCount, 2);

    assert.equal(await t.ctx.calls.endAll('server_shutdown', Date.now() + 5000), 2);
    const after = async (id: string) => (await api('GET', `/calls/${id}`)).body.data;
    const [rang, talked] = [await after(ringing.id), await after(talking.id)];
    assert.deepEqual([rang.status, rang.hangupCause], ['canceled', 'server_shutdown']);
    assert.deepEqual([talked.status, talked.hangupCause], ['completed', 'server_shutdown']);
  });
});
