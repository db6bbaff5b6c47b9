// A flood of new calls beyond what the database admits in time (docs/voice.md "Real SIP: overload"): the trunk,
// a raw UDP user agent client here with RFC 3261's INVITE retransmissions (timer A) and give-up (timer B), offers
// far more INVITEs than PGlite (or PostgreSQL) can admit, as fast as it can. Some are refused at once with
// 503 Service Unavailable and a Retry-After (section 21.5.4), none goes unanswered, a refused INVITE makes no
// call record, and once the flood is over calls are taken again. Before it, calls one after another are never
// refused. Every message we send passes the strict phone's check (APP_ENV=test), Retry-After's syntax included.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { after, before, describe, test } from 'node:test';
import type { TestApp } from './helpers/app.ts';
import { type SipExtension, sipOffice } from './helpers/sip-office.ts';
import { parseSip, SipPhone, type SipText } from './helpers/sip-phone.ts';
import { freePort } from './helpers/sipp.ts';

const FLOOD = 1_000;
const T1 = 500;

interface Invite {
  text: string;
  nextSendAt: number;
  interval: number;
  provisional: boolean;
  final?: SipText;
  done: () => void;
}

/** The trunk: sends INVITEs to our number and keeps each one's final response, or undefined after timer B. */
class Trunk {
  private readonly invites = new Map<string, Invite>();
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly socket: Socket,
    private readonly server: number,
  ) {
    socket.on('message', (data) => this.onResponse(parseSip(data.toString('latin1'))));
    // Timer A: an INVITE with no response yet is sent again after T1, then 2·T1, 4·T1…
    this.timer = setInterval(() => {
      const now = performance.now();
      for (const invite of this.invites.values()) {
        if (invite.provisional || invite.final || now < invite.nextSendAt) continue;
        invite.interval *= 2;
        invite.nextSendAt = now + invite.interval;
        this.send(invite.text);
      }
    }, 50);
  }

  static async open(port: number, server: number): Promise<Trunk> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(port, '127.0.0.1', resolve));
    return new Trunk(socket, server);
  }

  close(): void {
    clearInterval(this.timer);
    this.socket.close();
  }

  /** One INVITE to `number`; resolves with its final response, or undefined when timer B (64·T1) ran out. */
  call(number: string): Promise<SipText | undefined> {
    const branch = `z9hG4bK${randomBytes(8).toString('hex')}`;
    const port = this.socket.address().port;
    const sdp = ['v=0', 'o=trunk 1 1 IN IP4 127.0.0.1', 's=-', 'c=IN IP4 127.0.0.1', 't=0 0']
      .concat(['m=audio 40000 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000', ''])
      .join('\r\n');
    const text = [
      `INVITE sip:${number}@127.0.0.1:${this.server} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=${branch};rport`,
      'Max-Forwards: 70',
      `From: <sip:+14155550123@127.0.0.1>;tag=${randomBytes(4).toString('hex')}`,
      `To: <sip:${number}@127.0.0.1>`,
      `Call-ID: ${randomBytes(8).toString('hex')}@127.0.0.1`,
      'CSeq: 1 INVITE',
      `Contact: <sip:trunk@127.0.0.1:${port}>`,
      'Content-Type: application/sdp',
      `Content-Length: ${Buffer.byteLength(sdp)}`,
      '',
      sdp,
    ].join('\r\n');
    return new Promise((resolve) => {
      const now = performance.now();
      const invite: Invite = {
        text,
        nextSendAt: now + T1,
        interval: T1,
        provisional: false,
        done: () => resolve(invite.final),
      };
      this.invites.set(branch, invite);
      // Timer B: no final response within 64·T1 and the transaction is over.
      setTimeout(() => {
        if (invite.final || !this.invites.delete(branch)) return;
        invite.done();
      }, 64 * T1).unref();
      this.send(text);
    });
  }

  private onResponse(response: SipText): void {
    const via = response.headers.via?.[0] ?? '';
    const branch = /branch=([^;\s]+)/.exec(via)?.[1] ?? '';
    const invite = this.invites.get(branch);
    if (!invite || !response.status) return;
    if (response.status < 200) {
      invite.provisional = true;
      return;
    }
    // A final response: ACKed (for a 2xx, the dialog's ACK would be the caller's; none is expected here).
    const header = (name: string) => response.headers[name]?.[0] ?? '';
    this.send(
      [
        `ACK ${invite.text.split(' ')[1]} SIP/2.0`,
        `Via: ${via}`,
        'Max-Forwards: 70',
        `From: ${header('from')}`,
        `To: ${header('to')}`,
        `Call-ID: ${header('call-id')}`,
        'CSeq: 1 ACK',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n'),
    );
    if (invite.final) return;
    invite.final = response;
    this.invites.delete(branch);
    invite.done();
  }

  private send(text: string): void {
    this.socket.send(Buffer.from(text, 'latin1'), this.server, '127.0.0.1');
  }
}

