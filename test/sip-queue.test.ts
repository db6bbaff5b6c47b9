// A queue on real SIP (issue 33), with real peers on loopback: SIPp plays the trunk calling a number routed to a
// flow that queues the caller; the test is the caller's phone's media (a socket named in SIPp's INVITE), which
// hears the hold message. Nobody's phone is registered, so both members are offline and the caller waits; then
// extension 201's phone (a SIPp) registers: it becomes available, is offered the caller, rings and answers; the
// caller is re-INVITEd from the flow's media onto the relay towards that person, and the phone's BYE ends it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { PhoneMedia } from './helpers/phone-media.ts';
import {
  answeringPhone,
  answeringScenario,
  freePort,
  runSipp,
  sippInstalled,
  trunkCall,
} from './helpers/sipp.ts';

describe('a queue on SIP: the caller waits while no phone is registered; a phone registers and answers', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;
  let queueId: string;
  const extensions: Record<string, { id: string; sip: { username: string; password: string } }> = {};
  before(async () => {
    port = await freePort();
    trunkPort = await freePort();
    t = await startTestApp({ config: { sipTrunk: { host: '127.0.0.1', port: trunkPort } } });
    t.ctx.sipListener.start({ port, host: '127.0.0.1' });
    office = await sender(t);
    for (const [extension, name] of [
      ['201', 'Sales'],
      ['202', 'Support'],
    ]) {
      const created = await api('POST', '/extensions', { extension, name });
      assert.equal(created.status, 201, created.text);
      extensions[extension] = created.body.data;
    }
    const queue = await api('POST', '/queues', {
      name: 'Desk',
      extensionIds: [extensions['201']!.id, extensions['202']!.id],
      strategy: 'sequential',
    });
    assert.equal(queue.status, 201, queue.text);
    queueId = queue.body.data.id;
    const flow = await api('POST', '/call-flows', { name: 'Queue', steps: [{ type: 'queue', queueId }] });
    assert.equal(flow.status, 201, flow.text);
    const [number] = (await api('GET', '/numbers')).body.data;
    const routed = await api('PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'flow', target: flow.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await t.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: office.key, body });

  /** The latest call once its record has its end. */
  async function endedCall(): Promise<Record<string, any>> {
    for (let i = 0; i < 400; i++) {
      const [call] = (await t.ctx.calls.page(office.id, { limit: 1 }, 'api')).data as Record<string, any>[];
      if (call?.endedAt) return call;
      await sleep(25);
    }
    throw new Error('the call never ended');
  }

  test('the caller holds while both members are offline; 201 registers, is offered the caller and answers', async () => {
    const media = await PhoneMedia.open();
    let heard!: () => void;
    const holdHeard = new Promise<void>((resolve) => {
      heard = resolve;
    });
    media.onAudio = () => heard();
    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      scenario: trunkCall({ sdpMediaPort: media.port, reinvited: true, untilBye: true }),
      timeoutSeconds: 60,
    });
    await holdHeard;
    let live: Record<string, any> = {};
    for (let i = 0; i < 200; i++) {
      live = (await api('GET', `/queues/${queueId}/live`)).body.data;
      if (live.waiting.length === 1) break;
      await sleep(25);
    }
    assert.equal(live.waiting.length, 1, JSON.stringify(live));
    assert.equal(live.waiting[0].position, 1);
    assert.deepEqual(
      live.members.map((member: { state: string }) => member.state),
      ['offline', 'offline'],
      'no phone registered',
    );
    // Still waiting a moment later: nobody can be rung.
    await sleep(1200);
    assert.equal((await api('GET', `/queues/${queueId}/live`)).body.data.waiting.length, 1);

    // The phone registers, then listens on the port it registered from (the offer's INVITE is retransmitted
    // until it answers, should it come first).
    const localPort = await freePort();
    assert.equal(await runSipp(port, { ...extensions['201']!.sip, localPort }), 0, '201 registers');
    const phone = answeringPhone(localPort, {
      scenario: answeringScenario({ hangUpAfterMs: 1000 }),
      mediaPort: await freePort(),
    });
    await phone.bound;
    assert.equal(await phone.done, 0, '201 was offered the caller, answered, and hung up with a BYE');
    assert.equal(await trunk, 0, 'the caller was moved onto the relay and got our BYE');
    media.close();
    const call = await endedCall();
    assert.equal(call.status, 'completed');
    assert.equal(call.extensionId, extensions['201']!.id);
    const [answered] = await t.ctx.db.query<{ data: Record<string, any> }>(
      `SELECT data FROM events WHERE type = 'call.queue.answered' AND data->>'callId' = $1`,
      [call.id],
    );
    assert.equal(answered!.data.extensionId, extensions['201']!.id);
    assert.ok(answered!.data.waitSeconds >= 1, JSON.stringify(answered!.data));
    const after = (await api('GET', `/queues/${queueId}/live`)).body.data;
    assert.deepEqual(after.waiting, []);
  });
});
