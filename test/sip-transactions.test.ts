// The SIP transaction layer against RFC 3261 section 17 and RFC 6026 (issue 32): each timer's schedule, read
// from what a fake connection was given and when, under mocked timers (T1 100 ms, T2 400 ms, T4 500 ms, so that
// the cap at T2 shows after two doublings). The same over a real UDP socket: sip-answer-retransmissions.test.ts.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { makeResponse, type SipMessage } from '../src/modules/voice/sip/stack/index.ts';
import { makeTransactionLayer } from '../src/modules/voice/sip/stack/transaction.ts';
import type { Connection } from '../src/modules/voice/sip/stack/transport.ts';

const T1 = 100;
const T2 = 400;
const T4 = 500;
const PHONE = { protocol: 'UDP', address: '192.0.2.1', port: 5060 };

function request(method: string, branch = 'z9hG4bKphone1', seq = 1): SipMessage {
  return {
    method,
    uri: 'sip:alice@192.0.2.2',
    version: '2.0',
    headers: {
      via: [{ version: '2.0', protocol: 'UDP', host: '192.0.2.1', port: 5060, params: { branch } }],
      to: { uri: 'sip:alice@192.0.2.2', params: {} },
      from: { uri: 'sip:bob@192.0.2.1', params: { tag: 'phone' } },
      'call-id': 'call-1',
      cseq: { seq, method },
      'max-forwards': 70,
    },
  };
}

/** A response from the other side, its To tagged `tag`. */
function answer(to: SipMessage, status: number, tag = 'ours'): SipMessage {
  const response = makeResponse(to, status, String(status));
  response.headers.to = { ...to.headers.to, params: { tag } };
  return response;
}

/** A connection that records what was sent and when (mocked time), and how often it was released. */
function fakeConnection(protocol: 'UDP' | 'TCP') {
  const sent: { at: number; message: SipMessage }[] = [];
  const connection: Connection & { released: number } = {
    protocol,
    released: 0,
    send: (message) => sent.push({ at: Date.now(), message }),
    release() {
      connection.released++;
    },
  };
  const times = (what: (message: SipMessage) => boolean) =>
    sent.filter(({ message }) => what(message)).map(({ at }) => at);
  return { connection, sent, times };
}

const intervals = (times: number[]) => times.slice(1).map((at, index) => at - times[index]!);
const isMethod = (method: string) => (message: SipMessage) => message.method === method;
const isStatus = (status: number) => (message: SipMessage) => message.status === status;
/**
 * Moves mocked time on a millisecond at a time: the mocked Date is set to the end of a tick before the timers due
 * within it run, so a longer tick would record every send at its end.
 */
function advance(milliseconds: number): void {
  for (let step = 0; step < milliseconds; step++) mock.timers.tick(1);
}
const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));

function layer() {
  const calls = {
    acknowledged: [] as SipMessage[],
    unacknowledged: [] as SipMessage[],
    errors: [] as Error[],
  };
  const transactions = makeTransactionLayer({
    t1: T1,
    t2: T2,
    t4: T4,
    acknowledged: (ack) => calls.acknowledged.push(ack),
    unacknowledged: (response) => calls.unacknowledged.push(response),
    error: (error) => calls.errors.push(error),
  });
  return { transactions, calls };
}

