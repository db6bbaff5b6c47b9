// The SMPP carrier against a real SMPP 3.4 peer on loopback: the npm `smpp` package's server plays the
// aggregator's SMSC, with its own PDU codec and its own GSM 03.38/UCS-2 decoders (so our encoder is checked
// by another implementation, not by itself). Messages go in through the API and leave through the dispatch
// job: bind, short and long (concatenated) messages in GSM-7 and UCS-2 in the parts we count, receipts for
// each status, an inbound STOP, a connection dropped mid-window with nothing lost or sent twice, and a
// refused bind that leaves messages queued with a clear line in the log.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import smpp from 'smpp';
import type { SmppCarrier } from '../src/carriers/smpp/carrier.ts';
import { splitSegments } from '../src/modules/messaging/segments.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { runFor, type Sender, sender } from './helpers/messaging.ts';

interface Submitted {
  destination: string;
  dataCoding: number;
  esmClass: number;
  registeredDelivery: number;
  text: string;
  udh?: Buffer;
  messageId: string;
}

/** The SMSC: accepts `ours`/`secret`, answers each submit_sm with an id, and can drop the connection. */
class Smsc {
  readonly submitted: Submitted[] = [];
  readonly sessions: any[] = [];
  binds = 0;
  /** Drop the connection on receiving the submit_sm for which this returns true (it is not taken). */
  dropWhen?: (pdu: any, count: number) => boolean;
  private count = 0;
  private server: any;
  port = 0;

