// AI agents on real SIP calls, with real peers on loopback. SIPp plays the trunk: a caller from the telephone
// network reaches a number routed to an agent; the test is the caller's phone's media (an RTP socket named in
// SIPp's INVITE): it hears the agent's first message (espeak-ng's speech, byte for byte as G.711 carries it),
// says a question (speech into RTP), is answered from the knowledge base, says goodbye, and the agent hangs up
// (SIPp gets our BYE). What the caller said reaches the transcription engine (a local server speaking the
// OpenAI transcription API) as exactly the audio they sent, cut at the end of each utterance. Out: the agent
// calls a number through the trunk (SIPp answers, takes the re-INVITE to the agent's media, asks for a person),
// the agent transfers to an extension's phone (SIPp registered), the caller is re-INVITEd onto the relay and
// both sides' audio is in the call's one recording after the agent's part.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import { SentenceSplitter } from '../src/modules/agents/turn-pipeline.ts';
import { decodeWav, synthesise, tone } from '../src/modules/voice/audio.ts';
import { RtpSession } from '../src/modules/voice/sip/rtp.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import {
  answeringPhone,
  answeringScenario,
  freePort,
  runSipp,
  sippInstalled,
  sippPause,
  sippStream,
  trunkCall,
} from './helpers/sipp.ts';
import { strength } from './helpers/tones.ts';
import { transcriptionServer } from './helpers/transcription-server.ts';

const espeakInstalled = (await synthesise('test')) !== undefined;

/** What G.711 µ-law makes of `samples`: what a phone hears of them. */
const overTheLine = (samples: Int16Array) => g711.mulaw.decode(g711.mulaw.encode(samples));

/** `samples` without the silence before and after. */
function trimmed(samples: Int16Array): Int16Array {
  let start = 0;
  let end = samples.length;
  while (start < end && samples[start] === 0) start++;
  while (end > start && samples[end - 1] === 0) end--;
  return samples.subarray(start, end);
}

/** Whether `haystack` holds `needle` sample for sample. */
function contains(haystack: Int16Array, needle: Int16Array): boolean {
  if (needle.length === 0) return false;
  for (let at = 0; at + needle.length <= haystack.length; at++) {
    if (haystack[at] !== needle[0]) continue;
    let same = true;
    for (let i = 1; i < needle.length && same; i++) same = haystack[at + i] === needle[i];
    if (same) return true;
  }
  return false;
}

/** Waits until `session` has heard audio and then nothing new for `quietMs`; resolves with all it heard. */
async function heardUntilQuiet(session: RtpSession, quietMs = 700): Promise<Int16Array> {
  let length = -1;
  let quietSince = Date.now();
  for (let i = 0; i < 400; i++) {
    const now = session.recorded().length;
    if (now !== length) {
      length = now;
      quietSince = Date.now();
    } else if (length > 0 && Date.now() - quietSince >= quietMs) {
      return session.recorded();
    }
    await sleep(50);
  }
  throw new Error('the agent never finished speaking');
}