describe('SIP transactions under mocked timers', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'] }));
  afterEach(() => mock.timers.reset());

  async function sendRequest(method: string, protocol: 'UDP' | 'TCP') {
    const { transactions, calls } = layer();
    const wire = fakeConnection(protocol);
    const delivered: SipMessage[] = [];
    const sent = request(method);
    const client = transactions.createClientTransaction(wire.connection, sent, (response) =>
      delivered.push(response),
    );
    await nextTick();
    return { transactions, calls, wire, delivered, sent, client };
  }

  test('INVITE client on UDP: timer A from T1, doubling; timer B at 64*T1 gives the TU a 408', async () => {
    const { transactions, wire, delivered, sent } = await sendRequest('INVITE', 'UDP');
    advance(64 * T1 - 1);
    const times = wire.times(isMethod('INVITE'));
    assert.deepEqual(intervals(times), [T1, 2 * T1, 4 * T1, 8 * T1, 16 * T1, 32 * T1]);
    assert.equal(delivered.length, 0);
    advance(1);
    assert.deepEqual(
      delivered.map((response) => response.status),
      [408],
    );
    assert.equal(transactions.getClient(sent), undefined, 'terminated');
    assert.equal(wire.connection.released, 1);
  });

  test('INVITE client on TCP: no timer A, still timer B', async () => {
    const { wire, delivered } = await sendRequest('INVITE', 'TCP');
    advance(64 * T1);
    assert.equal(wire.times(isMethod('INVITE')).length, 1);
    assert.deepEqual(
      delivered.map((response) => response.status),
      [408],
    );
  });

  test('INVITE client: a provisional stops A and B; a 486 is ACKed, and ACKed again for each retransmission', async () => {
    const { transactions, wire, delivered, sent, client } = await sendRequest('INVITE', 'UDP');
    advance(T1);
    client.message(answer(sent, 180), PHONE);
    advance(64 * T1);
    assert.equal(wire.times(isMethod('INVITE')).length, 2, 'the first send and one retransmission at T1');
    client.message(answer(sent, 486), PHONE);
    client.message(answer(sent, 486), PHONE);
    assert.deepEqual(
      delivered.map((response) => response.status),
      [180, 486],
      'a retransmission is not passed up',
    );
    const acks = wire.sent.filter(({ message }) => message.method === 'ACK').map(({ message }) => message);
    assert.equal(acks.length, 2);
    assert.equal(acks[0]!.headers.to.params.tag, 'ours', "the ACK carries the response's To tag");
    assert.equal(acks[0]!.headers.via[0]!.params.branch, sent.headers.via[0]!.params.branch);
    // Timer D: 32 s on UDP, whatever T1 is.
    advance(32_000 - 1);
    assert.ok(transactions.getClient(sent));
    advance(1);
    assert.equal(transactions.getClient(sent), undefined);
  });

  test('INVITE client on TCP: timer D is zero', async () => {
    const { transactions, wire, sent, client } = await sendRequest('INVITE', 'TCP');
    client.message(answer(sent, 603), PHONE);
    assert.equal(wire.times(isMethod('ACK')).length, 1);
    assert.equal(transactions.getClient(sent), undefined);
  });

  test('INVITE client, Accepted (RFC 6026): every 2xx reaches the TU until timer M at 64*T1', async () => {
    const { transactions, delivered, sent, client } = await sendRequest('INVITE', 'UDP');
    client.message(answer(sent, 200), PHONE);
    advance(T1);
    client.message(answer(sent, 200), PHONE);
    client.message(answer(sent, 200, 'another fork'), PHONE);
    assert.deepEqual(
      delivered.map((response) => response.status),
      [200, 200, 200],
    );
    advance(63 * T1 - 1);
    assert.ok(transactions.getClient(sent));
    advance(1);
    assert.equal(transactions.getClient(sent), undefined);
  });

  test('non-INVITE client on UDP: timer E doubles up to T2 and timer F gives a 408', async () => {
    const { wire, delivered } = await sendRequest('OPTIONS', 'UDP');
    advance(64 * T1);
    const times = wire.times(isMethod('OPTIONS'));
    assert.deepEqual(intervals(times).slice(0, 4), [T1, 2 * T1, T2, T2]);
    assert.ok(intervals(times).every((interval) => interval <= T2));
    assert.deepEqual(
      delivered.map((response) => response.status),
      [408],
    );
  });

  test('non-INVITE client, Proceeding: timer E every T2, F still running, K = T4', async () => {
    const { transactions, calls, wire, delivered, sent, client } = await sendRequest('BYE', 'UDP');
    assert.equal(calls.errors.length, 0);
    advance(10);
    client.message(answer(sent, 100), PHONE);
    // In Trying the next would come 2*T1 after the first retransmission; in Proceeding E fires where it was
    // due, then every T2.
    advance(T1 + 2 * T2);
    const times = wire.times(isMethod('BYE'));
    assert.deepEqual(times, [0, T1, T1 + T2, T1 + 2 * T2]);
    client.message(answer(sent, 200), PHONE);
    const count = wire.sent.length;
    advance(T4 - 1);
    assert.ok(transactions.getClient(sent), 'Completed absorbs retransmissions for T4');
    client.message(answer(sent, 200), PHONE);
    assert.deepEqual(
      delivered.map((response) => response.status),
      [100, 200],
    );
    advance(1);
    assert.equal(transactions.getClient(sent), undefined);
    assert.equal(wire.sent.length, count, 'nothing sent in Completed');
  });

  test('non-INVITE client on TCP: no timer E, timer K zero', async () => {
    const { transactions, wire, sent, client } = await sendRequest('REGISTER', 'TCP');
    advance(10 * T1);
    assert.equal(wire.sent.length, 1);
    client.message(answer(sent, 200), PHONE);
    assert.equal(transactions.getClient(sent), undefined);
  });

  function receiveRequest(method: string, protocol: 'UDP' | 'TCP') {
    const { transactions, calls } = layer();
    const wire = fakeConnection(protocol);
    const received = request(method);
    const server = transactions.createServerTransaction(received, wire.connection);
    return { transactions, calls, wire, received, server };
  }

  test('INVITE server: 100 Trying after 200 ms of silence, re-sent for a retransmitted INVITE', () => {
    const { wire, received, server } = receiveRequest('INVITE', 'UDP');
    advance(199);
    assert.equal(wire.sent.length, 0);
    advance(1);
    assert.deepEqual(wire.times(isStatus(100)), [200]);
    server.message(request('INVITE'), PHONE);
    assert.deepEqual(wire.times(isStatus(100)), [200, 200]);
    server.send(answer(received, 180));
    server.message(request('INVITE'), PHONE);
    assert.deepEqual(
      wire.sent.map(({ message }) => message.status),
      [100, 100, 180, 180],
      'the last provisional',
    );
  });

  test('INVITE server: no 100 Trying when the TU answered first', () => {
    const { wire, received, server } = receiveRequest('INVITE', 'UDP');
    advance(50);
    server.send(answer(received, 180));
    advance(1000);
    assert.deepEqual(
      wire.sent.map(({ message }) => message.status),
      [180],
    );
  });

  test('INVITE server on UDP: timer G doubles up to T2 until the ACK, then I = T4', () => {
    const { transactions, wire, received, server } = receiveRequest('INVITE', 'UDP');
    server.send(answer(received, 486));
    advance(20 * T1);
    const times = wire.times(isStatus(486));
    assert.deepEqual(intervals(times).slice(0, 4), [T1, 2 * T1, T2, T2]);
    assert.ok(intervals(times).every((interval) => interval <= T2));
    server.message(request('INVITE'), PHONE);
    assert.equal(
      wire.times(isStatus(486)).length,
      times.length + 1,
      'a retransmitted INVITE gets the 486 again',
    );
    server.message(request('ACK'), PHONE);
    const count = wire.sent.length;
    advance(T4 - 1);
    assert.equal(wire.sent.length, count, 'no retransmission once confirmed');
    assert.ok(transactions.getServer(received));
    advance(1);
    assert.equal(transactions.getServer(received), undefined);
  });

  test('INVITE server: timer H at 64*T1 without an ACK ends it and says so', () => {
    const { transactions, calls, wire, received, server } = receiveRequest('INVITE', 'UDP');
    server.send(answer(received, 486));
    advance(64 * T1 - 1);
    assert.equal(calls.errors.length, 0);
    advance(1);
    assert.equal(transactions.getServer(received), undefined);
    assert.match(calls.errors[0]?.message ?? '', /timer H/);
    const count = wire.sent.length;
    advance(10 * T2);
    assert.equal(wire.sent.length, count);
  });

  test('INVITE server on TCP: no timer G, and I is zero', () => {
    const { transactions, wire, received, server } = receiveRequest('INVITE', 'TCP');
    server.send(answer(received, 486));
    advance(20 * T1);
    assert.equal(wire.sent.length, 1);
    server.message(request('ACK'), PHONE);
    assert.equal(transactions.getServer(received), undefined);
    assert.equal(wire.connection.released, 1);
  });

  test('non-INVITE server: Trying absorbs, Proceeding and Completed answer again, J = 64*T1 on UDP', () => {
    const { transactions, wire, received, server } = receiveRequest('REGISTER', 'UDP');
    server.message(request('REGISTER'), PHONE);
    assert.equal(wire.sent.length, 0, 'nothing to say yet');
    server.send(answer(received, 100));
    server.message(request('REGISTER'), PHONE);
    server.send(answer(received, 200));
    server.message(request('REGISTER'), PHONE);
    server.message(request('REGISTER'), PHONE);
    assert.deepEqual(
      wire.sent.map(({ message }) => message.status),
      [100, 100, 200, 200, 200],
    );
    advance(64 * T1 - 1);
    assert.ok(transactions.getServer(received));
    advance(1);
    assert.equal(transactions.getServer(received), undefined);
  });

  test('non-INVITE server on TCP: J is zero', () => {
    const { transactions, received, server } = receiveRequest('OPTIONS', 'TCP');
    server.send(answer(received, 200));
    assert.equal(transactions.getServer(received), undefined);
  });

  for (const protocol of ['UDP', 'TCP'] as const) {
    test(`2xx to an INVITE on ${protocol}: retransmitted from T1 up to T2 until its ACK`, () => {
      const { transactions, calls, wire, received, server } = receiveRequest('INVITE', protocol);
      server.send(answer(received, 200));
      advance(3 * T1 + 2 * T2);
      assert.deepEqual(wire.times(isStatus(200)), [0, T1, 3 * T1, 3 * T1 + T2, 3 * T1 + 2 * T2]);
      const ack = request('ACK', 'z9hG4bKack');
      ack.headers.to = { ...ack.headers.to, params: { tag: 'not ours' } };
      transactions.acknowledge(ack, PHONE);
      advance(T2);
      assert.equal(wire.times(isStatus(200)).length, 6, 'an ACK of another 2xx stops nothing');
      ack.headers.to = { ...ack.headers.to, params: { tag: 'ours' } };
      transactions.acknowledge(ack, PHONE);
      advance(64 * T1);
      assert.equal(wire.times(isStatus(200)).length, 6);
      assert.equal(calls.acknowledged.length, 2, 'each ACK still reaches the application');
      assert.equal(calls.unacknowledged.length, 0);
      assert.equal(
        wire.connection.released,
        1,
        'released once, after the transaction and the retransmissions',
      );
    });
  }

  test('2xx to an INVITE: an ACK matching the transaction in Accepted stops it and goes to the application', () => {
    const { calls, wire, received, server } = receiveRequest('INVITE', 'UDP');
    server.send(answer(received, 200));
    server.message(request('INVITE'), PHONE);
    assert.equal(wire.sent.length, 1, 'an INVITE retransmission is absorbed in Accepted');
    const ack = request('ACK');
    ack.headers.to = { ...ack.headers.to, params: { tag: 'ours' } };
    server.message(ack, PHONE);
    advance(64 * T1);
    assert.equal(wire.sent.length, 1);
    assert.equal(calls.acknowledged.length, 1);
  });

  test('2xx to an INVITE: a BYE of its dialog stops the retransmissions; a CANCEL does not (section 9.2)', () => {
    for (const method of ['BYE', 'CANCEL']) {
      const { transactions, calls, wire, received, server } = receiveRequest('INVITE', 'UDP');
      server.send(answer(received, 200));
      advance(T1);
      const ending = request(method, 'z9hG4bKend', method === 'BYE' ? 2 : 1);
      if (method === 'BYE') ending.headers.to = { ...ending.headers.to, params: { tag: 'ours' } };
      transactions.createServerTransaction(ending, fakeConnection('UDP').connection);
      advance(64 * T1);
      if (method === 'BYE') {
        assert.equal(wire.times(isStatus(200)).length, 2, 'BYE: the first send and one retransmission');
        assert.equal(calls.unacknowledged.length, 0);
      } else {
        // The caller whose CANCEL crossed our 200 still needs it, to ACK it and hang up with a BYE.
        assert.ok(wire.times(isStatus(200)).length > 2, 'CANCEL: the 200 is still resent');
        assert.equal(calls.unacknowledged.length, 1);
      }
      transactions.destroy();
    }
  });

  test('2xx to an INVITE without an ACK: unacknowledged once at 64*T1, then silence', () => {
    const { transactions, calls, wire, received, server } = receiveRequest('INVITE', 'UDP');
    const ok = answer(received, 200);
    server.send(ok);
    advance(64 * T1 - 1);
    assert.equal(calls.unacknowledged.length, 0);
    advance(1);
    assert.deepEqual(calls.unacknowledged, [ok]);
    const count = wire.sent.length;
    advance(64 * T1);
    assert.equal(wire.sent.length, count);
    assert.equal(calls.unacknowledged.length, 1);
    assert.equal(transactions.unacknowledgedAnswers, 0);
  });

  test('destroy clears every timer', async () => {
    const { transactions } = layer();
    const wire = fakeConnection('UDP');
    transactions.createClientTransaction(wire.connection, request('OPTIONS'), () => {});
    transactions.createClientTransaction(wire.connection, request('INVITE', 'z9hG4bK2'), () => {});
    await nextTick();
    const invite = request('INVITE', 'z9hG4bK3');
    transactions.createServerTransaction(invite, wire.connection).send(answer(invite, 200));
    const register = request('REGISTER', 'z9hG4bK4');
    transactions.createServerTransaction(register, wire.connection).send(answer(register, 200));
    transactions.destroy();
    const count = wire.sent.length;
    advance(100_000);
    assert.equal(wire.sent.length, count);
    assert.equal(wire.connection.released, 4);
  });
});