  async start(): Promise<void> {
    this.server = smpp.createServer({}, (session: any) => {
      session.on('error', () => {});
      this.sessions.push(session);
      session.on('close', () => this.sessions.splice(this.sessions.indexOf(session), 1));
      session.on('bind_transceiver', (pdu: any) => {
        const ok = pdu.system_id === 'ours' && pdu.password === 'secret';
        if (ok) this.binds++;
        session.send(pdu.response({ command_status: ok ? 0 : smpp.ESME_RBINDFAIL }));
        if (!ok) session.close();
      });
      session.on('enquire_link', (pdu: any) => session.send(pdu.response()));
      session.on('unbind', (pdu: any) => {
        session.send(pdu.response());
        session.close();
      });
      session.on('submit_sm', (pdu: any) => {
        this.count++;
        if (this.dropWhen?.(pdu, this.count)) {
          this.dropWhen = undefined;
          session.destroy();
          return;
        }
        const message = pdu.short_message;
        const messageId = `smsc-${this.submitted.length + 1}`;
        this.submitted.push({
          destination: pdu.destination_addr,
          dataCoding: pdu.data_coding,
          esmClass: pdu.esm_class,
          registeredDelivery: pdu.registered_delivery,
          text: typeof message === 'string' ? message : message.message,
          udh: typeof message === 'string' ? undefined : message.udh?.[0],
          messageId,
        });
        session.send(pdu.response({ message_id: messageId }));
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** A deliver_sm from the SMSC (a receipt or an inbound text), resolved with its response's status. */
  deliver(fields: Record<string, unknown>): Promise<number> {
    return new Promise((resolve) =>
      this.sessions[0].deliver_sm(fields, (pdu: any) => resolve(pdu.command_status)),
    );
  }

  stop(): Promise<void> {
    for (const session of this.sessions) session.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('the SMPP carrier against an SMSC on loopback', () => {
  let smsc: Smsc;
  let t: TestApp;
  let who: Sender;
  let carrier: SmppCarrier;

  before(async () => {
    smsc = new Smsc();
    await smsc.start();
    t = await startTestApp({
      config: { smpp: { url: `smpp://ours:secret@127.0.0.1:${smsc.port}`, systemType: 'cp', window: 4 } },
    });
    carrier = t.ctx.carrier as SmppCarrier;
    carrier.start();
    for (let i = 0; i < 100 && !carrier.isBound; i++) await sleep(20);
    assert.ok(carrier.isBound, 'bound');
    who = await sender(t, {}, { number: '+12025550199' });
  });
  after(async () => {
    await t.close();
    await smsc.stop();
  });

  const send = async (to: string, message: string) => {
    const res = await t.request('POST', '/api/v2/messages/send', { apiKey: who.key, body: { to, message } });
    assert.equal(res.status, 202, res.text);
    return res.body.data.id as string;
  };
  const message = async (id: string) =>
    (await t.request('GET', `/api/v2/messages/${id}`, { apiKey: who.key })).body.data;
  /** Runs the dispatch (and receipt) jobs due over the next `seconds` of the test clock. */
  const run = (seconds = 2) => runFor(t, seconds);

  test('a short GSM-7 message: one submit_sm, default alphabet, a receipt asked for; the SMSC id is kept', async () => {
    const text = 'Table for two at 7 {ok}? Reply YES. €5 deposit';
    const id = await send('+14155550101', text);
    await run();
    const [submit] = smsc.submitted.filter((each) => each.destination === '14155550101');
    assert.ok(submit, 'the SMSC got it');
    assert.equal(submit.dataCoding, 0);
    assert.equal(submit.esmClass & 0x40, 0, 'no header');
    assert.equal(submit.registeredDelivery, 1);
    assert.equal(submit.text, text, 'the SMSC decodes our septets to the same text');
    const sent = await message(id);
    assert.equal(sent.status, 'sent');
    const [row] = await t.ctx.db.query<{ carrier: string; carrier_message_id: string }>(
      'SELECT carrier, carrier_message_id FROM messages WHERE id = $1',
      [id],
    );
    assert.deepEqual(row, { carrier: 'smpp', carrier_message_id: submit.messageId });
  });

  test('long messages go as the parts we count, with a concatenation header, in GSM-7 and in UCS-2', async () => {
    const gsm = `${'Spring sale: everything 20% off this weekend only. '.repeat(5)}End.`;
    const ucs2 = `Привет! ${'Скидка 20% на всё в эти выходные. '.repeat(3)}🎉`;
    for (const [to, text, dataCoding] of [
      ['+14155550102', gsm, 0],
      ['+14155550103', ucs2, 8],
    ] as const) {
      const id = await send(to, text);
      await run();
      const parts = smsc.submitted.filter((each) => each.destination === to.slice(1));
      const expected = splitSegments(text);
      assert.ok(expected.length > 1);
      assert.equal(parts.length, expected.length, `${to}: one submit_sm per segment`);
      assert.equal((await message(id)).segments, expected.length);
      const references = new Set<number>();
      for (const [index, part] of parts.entries()) {
        assert.equal(part.dataCoding, dataCoding);
        assert.equal(part.esmClass & 0x40, 0x40, 'UDHI set');
        assert.deepEqual([...part.udh!.subarray(0, 2)], [0x00, 0x03], 'IE: concatenated, 8-bit reference');
        assert.equal(part.udh![3], expected.length, 'total parts');
        assert.equal(part.udh![4], index + 1, 'part number');
        references.add(part.udh![2]!);
        assert.equal(part.text, expected[index], `part ${index + 1} is our segment`);
      }
      assert.equal(references.size, 1, 'one reference for the message');
      assert.equal(parts.map((part) => part.text).join(''), text);
      assert.equal((await message(id)).status, 'sent');
    }
  });

  test('a message with media fails at once: SMPP carries text only', async () => {
    const res = await t.request('POST', '/api/v2/messages/send', {
      apiKey: who.key,
      body: { to: '+14155550104', message: 'Menu attached', media: ['https://example.com/menu.jpg'] },
    });
    assert.equal(res.status, 202, res.text);
    await run();
    const failed = await message(res.body.data.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.errorCode, 'mms_not_supported');
    assert.ok(!smsc.submitted.some((each) => each.destination === '14155550104'));
  });

  test('receipts: DELIVRD, UNDELIV and REJECTD become delivered, undelivered and failed; ACCEPTD changes nothing', async () => {
    const cases = [
      ['+14155550111', 'DELIVRD', 'delivered'],
      ['+14155550112', 'UNDELIV', 'undelivered'],
      ['+14155550113', 'REJECTD', 'failed'],
    ] as const;
    const ids: string[] = [];
    for (const [to] of cases) ids.push(await send(to, 'Receipt please'));
    await run();
    for (const [index, [to, stat]] of cases.entries()) {
      const submit = smsc.submitted.find((each) => each.destination === to.slice(1))!;
      assert.equal(
        await smsc.deliver({
          source_addr: to.slice(1),
          destination_addr: '12025550199',
          esm_class: 0x04,
          short_message: `id:${submit.messageId} sub:001 dlvrd:000 submit date:2611261200 done date:2611261201 stat:ACCEPTD err:000 text:Receipt please`,
        }),
        0,
      );
      await run(1);
      assert.equal((await message(ids[index]!)).status, 'sent', 'ACCEPTD is not final');
      assert.equal(
        await smsc.deliver({
          source_addr: to.slice(1),
          destination_addr: '12025550199',
          esm_class: 0x04,
          short_message: `id:${submit.messageId} sub:001 dlvrd:001 submit date:2611261200 done date:2611261201 stat:${stat} err:000 text:Receipt please`,
        }),
        0,
        'deliver_sm_resp OK once the receipt is kept',
      );
    }
    await run(2);
    for (const [index, [, , status]] of cases.entries())
      assert.equal((await message(ids[index]!)).status, status);
  });

  test('an inbound STOP opts the sender out, and the confirmation goes back over SMPP', async () => {
    assert.equal(
      await smsc.deliver({
        source_addr: '14155550120',
        destination_addr: '12025550199',
        short_message: 'STOP',
      }),
      0,
    );
    const [inbound] = (await t.request('GET', '/api/v2/messages?direction=inbound', { apiKey: who.key })).body
      .data;
    assert.equal(inbound.from, '+14155550120');
    assert.equal(inbound.to, '+12025550199');
    assert.equal(inbound.body, 'STOP');
    await run();
    assert.ok(
      smsc.submitted.some((each) => each.destination === '14155550120'),
      'the opt-out confirmation was sent',
    );
    const refused = await t.request('POST', '/api/v2/messages/send', {
      apiKey: who.key,
      body: { to: '+14155550120', message: 'Still there?' },
    });
    assert.equal(refused.body.code, 'RECIPIENT_OPTED_OUT', refused.text);
  });

  test('a connection dropped mid-window loses nothing and sends nothing twice', async () => {
    const before = smsc.submitted.length;
    const binds = smsc.binds;
    const long = `${'Part of a long one. '.repeat(12)}Done.`;
    // The SMSC drops the connection on the second part of the long message, unanswered and not taken.
    smsc.dropWhen = (pdu) => typeof pdu.short_message === 'object' && pdu.short_message.udh?.[0]?.[4] === 2;
    const ids = [await send('+14155550130', long)];
    for (let i = 0; i < 5; i++) ids.push(await send(`+1415555014${i}`, `Short ${i}`));
    await run(2);
    // Rebound after the drop; the dispatch jobs that failed are retried (5 s later) and finish the job.
    for (let i = 0; i < 200 && !carrier.isBound; i++) await sleep(20);
    assert.ok(carrier.isBound, 'rebound');
    assert.equal(smsc.binds, binds + 1, 'the connection was dropped and bound again');
    for (let i = 0; i < 6; i++) await run(10);
    for (const id of ids) assert.equal((await message(id)).status, 'sent', id);
    const taken = smsc.submitted.slice(before);
    const longParts = taken.filter((each) => each.destination === '14155550130');
    assert.equal(longParts.length, splitSegments(long).length, 'each part once');
    assert.deepEqual(
      longParts.map((part) => part.udh![4]),
      splitSegments(long).map((_, index) => index + 1),
    );
    assert.equal(
      new Set(longParts.map((part) => part.udh![2])).size,
      1,
      'the retried part keeps the reference',
    );
    for (let i = 0; i < 5; i++) {
      assert.equal(
        taken.filter((each) => each.destination === `1415555014${i}`).length,
        1,
        `short ${i} once`,
      );
    }
  });
});

describe('the SMPP carrier with credentials the SMSC refuses', () => {
  test('the bind refusal is logged with its status and the message stays queued', async () => {
    const smsc = new Smsc();
    await smsc.start();
    const t = await startTestApp({
      captureLog: true,
      config: { smpp: { url: `smpp://ours:wrong@127.0.0.1:${smsc.port}`, systemType: '', window: 1 } },
    });
    try {
      const carrier = t.ctx.carrier as SmppCarrier;
      carrier.start();
      for (let i = 0; i < 100 && !carrier.lastBindError; i++) await sleep(20);
      assert.match(carrier.lastBindError ?? '', /0x0000000d/);
      assert.ok(
        t.logs().some((line) => /SMPP bind refused/.test(line) && /0x0000000d/.test(line)),
        'a clear line in the log',
      );
      const who = await sender(t);
      const res = await t.request('POST', '/api/v2/messages/send', {
        apiKey: who.key,
        body: { to: '+14155550150', message: 'Waiting for a bind' },
      });
      assert.equal(res.status, 202, res.text);
      t.ctx.clock.advance(2);
      await t.ctx.jobs.drain();
      const queued = await t.request('GET', `/api/v2/messages/${res.body.data.id}`, { apiKey: who.key });
      assert.equal(queued.body.data.status, 'queued', 'kept, to go once the credentials are fixed');
      assert.equal(smsc.submitted.length, 0);
    } finally {
      await t.close();
      await smsc.stop();
    }
  });
});
