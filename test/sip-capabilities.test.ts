// What a request may require of us (RFC 3261 section 8.2.2.3) and what body it may carry (section 8.2.3), over
// UDP to the SIP listener: an extension we do not support is 420 with Unsupported naming it, a body that is not
// SDP or is encoded is 415 with what we accept, and neither starts a call (issue 32).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { after, before, describe, test } from 'node:test';
import { type SipExtension, sipOffice } from './helpers/sip-office.ts';

const SDP =
  'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n';

describe('what a SIP request may require, and what body it may carry', () => {
  let office: Awaited<ReturnType<typeof sipOffice>>;
  let desk: SipExtension;
  before(async () => {
    office = await sipOffice();
    desk = await office.create('201');
  });
  after(async () => {
    office.t.ctx.sipListener.stop();
    await office.t.close();
  });

  /** Sends `headers` as a request and resolves with the first final response's status line and headers. */
  async function ask(method: string, headers: Record<string, string>, body = ''): Promise<string> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    const port = socket.address().port;
    const lines = {
      Via: `SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bK${randomBytes(6).toString('hex')}`,
      'Max-Forwards': '70',
      To: `<sip:${desk.extension}@127.0.0.1>`,
      From: `<sip:${desk.sip.username}@127.0.0.1>;tag=${randomBytes(4).toString('hex')}`,
      'Call-ID': randomBytes(8).toString('hex'),
      CSeq: `1 ${method}`,
      Contact: `<sip:${desk.sip.username}@127.0.0.1:${port}>`,
      ...headers,
      'Content-Length': String(Buffer.byteLength(body)),
    };
    const text = `${method} sip:${desk.extension}@127.0.0.1 SIP/2.0\r\n${Object.entries(lines)
      .map(([name, value]) => `${name}: ${value}`)
      .join('\r\n')}\r\n\r\n${body}`;
    try {
      return await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no final answer to ${method}`)), 10_000);
        socket.on('message', (data) => {
          const answer = data.toString();
          if (/^SIP\/2\.0 1\d\d /.test(answer)) return;
          clearTimeout(timer);
          resolve(answer);
        });
        socket.send(text, office.port, '127.0.0.1');
      });
    } finally {
      socket.close();
    }
  }

  const calls = async () =>
    (await office.t.ctx.calls.page(office.office.id, { limit: 10 }, 'api')).data.length as number;

  test('an extension we do not support is 420 Bad Extension with Unsupported naming it', async () => {
    const options = await ask('OPTIONS', { Require: '100rel' });
    assert.match(options, /^SIP\/2\.0 420 Bad Extension\r\n/);
    assert.match(options, /\r\nUnsupported: 100rel\r\n/i);
    const invite = await ask('INVITE', { Require: 'timer, 100rel', 'Content-Type': 'application/sdp' }, SDP);
    assert.match(invite, /^SIP\/2\.0 420 Bad Extension\r\n/);
    assert.match(invite, /\r\nUnsupported: timer, 100rel\r\n/i);
    assert.equal(await calls(), 0);
  });

  test('a body that is not SDP, or is encoded, is 415 with what we accept; nothing starts', async () => {
    const text = await ask('INVITE', { 'Content-Type': 'text/plain' }, 'hello');
    assert.match(text, /^SIP\/2\.0 415 Unsupported Media Type\r\n/);
    assert.match(text, /\r\nAccept: application\/sdp\r\n/i);
    const gzip = await ask('INVITE', { 'Content-Type': 'application/sdp', 'Content-Encoding': 'gzip' }, SDP);
    assert.match(gzip, /^SIP\/2\.0 415 Unsupported Media Type\r\n/);
    assert.match(gzip, /\r\nAccept-Encoding: identity\r\n/i);
    assert.equal(await calls(), 0);
  });

  test('what we support passes on: OPTIONS says what it accepts, a Supported list and an SDP body are fine', async () => {
    const options = await ask('OPTIONS', { Supported: '100rel, timer', Accept: 'application/sdp' });
    assert.match(options, /^SIP\/2\.0 200 OK\r\n/);
    assert.match(options, /\r\nAccept: application\/sdp\r\n/i);
    // An INVITE with SDP reaches the PBX: the phone is asked for its credentials.
    const invite = await ask('INVITE', { 'Content-Type': 'application/sdp; charset=utf-8' }, SDP);
    assert.match(invite, /^SIP\/2\.0 401 /);
    // A CANCEL's Require is not acted on: it matches no INVITE, 481.
    const cancel = await ask('CANCEL', { Require: '100rel' });
    assert.match(cancel, /^SIP\/2\.0 481 /);
  });
});
