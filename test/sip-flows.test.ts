// A call flow on real SIP (issue 33), with real peers on loopback: SIPp plays the trunk calling a number routed
// to a menu flow; the test is the caller's phone's media (a socket named in SIPp's INVITE), which hears the menu
// and presses a key as RFC 4733 telephone-events; another call keys by SIP INFO (application/dtmf-relay). Each
// key reaches the right extension's phone (a registered SIPp), which answers; the caller is re-INVITEd from
// the flow's media onto the relay towards that person, and the call ends with the phone's BYE.
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

describe('a call flow on SIP: keys by RFC 4733 and by SIP INFO reach the right phone', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;
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
    const flow = await api('POST', '/call-flows', {
      name: 'Menu',
      steps: [
        {
          type: 'gather',
          input: ['dtmf'],
          numDigits: 1,
          timeoutSeconds: 20,
          prompt: { type: 'say', text: 'Press 1 for sales, 2 for support.' },
          branches: {
            '1': [{ type: 'dial', targets: [{ type: 'extension', target: extensions['201']!.id }] }],
            '2': [{ type: 'dial', targets: [{ type: 'extension', target: extensions['202']!.id }] }],
          },
        },
      ],
    });
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

  /** A phone of `extension` registered and waiting to answer; it hangs up itself a second after answering. */
  async function phoneOf(extension: string) {
    const localPort = await freePort();
    assert.equal(
      await runSipp(port, { ...extensions[extension]!.sip, localPort }),
      0,
      `${extension} registers`,
    );
    const phone = answeringPhone(localPort, {
      scenario: answeringScenario({ hangUpAfterMs: 1000 }),
      mediaPort: await freePort(),
    });
    await phone.bound;
    return phone;
  }

  /** The latest call once its record has its end. */
  async function endedCall(): Promise<Record<string, any>> {
    for (let i = 0; i < 400; i++) {
      const [call] = (await t.ctx.calls.page(office.id, { limit: 1 }, 'api')).data as Record<string, any>[];
      if (call?.endedAt) return call;
      await sleep(25);
    }
    throw new Error('the call never ended');
  }
  const gathered = async (callId: string) =>
    (
      await t.ctx.db.query<{ data: { digits: string } }>(
        `SELECT data FROM events WHERE type = 'call.gather.completed' AND data->>'callId' = $1`,
        [callId],
      )
    ).map((row) => row.data.digits);

  test('RFC 4733: the caller hears the menu, presses 1 and talks with sales', async () => {
    const sales = await phoneOf('201');
    const media = await PhoneMedia.open();
    let heard!: () => void;
    const menuHeard = new Promise<void>((resolve) => {
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
    await menuHeard;
    await media.press('1');
    assert.equal(await sales.done, 0, 'sales answered, and hung up with a BYE answered 200');
    assert.equal(await trunk, 0, 'the caller was moved onto the relay and got our BYE');
    media.close();
    const call = await endedCall();
    assert.equal(call.status, 'completed');
    assert.equal(call.extensionId, extensions['201']!.id);
    assert.deepEqual(await gathered(call.id), ['1']);
  });

  test('SIP INFO: the caller keys 2 by INFO and talks with support', async () => {
    const support = await phoneOf('202');
    const media = await PhoneMedia.open();
    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      scenario: trunkCall({
        sdpMediaPort: media.port,
        waitMs: 500,
        keysByInfo: '2',
        reinvited: true,
        untilBye: true,
      }),
      timeoutSeconds: 60,
    });
    assert.equal(await support.done, 0, 'support answered, and hung up with a BYE answered 200');
    assert.equal(await trunk, 0, 'the INFO was answered 200, the caller moved onto the relay and hung up on');
    media.close();
    const call = await endedCall();
    assert.equal(call.status, 'completed');
    assert.equal(call.extensionId, extensions['202']!.id);
    assert.deepEqual(await gathered(call.id), ['2']);
  });
});
