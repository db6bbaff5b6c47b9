// Keys, answering machines and warm transfers on AI agent calls over real SIP (issue 34), with real peers on
// loopback. SIPp plays the trunk's signalling; the test plays the far end's media on its own RTP socket (named in
// SIPp's SDP). A caller presses 0 (RFC 4733 telephone-events) and is transferred, warm, to a registered phone,
// which hears our summary (RTP at its media port) before anything of it reaches the caller; a key sent as SIP
// INFO is the caller's turn. Out: the agent calls a SIPp "answering machine" (a long espeak-ng greeting, then a
// 1 kHz beep) and leaves its message after the beep; a callee who says a short "Hello?" gets the conversation.
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { concatenate, silence, synthesise, tone } from '../src/modules/voice/audio.ts';
import { GreetingEnd, MachineDetector, pureTone } from '../src/modules/voice/sip/machine-detector.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { RtpPeer } from './helpers/rtp-peer.ts';
import { SipPhone } from './helpers/sip-phone.ts';
import { answeringPhone, freePort, runSipp, sippInstalled, trunkCall } from './helpers/sipp.ts';

const espeakInstalled = (await synthesise('test')) !== undefined;
const voiced = (samples: Int16Array) => samples.some((sample) => Math.abs(sample) > 1000);

/**
 * A callee on the trunk that answers with `mediaPort` in its SDP, takes our re-INVITE to the agent's media
 * (writing the port it names to `portFile`, for the test's media to send to) and waits for our BYE.
 */
