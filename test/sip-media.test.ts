// Media through the SIP PBX, with real peers on loopback. The RTP relay on its own over real UDP sockets: each
// side's packets reach the other unchanged, a stranger's packets reach nobody, and the recording mixes both
// sides. Then a click-to-call placed by the API (POST /calls with `record`): the PBX rings the extension's phone
// (SIPp, registered), and once it answers rings the callee through the trunk (SIPp); each side streams a tone
// of its own through our relay; the API hangs up; the call's recording holds both tones.
import assert from 'node:assert/strict';
import type { Socket } from 'node:dgram';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import { decodeWav, tone } from '../src/modules/voice/audio.ts';
import { RtpRelay } from '../src/modules/voice/sip/rtp.ts';
import {
  answeringDirection,
  answerSdp,
  parseStream,
  relaySdp,
  withDirection,
} from '../src/modules/voice/sip/sdp.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { udpPeer } from './helpers/phone-media.ts';
import {
  answeringPhone,
  answeringScenario,
  freePort,
  runSipp,
  sippInstalled,
  sippPause,
  sippStream,
} from './helpers/sipp.ts';
import { strength } from './helpers/tones.ts';

describe('the RTP relay', () => {
  const open = udpPeer;
  const sdp = (port: number) => `v=0\r\nc=IN IP4 127.0.0.1\r\nm=audio ${port} RTP/AVP 0\r\n`;
  const packet = (sequence: number, timestamp: number, value: number, samples = 160) => {
    const header = Buffer.alloc(12);
    header[0] = 0x80;
    header[1] = 0; // PCMU
    header.writeUInt16BE(sequence, 2);
    header.writeUInt32BE(timestamp, 4);
    header.writeUInt32BE(sequence < 100 ? 1 : 2, 8);
    return Buffer.concat([header, Buffer.from(g711.mulaw.encode(new Int16Array(samples).fill(value)))]);
  };
  const send = (socket: Socket, buffer: Buffer, port: number) =>
    new Promise<void>((resolve) => socket.send(buffer, port, '127.0.0.1', () => resolve()));
  const until = async (done: () => boolean) => {
    for (let i = 0; i < 100 && !done(); i++) await sleep(10);
  };

  test('forwards each side to the other unchanged, drops a stranger, and records both sides mixed', async () => {
    const caller = await open();
    const callee = await open();
    const stranger = await open();
    const relay = await RtpRelay.open('127.0.0.1');
    relay.setRemote('caller', sdp(caller.port));
    relay.setRemote('callee', sdp(callee.port));
    relay.startRecording(60);

    // 200 ms of the caller in one packet: whenever the callee's first packet lands, it overlaps the caller's.
    const fromCaller = packet(1, 1000, 1000, 1600);
    await send(caller.socket, fromCaller, relay.port('caller'));
    await send(callee.socket, packet(101, 5000, -3000), relay.port('callee'));
    await until(() => caller.heard.length > 0 && callee.heard.length > 0);
    assert.deepEqual(callee.heard[0], fromCaller, 'the callee gets the caller’s packet as it was sent');
    assert.equal(caller.heard[0]![1], 0);
    assert.equal(caller.heard[0]!.readUInt16BE(2), 101);

    // The caller's address is latched from its first packet: another source cannot speak into the call.
    await send(stranger.socket, packet(2, 1160, 9000), relay.port('caller'));
    await send(caller.socket, packet(3, 1160, 1000), relay.port('caller'));
    await until(() => callee.heard.length > 1);
    await sleep(50);
    assert.equal(callee.heard.length, 2, 'only the caller’s second packet got through');
    assert.equal(callee.heard[1]!.readUInt16BE(2), 3);
    assert.equal(relay.forwarded.caller, 2);

    // Both sides in one track: the callee's packet joins the timeline where it arrived (a few samples after
    // the caller's first, however loaded the machine), and there the samples add up; elsewhere the caller alone.
    const mixed = relay.recorded();
    const decoded = (value: number) => g711.mulaw.decodeSample(g711.mulaw.encodeSample(value));
    const both = decoded(1000) + decoded(-3000);
    // Each stream starts where its first packet arrived after recording began.
    const started = mixed.findIndex((sample) => sample !== 0);
    const joined = mixed.indexOf(both);
    assert.ok(started >= 0 && joined >= started, 'the two sides overlap in the mix');
    for (let i = 0; i < mixed.length; i++) {
      const callee = i >= joined && i < joined + 160 ? decoded(-3000) : 0;
      const caller = i >= started && i < started + 1600 ? decoded(1000) : 0;
      if (mixed[i] !== caller + callee) assert.fail(`sample ${i}: ${mixed[i]}, not ${caller + callee}`);
    }

    // A re-INVITE moves a side: its new address is used, and latched anew.
    const moved = await open();
    relay.setRemote('callee', sdp(moved.port));
    await send(caller.socket, packet(4, 1320, 1000), relay.port('caller'));
    await until(() => moved.heard.length > 0);
    assert.equal(moved.heard.length, 1);
    relay.close();
    for (const peer of [caller, callee, stranger, moved]) peer.socket.close();
  });

  test('SDP passed through the relay names the relay, declines video and drops ICE candidates', () => {
    const offer = [
      'v=0',
      'o=alice 2890844526 2890844526 IN IP4 10.0.0.5',
      's=-',
      'c=IN IP4 10.0.0.5',
      't=0 0',
      'm=audio 49170 RTP/AVP 0 8 101',
      'a=rtpmap:101 telephone-event/8000',
      'a=candidate:1 1 UDP 2130706431 10.0.0.5 49170 typ host',
      'a=sendrecv',
      'm=video 51372 RTP/AVP 31',
      '',
    ].join('\r\n');
    const relayed = relaySdp(offer, '192.0.2.9', 30000);
    assert.deepEqual(parseStream(relayed)?.address, '192.0.2.9');
    assert.equal(parseStream(relayed)?.port, 30000);
    assert.match(relayed, /^o=alice 2890844526 2890844526 IN IP4 192\.0\.2\.9\r$/m);
    assert.match(relayed, /^m=audio 30000 RTP\/AVP 0 8 101\r$/m);
    assert.match(relayed, /^m=video 0 RTP\/AVP 31\r$/m);
    assert.match(relayed, /^a=rtpmap:101 telephone-event\/8000\r$/m);
    assert.doesNotMatch(relayed, /candidate|10\.0\.0\.5/);
  });

  test('a re-INVITE is answered with our SDP in the direction it asks; the version moves only on a change', () => {
    const ours = answerSdp('192.0.2.9', 30000, { codec: 'PCMU' });
    const version = (sdp: string) => Number(sdp.match(/^o=- \d+ (\d+) /m)?.[1]);
    const held = withDirection(ours, answeringDirection('v=0\r\nm=audio 1 RTP/AVP 0\r\na=sendonly\r\n'));
    assert.match(held, /^a=recvonly\r$/m);
    assert.doesNotMatch(held, /a=sendrecv/);
    assert.equal(version(held), version(ours) + 1);
    const again = withDirection(held, answeringDirection('v=0\r\nm=audio 1 RTP/AVP 0\r\na=sendonly\r\n'));
    assert.equal(again, held, 'a refresh with the same offer gets the same answer, same version');
    const resumed = withDirection(held, answeringDirection('v=0\r\nm=audio 1 RTP/AVP 0\r\n'));
    assert.match(resumed, /^a=sendrecv\r$/m);
    assert.equal(version(resumed), version(ours) + 2);
  });
});