describe('the SIP listener under a flood of new calls', () => {
  let t: TestApp;
  let port: number;
  let trunk: Trunk;
  let number: string;
  const extensions: Record<string, SipExtension> = {};
  before(async () => {
    const trunkPort = await freePort();
    let create: (extension: string, fields?: Record<string, unknown>) => Promise<SipExtension>;
    let office: { key: string; number: string };
    ({ t, port, office, create } = await sipOffice({
      config: { sipTrunk: { host: '127.0.0.1', port: trunkPort } },
    }));
    // The region takes every call: only the admission's pace is at stake here.
    await t.ctx.calls.setRegion('us', 1_000_000);
    for (const extension of ['101', '102']) extensions[extension] = await create(extension);
    // The flood's number rings an extension with no phone and no voicemail: each admitted call ends at once.
    const nobody = await create('150', { voicemail: { enabled: false } });
    number = office.number;
    const api = (method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
    const [own] = (await api('GET', '/numbers')).body.data;
    const routed = await api('PATCH', `/numbers/${own.id}`, {
      voiceRoute: { type: 'extension', target: nobody.id },
    });
    assert.equal(routed.status, 200, routed.text);
    trunk = await Trunk.open(trunkPort, port);
  });
  after(async () => {
    trunk.close();
    t.ctx.sipListener.stop();
    await t.close();
  });

  test('calls one after another are never refused', async () => {
    for (let i = 0; i < 20; i++) {
      const final = await trunk.call(number);
      assert.ok(final, 'answered');
      assert.notEqual(final.status, 503);
    }
    assert.equal(t.ctx.sipListener.admissions.refused, 0);
  });

  test('a flood gets some 503s with Retry-After, every INVITE an answer, and calls are taken again after', async () => {
    const callsBefore = (await t.ctx.db.query('SELECT id FROM calls')).length;
    const answers: Promise<SipText | undefined>[] = [];
    // Far beyond what either engine admits: 50 INVITEs every 10 ms.
    while (answers.length < FLOOD) {
      for (let i = 0; i < 50; i++) answers.push(trunk.call(number));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const finals = await Promise.all(answers);
    const unanswered = finals.filter((final) => final === undefined).length;
    const refused = finals.filter((final): final is SipText => final?.status === 503);
    const admitted = finals.filter((final) => final && final.status !== 503);
    const statuses = new Map<number, number>();
    for (const final of finals) statuses.set(final?.status ?? 0, (statuses.get(final?.status ?? 0) ?? 0) + 1);
    console.log(`flood of ${FLOOD}: final statuses ${JSON.stringify([...statuses])}`);
    assert.equal(unanswered, 0, 'no INVITE timed out');
    assert.ok(refused.length > 0, 'some were refused');
    assert.ok(admitted.length > 0, 'some were admitted');
    for (const refusal of refused) {
      const retryAfter = refusal.headers['retry-after'] ?? [];
      assert.equal(retryAfter.length, 1, 'a 503 of overload says when to retry');
      assert.match(retryAfter[0]!, /^[1-5]$/);
    }
    assert.equal(t.ctx.sipListener.admissions.refused, refused.length);
    const calls = (await t.ctx.db.query('SELECT id FROM calls')).length - callsBefore;
    assert.equal(calls, admitted.length, 'a refused INVITE makes no call; each admitted one does');

    // The flood is over: a phone's call is admitted, rung and answered.
    const callee = await SipPhone.open(port, extensions['102']!);
    const caller = await SipPhone.open(port, extensions['101']!);
    try {
      assert.equal(await callee.register(), 200);
      await caller.call('102');
      assert.equal((await callee.next('ACK')).method, 'ACK');
    } finally {
      callee.close();
      caller.close();
    }
    const final = await trunk.call(number);
    assert.notEqual(final?.status, 503, 'and so is the trunk’s');
  });
});