function answeringMachine(mediaPort: number, portFile: string): string {
  const sdp = `v=0
      o=machine 1 1 IN IP4 [local_ip]
      s=-
      c=IN IP4 127.0.0.1
      t=0 0
      m=audio ${mediaPort} RTP/AVP 0
      a=rtpmap:0 PCMU/8000
`;
  const ok = (tag: string) => `<send retrans="500"><![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:]${tag}
      [last_Call-ID:]
      [last_CSeq:]
      Contact: <sip:[local_ip]:[local_port];transport=[transport]>
      Content-Type: application/sdp
      Content-Length: [len]

      ${sdp}
    ]]></send>`;
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="answering machine">
  <recv request="INVITE" crlf="true" rrs="true"/>
  ${ok(';tag=[pid]SIPpTag01[call_number]')}
  <recv request="ACK" crlf="true"/>
  <recv request="INVITE" crlf="true">
    <action>
      <ereg regexp="m=audio ([0-9]+)" search_in="msg" check_it="true" assign_to="whole,port"/>
    </action>
  </recv>
  ${ok('')}
  <recv request="ACK" crlf="true">
    <action><exec command="echo [$port] [$whole] > ${portFile}"/></action>
  </recv>
  <recv request="BYE"/>
  <send><![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]></send>
</scenario>`;
}

describe('keys, answering machines and warm transfers on SIP agent calls', {
  skip:
    (!sippInstalled && 'SIPp (sip-tester) not installed') || (!espeakInstalled && 'espeak-ng not installed'),
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;
  let agentId: string;
  let desk: SipPhone;
  before(async () => {
    port = await freePort();
    trunkPort = await freePort();
    t = await startTestApp({ config: { sipTrunk: { host: '127.0.0.1', port: trunkPort } } });
    t.ctx.sipListener.start({ port, host: '127.0.0.1' });
    office = await sender(t);
    const extension = await api('POST', '/extensions', { extension: '200', name: 'Front desk' });
    assert.equal(extension.status, 201, extension.text);
    desk = await SipPhone.open(port, extension.body.data);
    assert.equal(await desk.register(), 200);
    const agent = await api('POST', '/agents', {
      name: 'Receptionist',
      firstMessage: 'Bright Smile Dental, how can I help?',
      transferTo: '200',
      transferMode: 'warm',
      keys: { '0': 'transfer' },
      recordCalls: false,
    });
    assert.equal(agent.status, 201, agent.text);
    agentId = agent.body.data.id;
    const [number] = (await api('GET', '/numbers')).body.data;
    const routed = await api('PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'agent', target: agentId },
    });
    assert.equal(routed.status, 200, routed.text);
  });
  after(async () => {
    desk?.close();
    t.ctx.sipListener.stop();
    await t.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
  const agentCallOf = async (callId: string) =>
    (await t.ctx.agentCalls.page(office.id, { limit: 100 }, 'api')).data.find(
      (row: { callId: string }) => row.callId === callId,
    ) as Record<string, any> | undefined;
  const until = async (callId: () => string | undefined, done: (row: Record<string, any>) => boolean) => {
    for (let i = 0; i < 600; i++) {
      const id = callId();
      const row = id ? await agentCallOf(id) : undefined;
      if (row && done(row)) return row;
      await sleep(50);
    }
    throw new Error('the agent call never got there');
  };
  const callIds = async () =>
    new Set(
      (await t.ctx.calls.page(office.id, { limit: 100 }, 'api')).data.map((call: { id: string }) => call.id),
    );
  /** The call that arrives now (not one of `known`). */
  const arriving = async (known: Set<string>) => {
    for (let i = 0; i < 200; i++) {
      const id = [...(await callIds())].find((each) => !known.has(each));
      if (id) return id;
      await sleep(50);
    }
    throw new Error('no call arrived');
  };
  test('a caller pressing 0 (RFC 4733) is transferred warm: the phone hears the summary before the caller is put through', async () => {
    const caller = await RtpPeer.open();
    const known = await callIds();
    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      scenario: trunkCall({ sdpMediaPort: caller.port, reinvited: true, untilBye: true }),
      timeoutSeconds: 60,
    });
    const callId = await arriving(known);
    // Pressed while the agent is still greeting: the key cuts it off, as a person's "operator!" would.
    await caller.heardFrom();
    await caller.press('0');
    // The desk phone rings and answers at once; from then on it talks (silence, its own source).
    const invite = await desk.next('INVITE', 20_000);
    const relayPort = Number(/m=audio (\d+)/.exec(invite.body)![1]);
    // It talks until the caller hears it (the summary before that lasts some seconds, longer on a busy machine).
    const fromDesk = () => caller.received.find((packet) => packet.ssrc === 0x5eed);
    const deskTalks = desk.sendRtp(relayPort, 3000, () => fromDesk() !== undefined);
    const transferred = await until(
      () => callId,
      (row) => row.transcript.some((turn: { digits?: string }) => turn.digits === '0'),
    );
    assert.equal(transferred.transcript[0].interrupted, true, 'the greeting was cut off by the key');
    // The transcript keeps the words said up to the cut, not the whole greeting.
    const greeting = 'Bright Smile Dental, how can I help?';
    assert.notEqual(transferred.transcript[0].text, greeting);
    assert.ok(greeting.startsWith(transferred.transcript[0].text), transferred.transcript[0].text);
    assert.deepEqual(transferred.transcript[1], {
      role: 'caller',
      text: '',
      at: transferred.transcript[1].at,
      digits: '0',
    });
    // Wait for the person's audio to reach the caller (the caller was put through), then hang up.
    for (let i = 0; i < 1000 && !fromDesk(); i++) await sleep(50);
    const connectedAt = fromDesk()?.at;
    assert.ok(connectedAt, 'the caller was put through to the desk phone');
    const summaryPackets = desk.mediaReceived.filter((at) => at < connectedAt).length;
    console.log(
      `warm transfer: ${summaryPackets} packets (${summaryPackets * 20} ms) of summary reached the phone before the caller heard it`,
    );
    // More than a second of our audio: the summary, not a stray packet.
    assert.ok(summaryPackets > 50, `${summaryPackets} packets of summary before the caller was connected`);
    assert.equal((await api('POST', `/calls/${callId}/hangup`)).status, 200);
    assert.equal(await trunk, 0, 'the caller took the re-INVITE onto the relay and got our BYE');
    await deskTalks;
    const done = await until(
      () => callId,
      (row) => row.outcome !== null,
    );
    assert.equal(done.outcome, 'transferred');
    assert.match(done.transcript[2].text, /transfer/);
    await desk.next('BYE');
    caller.close();
  });

  test('a key sent as SIP INFO that the agent does not map is the caller’s turn, answered by the brain', async () => {
    const known = await callIds();
    const caller = await RtpPeer.open();
    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      scenario: trunkCall({ sdpMediaPort: caller.port, waitMs: 4000, keysByInfo: '5', untilBye: true }),
      timeoutSeconds: 60,
    });
    const callId = await arriving(known);
    const row = await until(
      () => callId,
      (each) => each.transcript.length >= 3,
    );
    assert.deepEqual(
      row.transcript.map((turn: { role: string; digits?: string }) => [turn.role, turn.digits ?? null]),
      [
        ['agent', null],
        ['caller', '5'],
        ['agent', null],
      ],
    );
    assert.equal((await api('POST', `/calls/${callId}/hangup`)).status, 200);
    assert.equal(await trunk, 0);
    caller.close();
  });

  test('an outbound call to an answering machine leaves the message after the beep; a short “Hello?” gets the conversation', async () => {
    const message = 'This is Bright Smile Dental. Your appointment is tomorrow at nine.';
    assert.equal(
      (await api('PATCH', `/agents/${agentId}`, { machineDetection: { action: 'leave_message', message } }))
        .status,
      200,
    );
    const call = async (greeting: Int16Array, to: string) => {
      const media = await RtpPeer.open();
      const portFile = join(tmpdir(), `agent-machine-${process.pid}-${to}.port`);
      await rm(portFile, { force: true });
      const callee = answeringPhone(trunkPort, {
        scenario: answeringMachine(media.port, portFile),
        mediaPort: await freePort(),
        timeoutSeconds: 60,
      });
      await callee.bound;
      const placed = await api('POST', `/agents/${agentId}/calls`, { to });
      assert.equal(placed.status, 202, placed.text);
      let agentPort = 0;
      for (let i = 0; i < 400 && !agentPort; i++) {
        agentPort = Number(/^\d+/.exec(await readFile(portFile, 'utf8').catch(() => ''))?.[0] ?? 0);
        if (!agentPort) await sleep(25);
      }
      assert.ok(agentPort, 'we re-INVITEd the callee to our media');
      media.sendTo(agentPort);
      await media.play(greeting);
      return { media, callee, callId: placed.body.data.callId as string };
    };

    // The machine: a greeting of about five seconds, a pause, a 1 kHz beep of half a second, then it records.
    const greeting = (await synthesise(
      'Hi, you have reached the Smith family. We cannot come to the phone right now. Please leave a message after the tone.',
    ))!;
    const machine = await call(concatenate(greeting, silence(0.4)), '+14155550177');
    await machine.media.play(tone(0.5, 1000));
    const beepEnded = performance.now();
    await machine.media.play(silence(6));
    const left = await until(
      () => machine.callId,
      (row) => row.outcome !== null,
    );
    assert.equal(left.answeredBy, 'machine');
    assert.equal(left.outcome, 'ended_by_agent');
    assert.deepEqual(
      left.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text]),
      [['agent', message]],
    );
    assert.equal(await machine.callee.done, 0, 'the machine got our BYE');
    const firstWord = machine.media.received.find((packet) => voiced(packet.samples));
    assert.ok(firstWord, 'the machine heard the message');
    console.log(
      `answering machine: our message began ${Math.round(firstWord.at - beepEnded)} ms after the beep ended`,
    );
    assert.ok(firstWord.at > beepEnded, 'nothing of the message was said before the beep was over');
    machine.media.close();

    // A person: "Hello?", then they wait for us.
    const person = await call(concatenate((await synthesise('Hello?'))!, silence(2)), '+14155550178');
    const talking = await until(
      () => person.callId,
      (row) => row.transcript.length >= 1,
    );
    assert.equal(talking.answeredBy, 'human');
    assert.equal(talking.transcript[0].text, 'Bright Smile Dental, how can I help?');
    assert.equal((await api('POST', `/calls/${person.callId}/hangup`)).status, 200);
    assert.equal(await person.callee.done, 0);
    person.media.close();
    await api('PATCH', `/agents/${agentId}`, { machineDetection: null });
  });
});

describe('telling a person from an answering machine, and hearing the beep', {
  skip: !espeakInstalled && 'espeak-ng not installed',
}, () => {
  /** Feeds `samples` as 20 ms packets, as RTP brings them; the first decision. */
  const feed = <T>(listener: { push(samples: Int16Array): T | undefined }, samples: Int16Array) => {
    for (let at = 0; at < samples.length; at += 160) {
      const decision = listener.push(samples.subarray(at, at + 160));
      if (decision !== undefined) return { decision, atMs: (at + 160) / 8 };
    }
    return undefined;
  };

  test('a short greeting then quiet is a person; a long one a machine; silence tells nothing', async () => {
    const hello = (await synthesise('Hello?'))!;
    assert.equal(feed(new MachineDetector(), concatenate(hello, silence(2)))?.decision, 'human');
    const long = (await synthesise(
      'Hi, you have reached the Smith family. We cannot come to the phone right now.',
    ))!;
    const machine = feed(new MachineDetector(), concatenate(silence(0.5), long));
    assert.equal(machine?.decision, 'machine');
    assert.ok(machine!.atMs < long.length / 8, 'decided while the greeting still played');
    assert.equal(feed(new MachineDetector(), silence(6))?.decision, 'unknown');
  });

  test('a beep is heard to its end; speech, however tonal, is no beep; a machine without one ends in quiet', async () => {
    const words = (await synthesise('Please leave a message after the tone. Thank you.'))!;
    for (const hz of [440, 1000, 1400, 1990]) {
      const greeting = concatenate(words, silence(0.3), tone(0.5, hz), silence(1));
      const over = feed(new GreetingEnd(), greeting);
      assert.equal(over?.decision, 'beep', `${hz} Hz`);
      // It ends just after the beep, not during it.
      const beepEndsMs = (words.length + 0.8 * 8000) / 8;
      assert.ok(over!.atMs > beepEndsMs && over!.atMs <= beepEndsMs + 100, `${hz} Hz: ${over!.atMs} ms`);
    }
    // A tone too short (a click of 60 ms) is not a beep.
    assert.equal(
      feed(new GreetingEnd(), concatenate(words, tone(0.06, 1000), silence(2)))?.decision,
      'silence',
    );
    const heard = words.length / 160;
    let tonal = 0;
    for (let at = 0; at + 160 <= words.length; at += 160) if (pureTone(words.subarray(at, at + 160))) tonal++;
    assert.ok(tonal < heard / 4, `${tonal} of ${heard} frames of speech looked like a pure tone`);
  });
});
