// A real softphone on the SIP listener: baresip registers as an extension with its digest credentials (and a
// wrong password is refused), and two baresip phones call each other: the callee answers, each hears the
// other's tone through our RTP relay (not from each other's address), and the platform keeps the completed
// internal call.
import assert from 'node:assert/strict';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { baresipInstalled, softphone } from './helpers/baresip.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { freePort } from './helpers/sipp.ts';

describe('baresip on the SIP listener', {
  skip: !baresipInstalled && 'baresip not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let office: Sender;
  type Extension = { id: string; sip: { username: string; password: string; domain: string } };
  let desk: Extension;
  let sales: Extension;
  before(async () => {
    t = await startTestApp();
    port = await freePort();
    t.ctx.sipListener.start({ port, host: '127.0.0.1' });
    office = await sender(t);
    const create = async (extension: string) => {
      const created = await t.request('POST', '/api/v2/extensions', {
        apiKey: office.key,
        body: { extension, name: extension, voicemail: { enabled: false } },
      });
      assert.equal(created.status, 201, created.text);
      return created.body.data as Extension;
    };
    desk = await create('501');
    sales = await create('502');
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await t.close();
  });

  const bindings = async (extensionId: string) =>
    (
      await t.ctx.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM sip_registrations WHERE extension_id = $1',
        [extensionId],
      )
    )[0]!.n;

  test('registers with its credentials; with a wrong password it is refused and nothing is bound', async () => {
    const wrong = await softphone({
      sipPort: port,
      ...desk.sip,
      password: 'not-the-password',
      frequency: 440,
      seconds: 4,
    });
    // The challenge (401) is answered with the wrong digest: refused for good.
    await wrong.waitFor(/reg: sip:.* 403 Forbidden/);
    wrong.stop();
    await wrong.exited;
    assert.equal(await bindings(desk.id), 0);

    const right = await softphone({ sipPort: port, ...desk.sip, frequency: 440, seconds: 4 });
    await right.waitFor(/200 OK \(\) \[1 binding\]/);
    assert.equal(await bindings(desk.id), 1);
    right.stop();
    await right.exited;
  });

  test('one baresip calls the other: answered, both hear each other through the relay, a completed call', async () => {
    const callee = await softphone({ sipPort: port, ...sales.sip, frequency: 1000, seconds: 12 });
    await callee.waitFor(/\[1 binding\]/);
    const caller = await softphone({
      sipPort: port,
      ...desk.sip,
      frequency: 440,
      seconds: 6,
      dial: '502',
    });
    await caller.waitFor(/Call established/);
    await callee.waitFor(/answering call on line 1 from sip:501@/);
    // Each side's media comes from our relay's port, not from the other phone's own RTP port.
    const heardFrom = async (phone: typeof caller) =>
      Number((await phone.waitFor(/receiving from 127\.0\.0\.1:(\d+)/))[1]);
    const callerHears = await heardFrom(caller);
    const calleeHears = await heardFrom(callee);
    assert.notEqual(callerHears, calleeHears);
    const ours = await udpPortsOfThisProcess();
    assert.ok(ours.has(callerHears) && ours.has(calleeHears), 'both hear our relay’s sockets');
    // Both phones' audio passes through the relay to the other: a second of 20 ms packets each way. (Not
    // baresip's own bit-rate line: on a loaded machine it sometimes printed 0/0 all call while RTP flowed.)
    const [live] = (await t.ctx.calls.page(office.id, { limit: 1 }, 'api')).data;
    let media = t.ctx.sipListener.pbx.mediaOf(live!.id);
    for (let i = 0; (i < 100 && (media?.fromCaller ?? 0) < 50) || (media?.fromCallee ?? 0) < 50; i++) {
      await sleep(50);
      media = t.ctx.sipListener.pbx.mediaOf(live!.id);
    }
    assert.ok(media && media.fromCaller >= 50 && media.fromCallee >= 50, JSON.stringify(media));
    await caller.exited; // It hangs up (BYE) as it quits.
    await callee.waitFor(/terminated \(duration/);
    callee.stop();
    await callee.exited;

    let call: Record<string, unknown> | undefined;
    for (let i = 0; i < 50 && call?.status !== 'completed'; i++) {
      [call] = (await t.request('GET', '/api/v2/calls', { apiKey: office.key })).body.data;
      if (call?.status !== 'completed') await sleep(100);
    }
    assert.equal(call!.direction, 'internal');
    assert.equal(call!.from, '501');
    assert.equal(call!.to, '502');
    assert.equal(call!.status, 'completed');
    assert.equal(call!.hangupCause, 'normal_clearing');
    assert.ok((call!.durationSeconds as number) >= 2);
  });
});

/** The UDP ports this process has sockets on (Linux: its file descriptors' inodes in /proc/net/udp). */
async function udpPortsOfThisProcess(): Promise<Set<number>> {
  const inodes = new Set<string>();
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    const inode = target.match(/^socket:\[(\d+)\]$/)?.[1];
    if (inode) inodes.add(inode);
  }
  const ports = new Set<number>();
  for (const line of (await readFile('/proc/net/udp', 'utf8')).split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length > 9 && inodes.has(fields[9]!))
      ports.add(Number.parseInt(fields[1]!.split(':')[1]!, 16));
  }
  return ports;
}