describe('AI agents on SIP calls (SIPp)', {
  skip:
    (!sippInstalled && 'SIPp (sip-tester) not installed') || (!espeakInstalled && 'espeak-ng not installed'),
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;
  let agentId: string;
  /** Extension 200's SIP credentials (shown once, when it is created). */
  let deskPhone: { username: string; password: string };
  let service: Awaited<ReturnType<typeof transcriptionServer>>;
  /** What callers in these tests say: the words, and the audio as it reaches us. */
  const utterances: { text: string; heard: Int16Array }[] = [];
  const say = async (text: string) => {
    const speech = (await synthesise(text))!;
    utterances.push({ text, heard: trimmed(overTheLine(speech)) });
    return speech;
  };
  before(async () => {
    // The transcription engine answers with the words of the utterance it was sent, when the WAV holds that
    // utterance's audio exactly; anything else is not understood.
    service = await transcriptionServer(({ file }) => {
      const samples = decodeWav(file).samples;
      const match = utterances.find((utterance) => contains(samples, utterance.heard));
      return match
        ? { status: 200, body: JSON.stringify({ text: match.text }) }
        : { status: 400, body: '{"error":{"message":"no speech"}}' };
    });
    port = await freePort();
    trunkPort = await freePort();
    t = await startTestApp({
      config: { sipTrunk: { host: '127.0.0.1', port: trunkPort }, transcriptionUrl: service.url },
    });
    t.ctx.sipListener.start({ port, host: '127.0.0.1' });
    office = await sender(t);
    const kb = (await api('POST', '/knowledge-bases', { name: 'Front desk' })).body.data;
    await api('POST', `/knowledge-bases/${kb.id}/documents`, {
      title: 'Opening hours',
      content: 'On Saturdays we open from 9am to 1pm. We are closed on Sundays.',
    });
    const desk = await api('POST', '/extensions', { extension: '200', name: 'Front desk' });
    assert.equal(desk.status, 201, desk.text);
    deskPhone = desk.body.data.sip;
    const agent = await api('POST', '/agents', {
      name: 'Receptionist',
      firstMessage: 'Bright Smile Dental, how can I help?',
      knowledgeBaseIds: [kb.id],
      transferTo: '200',
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
    t.ctx.sipListener.stop();
    await t.close();
    await service.server.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
  /** The agent call of `callId`, read through the service (polling the API would spend the key's limit). */
  const agentCallOf = async (callId: string) =>
    (await t.ctx.agentCalls.page(office.id, { limit: 100 }, 'api')).data.find(
      (row: { callId: string }) => row.callId === callId,
    ) as Record<string, any> | undefined;
  const callIdOf = async () => {
    for (let i = 0; i < 100; i++) {
      const [call] = (await t.ctx.calls.page(office.id, { limit: 1 }, 'api')).data;
      if (call) return call.id as string;
      await sleep(50);
    }
    throw new Error('no call arrived');
  };
  const turnsReached = async (callId: string, turns: number) => {
    for (let i = 0; i < 600; i++) {
      const row = await agentCallOf(callId);
      if (row && row.transcript.length >= turns) return row;
      await sleep(50);
    }
    throw new Error(`the transcript of ${callId} never reached ${turns} turns`);
  };

  test('a caller from the trunk talks with the agent: speech both ways over RTP, then the agent says goodbye and hangs up', async () => {
    const phone = await RtpSession.open('127.0.0.1', { address: '127.0.0.1', port: 9, codec: 'PCMU' }, 120);
    phone.startRecording();
    const question = await say('Are you open on Saturdays?');
    const goodbye = await say('Thank you, goodbye.');
    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      scenario: trunkCall({ sdpMediaPort: phone.port, untilBye: true }),
      timeoutSeconds: 60,
    });
    const callId = await callIdOf();

    // The agent's first message, as espeak-ng says it and G.711 carries it, sample for sample.
    const greeting = await heardUntilQuiet(phone);
    const expected = trimmed(overTheLine((await synthesise('Bright Smile Dental, how can I help?'))!));
    assert.ok(contains(greeting, expected), 'the caller heard the first message');

    // The caller asks (their phone sends to where the agent's audio came from: symmetric RTP).
    await phone.play(question);
    const answered = await turnsReached(callId, 3);
    assert.equal(answered.transcript[1].role, 'caller');
    assert.equal(answered.transcript[1].text, 'Are you open on Saturdays?');
    assert.match(answered.transcript[2].text, /Saturdays we open from 9am to 1pm/);
    const answer = await heardUntilQuiet(phone);
    // Spoken sentence by sentence, each as espeak-ng says it alone.
    const splitter = new SentenceSplitter();
    const sentences = [...splitter.push(answered.transcript[2].text), splitter.flush()].filter(Boolean);
    for (const sentence of sentences) {
      const spoken = trimmed(overTheLine((await synthesise(sentence!))!));
      assert.ok(contains(answer, spoken), `the caller heard "${sentence}", word for word`);
    }

    await phone.play(goodbye);
    assert.equal(await trunk, 0, 'the trunk went through INVITE, 200, ACK and got our BYE');
    phone.close();

    let row = await agentCallOf(callId);
    for (let i = 0; i < 100 && !row?.outcome; i++) {
      await sleep(50);
      row = await agentCallOf(callId);
    }
    assert.equal(row!.outcome, 'ended_by_agent');
    assert.deepEqual(
      row!.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text.slice(0, 12)]),
      [
        ['agent', 'Bright Smile'],
        ['caller', 'Are you open'],
        ['agent', answered.transcript[2].text.slice(0, 12)],
        ['caller', 'Thank you, g'],
        ['agent', row!.transcript[4].text.slice(0, 12)],
      ],
    );
    const call = (await api('GET', `/calls/${callId}`)).body.data;
    assert.equal(call.status, 'completed');
    assert.equal(call.agentId, agentId);
    assert.equal(call.hangupCause, 'normal_clearing');
    assert.ok(row!.recordingId, 'the agent call was recorded');
    assert.equal(call.recordingId, row!.recordingId);
    const audio = await fetch(`${t.url}/api/v2/recordings/${row!.recordingId}/audio`, {
      headers: { 'x-api-key': office.key },
    });
    const recorded = decodeWav(Buffer.from(await audio.arrayBuffer())).samples;
    // Both sides on one track: the agent's words and the caller's, each as sent.
    assert.ok(contains(recorded, expected), "the agent's first message is in the recording");
    assert.ok(contains(recorded, utterances[0]!.heard), "the caller's question is in the recording");
  });

  test('the agent calls out through the trunk, is asked for a person and transfers to an extension’s phone; one recording holds it all', async () => {
    const phonePort = await freePort();
    assert.equal(await runSipp(port, { ...deskPhone, localPort: phonePort }), 0, 'the desk phone registers');
    // What the callee says to the agent, then to the person (440 Hz); what the person says (1000 Hz).
    const asks = join(tmpdir(), `agent-callee-asks-${process.pid}.ulaw`);
    const talks = join(tmpdir(), `agent-callee-talks-${process.pid}.ulaw`);
    const answers = join(tmpdir(), `agent-person-talks-${process.pid}.ulaw`);
    await writeFile(asks, g711.mulaw.encode(await say('Can I speak to a real person please?')));
    await writeFile(talks, g711.mulaw.encode(tone(3, 440)));
    await writeFile(answers, g711.mulaw.encode(tone(3, 1000)));
    const callee = answeringPhone(trunkPort, {
      // Answers the agent's call, is re-INVITEd to the agent's media, hears the first message and asks; then
      // re-INVITEd onto the relay, talks with the person.
      scenario: answeringScenario({ steps: ['', sippPause(3500) + sippStream(asks), sippStream(talks)] }),
      mediaPort: await freePort(),
    });
    const person = answeringPhone(phonePort, {
      scenario: answeringScenario({ steps: [sippStream(answers)] }),
      mediaPort: await freePort(),
    });
    await Promise.all([callee.bound, person.bound]);

    const placed = await api('POST', `/agents/${agentId}/calls`, { to: '+14155550188' });
    assert.equal(placed.status, 202, placed.text);
    const callId = placed.body.data.callId as string;
    const transferring = await turnsReached(callId, 3);
    assert.equal(transferring.transcript[1].text, 'Can I speak to a real person please?');
    assert.match(transferring.transcript[2].text, /transfer/i);
    // The person answers at once; they talk for a while (each side streams three seconds).
    await sleep(3500);
    assert.equal((await api('POST', `/calls/${callId}/hangup`)).status, 200);
    assert.equal(await callee.done, 0, 'the callee answered, took both re-INVITEs and got our BYE');
    assert.equal(await person.done, 0, 'the person answered and got our BYE');

    let row = await agentCallOf(callId);
    for (let i = 0; i < 100 && !row?.outcome; i++) {
      await sleep(50);
      row = await agentCallOf(callId);
    }
    assert.equal(row!.outcome, 'transferred');
    assert.equal(row!.direction, 'outbound');
    const call = (await api('GET', `/calls/${callId}`)).body.data;
    assert.equal(call.status, 'completed');
    assert.equal(call.hangupCause, 'hangup_requested');
    assert.equal(call.recordingId, row!.recordingId);
    const audio = await fetch(`${t.url}/api/v2/recordings/${row!.recordingId}/audio`, {
      headers: { 'x-api-key': office.key },
    });
    const recorded = decodeWav(Buffer.from(await audio.arrayBuffer())).samples;
    const firstMessage = trimmed(overTheLine((await synthesise('Bright Smile Dental, how can I help?'))!));
    assert.ok(contains(recorded, firstMessage), "the agent's part is in the recording");
    // After it, the two people: both tones, each far above a frequency neither sent.
    const people = recorded.subarray(recorded.length - 2 * 8000);
    const silent = strength(people, 700);
    assert.ok(strength(people, 440) > 50 * silent, 'the callee is in the recording');
    assert.ok(strength(people, 1000) > 50 * silent, 'the person is in the recording');
  });
});
