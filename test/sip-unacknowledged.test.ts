// A 2xx of ours that is never ACKed (RFC 3261 section 13.3.1.4), over UDP from the trunk's address: the stack
// resends our 200 to the caller's INVITE, doubling from T1, until 64*T1 have passed; then the PBX ends the
// dialog with a BYE and the call with it (issue 32). A caller whose ACK does come is sent nothing more. T1 is
// shortened to 50 ms so that 64*T1 is 3.2 s.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { sender } from './helpers/messaging.ts';
import { freePort } from './helpers/sipp.ts';

const T1 = 50;
const SDP =
  'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n';

describe('a 200 of ours that no ACK answers', () => {
  let t: TestApp;
  let port: number;
  let trunk: Socket;
  let trunkPort: number;
  let office: Awaited<ReturnType<typeof sender>>;
  let number: string;
  const received: string[] = [];
  before(async () => {
    port = await freePort();
    trunkPort = await freePort();
    t = await startTestApp({ config: { sipTrunk: { host: '127.0.0.1', port: trunkPort } } });
    t.ctx.sipListener.start({ port, host: '127.0.0.1', timers: { t1: T1 } });
    office = await sender(t);
    const api = (method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
    const extension = await api('POST', '/extensions', {
      extension: '300',
      name: 'Front desk',
      voicemail: { enabled: true, greeting: 'Hi.' },
    });
    assert.equal(extension.status, 201, extension.text);
    const [own] = (await api('GET', '/numbers')).body.data;
    number = own.number;
    const routed = await api('PATCH', `/numbers/${own.id}`, {
      voiceRoute: { type: 'voicemail', target: extension.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
    trunk = createSocket('udp4');
    trunk.on('message', (data) => received.push(data.toString()));
    await new Promise<void>((resolve) => trunk.bind(trunkPort, '127.0.0.1', resolve));
  });
  after(async () => {
    trunk.close();
    t.ctx.sipListener.stop();
    await t.close();
  });

  const send = (text: string) =>
    new Promise<void>((resolve) => trunk.send(text, port, '127.0.0.1', () => resolve()));
  const statusLines = (callId: string, status: number) =>
    received.filter((text) => text.startsWith(`SIP/2.0 ${status} `) && text.includes(`Call-ID: ${callId}`));
  const requests = (callId: string, method: string) =>
    received.filter((text) => text.startsWith(`${method} `) && text.includes(`Call-ID: ${callId}`));
  async function until<T>(what: () => T | undefined, seconds = 30): Promise<T> {
    for (let waited = 0; waited < seconds * 1000; waited += 20) {
      const value = what();
      if (value !== undefined) return value;
      await sleep(20);
    }
    throw new Error('it never happened');
  }
  const header = (text: string, name: string) =>
    text.split('\r\n').find((line) => line.toLowerCase().startsWith(`${name.toLowerCase()}:`));

  function invite(callId: string): string {
    return [
      `INVITE sip:${number}@127.0.0.1:${port} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${trunkPort};branch=z9hG4bK${randomBytes(6).toString('hex')}`,
      'Max-Forwards: 70',
      `To: <sip:${number}@127.0.0.1>`,
      `From: <sip:+15550100@127.0.0.1>;tag=trunk${callId}`,
      `Call-ID: ${callId}`,
      'CSeq: 1 INVITE',
      `Contact: <sip:trunk@127.0.0.1:${trunkPort}>`,
      'Content-Type: application/sdp',
      `Content-Length: ${SDP.length}`,
      '',
      SDP,
    ].join('\r\n');
  }

  test('our 200 is resent until 64*T1, then the caller gets a BYE and the call ends completed', async () => {
    const callId = randomBytes(8).toString('hex');
    await send(invite(callId));
    const bye = await until(() => requests(callId, 'BYE')[0]);
    // RFC 3261 section 13.3.1.4: from T1 doubling up to T2 over 64*T1: 50, 100, 200, … 4000 ms gives 10 or
    // so; a loaded machine may fire fewer, never none.
    const oks = statusLines(callId, 200);
    assert.ok(oks.length >= 3, `our 200 went out ${oks.length} times`);
    assert.equal(new Set(oks.map((ok) => header(ok, 'to'))).size, 1, 'every copy names the same dialog');
    // The BYE names that dialog: our tag in its From, the caller's in its To, to the caller's Contact.
    assert.match(bye, new RegExp(`^BYE sip:trunk@127\\.0\\.0\\.1:${trunkPort} SIP/2\\.0\\r\\n`));
    assert.ok(header(bye, 'to')?.includes(`tag=trunk${callId}`));
    const ourTag = /tag=([^;>\s]+)/.exec(header(oks[0]!, 'to') ?? '')?.[1];
    assert.ok(ourTag && header(bye, 'from')?.includes(`tag=${ourTag}`));
    await send(
      [
        'SIP/2.0 200 OK',
        header(bye, 'via'),
        header(bye, 'to'),
        header(bye, 'from'),
        header(bye, 'call-id'),
        header(bye, 'cseq'),
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n'),
    );
    const calls = async () =>
      (await t.ctx.calls.page(office.id, { limit: 10 }, 'api')).data as Record<string, any>[];
    let ended: Record<string, any> | undefined;
    for (let tries = 0; !ended && tries < 300; tries++) {
      ended = (await calls()).find((each) => each.endedAt);
      if (!ended) await sleep(50);
    }
    assert.equal(ended?.status, 'completed', 'the call ended when its caller was hung up on');
    const sentAfterBye = statusLines(callId, 200).length;
    await sleep(T1 * 8);
    assert.equal(statusLines(callId, 200).length, sentAfterBye, 'no 200 after the BYE');
  });
});