/**
 * A phone that answers (PCMU), streams `audioFile` as RTP and waits for our BYE. With `reinvitedAfter`: before
 * streaming it takes our re-INVITE (its media moved to the voicemail box) and waits that long (the greeting).
 */
function answering(audioFile: string, options: { reinvitedAfter?: number } = {}): string {
  return answeringScenario({
    steps:
      options.reinvitedAfter === undefined
        ? [sippStream(audioFile)]
        : ['', sippPause(options.reinvitedAfter) + sippStream(audioFile)],
  });
}

describe('calls the API places over SIP (SIPp)', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;
  let desk: { id: string; sip: { username: string; password: string } };
  before(async () => {
    port = await freePort();
    trunkPort = await freePort();
    t = await startTestApp({ config: { sipTrunk: { host: '127.0.0.1', port: trunkPort } } });
    t.ctx.sipListener.start({ port, host: '127.0.0.1' });
    office = await sender(t);
    const created = await api('POST', '/extensions', { extension: '401', name: 'Desk' });
    assert.equal(created.status, 201, created.text);
    desk = created.body.data;
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await t.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: office.key, body });

  // This call stayed ringing on PostgreSQL passes and ran there as a todo (issue 32): both SIPps answer within
  // a millisecond of their 180, and the platform's write of `ringing` (on one connection of the pool) landed
  // after the write of `in_progress` (on another). The SIP PBX now reports an answer only once the ringing write
  // is done (sip-pbx.ts, ring). A retransmitted 200 is also ACKed again and nothing else now (sip-hangups).
  test('click-to-call with record: the desk phone rings first, then the callee through the trunk; the recording holds both sides', async () => {
    const phonePort = await freePort();
    assert.equal(await runSipp(port, { ...desk.sip, localPort: phonePort }), 0, 'the desk phone registers');
    // The desk phone says 440 Hz, the callee 1000 Hz: raw µ-law, as SIPp's rtp_stream sends a file's bytes.
    const deskSays = join(tmpdir(), `desk-${process.pid}.ulaw`);
    const calleeSays = join(tmpdir(), `callee-${process.pid}.ulaw`);
    await writeFile(deskSays, g711.mulaw.encode(tone(3, 440)));
    await writeFile(calleeSays, g711.mulaw.encode(tone(3, 1000)));
    // Generous limits: on CI's loaded PostgreSQL pass this call has twice stayed ringing past 30 s (both SIPps
    // then timing out); whether it is slowness or a lost leg, the assertion below now tells which SIPp exited.
    const deskPhone = answeringPhone(phonePort, {
      scenario: answering(deskSays),
      mediaPort: await freePort(),
      timeoutSeconds: 90,
    });
    const callee = answeringPhone(trunkPort, {
      scenario: answering(calleeSays),
      mediaPort: await freePort(),
      timeoutSeconds: 90,
    });
    await Promise.all([deskPhone.bound, callee.bound]);

    const placed = await api('POST', '/calls', {
      from: office.number,
      to: '+14155550188',
      extensionId: desk.id,
      record: true,
    });
    assert.equal(placed.status, 202, placed.text);
    const id = placed.body.data.id as string;
    let call: Record<string, any> = placed.body.data;
    // Polled through the service, not the API: a slow machine would spend the key's 100 requests a minute.
    for (let i = 0; i < 1200 && call.status !== 'in_progress'; i++) {
      await sleep(50);
      call = await t.ctx.calls.get(office.id, id);
    }
    assert.equal(
      call.status,
      'in_progress',
      `both legs answered (desk phone SIPp exit ${deskPhone.child.exitCode}, callee SIPp exit ${callee.child.exitCode})`,
    );
    await sleep(2000); // They talk.
    const hungUp = await api('POST', `/calls/${id}/hangup`);
    assert.equal(hungUp.status, 200, hungUp.text);
    assert.equal(await deskPhone.done, 0, 'the desk phone answered, streamed and got our BYE');
    assert.equal(await callee.done, 0, 'the callee answered, streamed and got our BYE');

    call = (await api('GET', `/calls/${id}`)).body.data;
    assert.equal(call.direction, 'outbound');
    assert.equal(call.from, office.number);
    assert.equal(call.to, '+14155550188');
    assert.equal(call.extensionId, desk.id);
    assert.equal(call.status, 'completed');
    assert.equal(call.hangupCause, 'hangup_requested');
    assert.ok(call.recordingId, 'the call was recorded');

    const audio = await fetch(`${t.url}/api/v2/recordings/${call.recordingId}/audio`, {
      headers: { 'x-api-key': office.key },
    });
    assert.equal(audio.status, 200);
    const wav = decodeWav(Buffer.from(await audio.arrayBuffer()));
    const seconds = wav.samples.length / 8000;
    assert.ok(seconds > 1.5 && seconds < 3.5, `${seconds} s recorded over about 2 s of talk`);
    // Both tones are there, each far above a frequency neither side sent.
    const silent = strength(wav.samples, 700);
    assert.ok(strength(wav.samples, 440) > 50 * silent, 'the desk phone is in the recording');
    assert.ok(strength(wav.samples, 1000) > 50 * silent, 'the callee is in the recording');
  });

  test('an internal call the API places to an extension with no phone: the caller’s phone is re-INVITEd to the voicemail box', async () => {
    const box = await api('POST', '/extensions', {
      extension: '402',
      name: 'Away',
      voicemail: { enabled: true, greeting: 'Hello.' },
    });
    assert.equal(box.status, 201, box.text);
    await t.ctx.db.query('DELETE FROM sip_registrations');
    const phonePort = await freePort();
    assert.equal(await runSipp(port, { ...desk.sip, localPort: phonePort }), 0, 'the desk phone registers');
    const says = join(tmpdir(), `desk-message-${process.pid}.ulaw`);
    await writeFile(says, g711.mulaw.encode(tone(2, 440)));
    const deskPhone = answeringPhone(phonePort, {
      scenario: answering(says, { reinvitedAfter: 2500 }),
      mediaPort: await freePort(),
    });
    await deskPhone.bound;

    const placed = await api('POST', '/calls', { from: '401', to: '402' });
    assert.equal(placed.status, 202, placed.text);
    const id = placed.body.data.id as string;
    await sleep(5500); // The greeting, then two seconds of message.
    assert.equal((await api('POST', `/calls/${id}/hangup`)).status, 200);
    assert.equal(await deskPhone.done, 0, 'answered, took the re-INVITE, streamed, got our BYE');

    const call = (await api('GET', `/calls/${id}`)).body.data;
    assert.equal(call.direction, 'internal');
    assert.equal(call.status, 'completed');
    assert.ok(call.voicemailId, 'the box took a message');
    const voicemail = (await api('GET', `/voicemails/${call.voicemailId}`)).body.data;
    assert.equal(voicemail.extensionId, box.body.data.id);
    const audio = await fetch(`${t.url}/api/v2/voicemails/${call.voicemailId}/audio`, {
      headers: { 'x-api-key': office.key },
    });
    const wav = decodeWav(Buffer.from(await audio.arrayBuffer()));
    assert.ok(
      strength(wav.samples, 440) > 50 * strength(wav.samples, 700),
      'the message is the caller’s tone',
    );
  });
});
