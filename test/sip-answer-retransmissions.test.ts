// A 2xx to an INVITE over a real UDP socket playing the phone (issue 32, RFC 3261 section 13.3.1.4): the stack
// retransmits it until the phone's ACK and not after; without an ACK, the `unacknowledged` callback once after
// 64*T1 and silence. The schedules themselves are checked under mocked timers in sip-transactions.test.ts.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { describe, test } from 'node:test';
import { create, makeResponse, type SipMessage } from '../src/modules/voice/sip/stack/index.ts';
import { freePort } from './helpers/sipp.ts';

function answer(to: SipMessage, status: number, tag = 'ours'): SipMessage {
  const response = makeResponse(to, status, String(status));
  response.headers.to = { ...to.headers.to, params: { tag } };
  return response;
}

describe('SIP 2xx retransmission over a real UDP socket (T1 20 ms)', () => {
  const t1 = 20;
  // T2 at 8*T1, so that 64*T1 holds eleven sends and the test takes about a second and a half.
  const t2 = 160;

  async function phoneAndStack() {
    const port = await freePort();
    const unacknowledged: SipMessage[] = [];
    const acks: SipMessage[] = [];
    const stack = create(
      {
        port,
        address: '127.0.0.1',
        udp: true,
        tcp: false,
        t1,
        t2,
        unacknowledged: (response) => unacknowledged.push(response),
      },
      (received) => {
        if (received.method === 'ACK') acks.push(received);
        else stack.send(answer(received, 200));
      },
    );
    const phone = createSocket('udp4');
    const oks: number[] = [];
    phone.on('message', (data) => {
      if (data.toString('latin1').startsWith('SIP/2.0 200')) oks.push(performance.now());
    });
    await new Promise<void>((resolve) => phone.bind(0, '127.0.0.1', resolve));
    const phonePort = phone.address().port;
    const send = (method: string, branch: string, toTag = '') =>
      phone.send(
        [
          `${method} sip:alice@127.0.0.1:${port} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${phonePort};branch=${branch}`,
          'Max-Forwards: 70',
          `To: <sip:alice@127.0.0.1>${toTag}`,
          'From: <sip:bob@127.0.0.1>;tag=phone',
          'Call-ID: udp-call-1',
          `CSeq: 1 ${method}`,
          `Contact: <sip:bob@127.0.0.1:${phonePort}>`,
          'Content-Length: 0',
          '',
          '',
        ].join('\r\n'),
        port,
        '127.0.0.1',
      );
    const close = () => {
      stack.destroy();
      phone.close();
    };
    return { stack, phone, send, oks, acks, unacknowledged, close };
  }

  const until = async (condition: () => boolean, ms = 5000) => {
    const deadline = performance.now() + ms;
    while (!condition()) {
      assert.ok(performance.now() < deadline, 'timed out waiting');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  test('the 200 OK is retransmitted until the phone ACKs it, and not after', async () => {
    const phone = await phoneAndStack();
    try {
      phone.send('INVITE', 'z9hG4bKinvite1');
      await until(() => phone.oks.length >= 3);
      phone.send('ACK', 'z9hG4bKack1', ';tag=ours');
      const ackedAt = performance.now();
      await until(() => phone.acks.length === 1);
      await sleep(64 * t1 + 200);
      // One 200 may have crossed the ACK on the way; none may leave after the ACK has arrived.
      const late = phone.oks.filter((at) => at > ackedAt + t1);
      assert.deepEqual(late, [], 'no 200 after the ACK');
      assert.equal(phone.unacknowledged.length, 0);
    } finally {
      phone.close();
    }
  });

  test('without an ACK, unacknowledged is called once after 64*T1 and the retransmissions stop', async () => {
    const phone = await phoneAndStack();
    try {
      const started = performance.now();
      phone.send('INVITE', 'z9hG4bKinvite2');
      await until(() => phone.unacknowledged.length > 0);
      assert.ok(performance.now() - started >= 64 * t1 - 5, 'not before 64*T1');
      const count = phone.oks.length;
      assert.ok(count >= 3, `the 200 was retransmitted (${count} sent)`);
      await sleep(3 * t2);
      assert.equal(phone.oks.length, count, 'no 200 after giving up');
      assert.equal(phone.unacknowledged.length, 1);
      assert.equal(phone.unacknowledged[0]!.status, 200);
    } finally {
      phone.close();
    }
  });
});
