// An agent's turns over real SIP (SIPp plays the trunk; the test is the caller's phone's RTP), with the brain a
// local server speaking OpenAI's streamed chat completions (server-sent events, `stream: true`), which writes
// its reply a few tokens at a time. The caller hears the reply's first sentence before the model has finished
// writing it; a caller who talks over a long answer cuts it off (a 100 ms cough does not), is heard from the
// start of their words and answered; the transcript keeps what the agent said up to the cut. The test measures,
// from the RTP it sends and receives, how long after the caller began speaking the agent's audio stopped, and
// reports it; it asserts what happened, not how fast.
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import { concatenate, decodeWav, silence, synthesise, tone } from '../src/modules/voice/audio.ts';
import { RtpSession } from '../src/modules/voice/sip/rtp.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { freePort, runSipp, sippInstalled, trunkCall } from './helpers/sipp.ts';
import { transcriptionServer } from './helpers/transcription-server.ts';

const espeakInstalled = (await synthesise('test')) !== undefined;
const overTheLine = (samples: Int16Array) => g711.mulaw.decode(g711.mulaw.encode(samples));

function trimmed(samples: Int16Array): Int16Array {
  let start = 0;
  let end = samples.length;
  while (start < end && samples[start] === 0) start++;
  while (end > start && samples[end - 1] === 0) end--;
  return samples.subarray(start, end);
}

function contains(haystack: Int16Array, needle: Int16Array): boolean {
  outer: for (let at = 0; at + needle.length <= haystack.length; at++) {
    for (let i = 0; i < needle.length; i++) if (haystack[at + i] !== needle[i]) continue outer;
    return needle.length > 0;
  }
  return false;
}

/** A chat-completions server that streams each scripted reply as SSE chunks, `delayMs` apart. */
async function streamingModel() {
  const replies: { pieces: string[]; delayMs: number }[] = [];
  const finished: number[] = [];
  const requests: any[] = [];
  const server = createServer((req, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk) => {
      raw += chunk;
    });
    req.on('end', async () => {
      const body = JSON.parse(raw);
      requests.push(body);
      const reply = replies.shift() ?? { pieces: ['Sorry, I have nothing more to say.'], delayMs: 0 };
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk = (delta: object, finish: string | null = null) =>
        res.write(
          `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 0, model: 'test', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
        );
      chunk({ role: 'assistant', content: '' });
      for (const piece of reply.pieces) {
        if (res.destroyed) return;
        chunk({ content: piece });
        await sleep(reply.delayMs);
      }
      chunk({}, 'stop');
      res.write('data: [DONE]\n\n');
      res.end();
      finished.push(performance.now());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    replies,
    finished,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The caller's phone: records what it hears and when each packet arrived. */
async function callerPhone() {
  const phone = await RtpSession.open('127.0.0.1', { address: '127.0.0.1', port: 9, codec: 'PCMU' }, 120);
  /** When audible packets arrived, and when any did (the agent sends packets all through a say). */
  const arrivals: number[] = [];
  const packets: number[] = [];
  phone.onAudio = (samples) => {
    packets.push(performance.now());
    if (samples.some((sample) => Math.abs(sample) > 64)) arrivals.push(performance.now());
  };
  phone.startRecording();
  return { phone, arrivals, packets };
}

/** Waits until `arrivals` has a packet after `since`, then no new one for `quietMs`. */
async function spokeAndStopped(arrivals: number[], since: number, quietMs = 700): Promise<number> {
  for (let i = 0; i < 600; i++) {
    const last = arrivals.at(-1) ?? 0;
    if (last > since && performance.now() - last >= quietMs) return last;
    await sleep(50);
  }
  throw new Error('the agent never finished speaking');
}

describe('an agent’s turns over SIP: streamed replies and barge-in (SIPp)', {
  skip:
    (!sippInstalled && 'SIPp (sip-tester) not installed') || (!espeakInstalled && 'espeak-ng not installed'),
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;
  let model: Awaited<ReturnType<typeof streamingModel>>;
  let transcription: Awaited<ReturnType<typeof transcriptionServer>>;
  const utterances: { text: string; heard: Int16Array }[] = [];
  const say = async (text: string) => {
    const speech = (await synthesise(text))!;
    utterances.push({ text, heard: trimmed(overTheLine(speech)) });
    // A phone sends audio all along: the quiet after the words too.
    return concatenate(speech, silence(1.2));
  };

  before(async () => {
    model = await streamingModel();
    transcription = await transcriptionServer(({ file }) => {
      const samples = decodeWav(file).samples;
      const match = utterances.find((utterance) => contains(samples, utterance.heard));
      return match
        ? { status: 200, body: JSON.stringify({ text: match.text }) }
        : { status: 400, body: '{"error":{"message":"no speech"}}' };
    });
    port = await freePort();
    trunkPort = await freePort();
    t = await startTestApp({
      config: {
        sipTrunk: { host: '127.0.0.1', port: trunkPort },
        transcriptionUrl: transcription.url,
        agentLlm: { url: model.url, model: 'test' },
      },
    });
    t.ctx.sipListener.start({ port, host: '127.0.0.1' });
    office = await sender(t);
    const agent = await api('POST', '/agents', {
      name: 'Receptionist',
      firstMessage: 'Hello.',
      recordCalls: false,
    });
    assert.equal(agent.status, 201, agent.text);
    assert.equal(agent.body.data.bargeIn, true, 'barge-in is on by default');
    const [number] = (await api('GET', '/numbers')).body.data;
    const routed = await api('PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'agent', target: agent.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await t.close();
    await model.close();
    await transcription.server.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
  const agentCallOf = async (callId: string) =>
    (await t.ctx.agentCalls.page(office.id, { limit: 100 }, 'api')).data.find(
      (row: { callId: string }) => row.callId === callId,
    ) as Record<string, any> | undefined;
  const newCall = async (known: Set<string>) => {
    for (let i = 0; i < 100; i++) {
      const calls = (await t.ctx.calls.page(office.id, { limit: 10 }, 'api')).data;
      const call = calls.find((row: { id: string }) => !known.has(row.id));
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
  const seen = new Set<string>();
  const dial = async (phone: RtpSession) => {
    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      scenario: trunkCall({ sdpMediaPort: phone.port, untilBye: true }),
      timeoutSeconds: 90,
    });
    const callId = await newCall(seen);
    seen.add(callId);
    return { trunk, callId };
  };

  test('the first sentence of a streamed reply is heard before the model has finished writing it', async () => {
    const { phone, arrivals } = await callerPhone();
    const { trunk, callId } = await dial(phone);
    await spokeAndStopped(arrivals, 0);
    const first = 'We open at nine in the morning. ';
    const rest = 'On Fridays we close at three in the afternoon, and on weekends we are closed all day.';
    model.replies.push({ pieces: [first, ...rest.split(/(?<= )/)], delayMs: 120 });
    const asked = performance.now();
    await phone.play(await say('When do you open?'));
    const answered = await turnsReached(callId, 3);
    const firstHeard = arrivals.find((at) => at > asked)!;
    const modelDone = model.finished.at(-1)!;
    console.log(
      `streamed reply: first audio ${Math.round(modelDone - firstHeard)} ms before the model finished; ` +
        `latency ${JSON.stringify(answered.transcript[2].latency)}`,
    );
    assert.ok(firstHeard < modelDone, 'the caller heard the first sentence before the model finished');
    assert.equal(model.requests.at(-1).stream, true, 'the reply was asked for as a stream');
    assert.equal(answered.transcript[1].text, 'When do you open?');
    assert.equal(answered.transcript[2].text, `${first}${rest}`);
    const latency = answered.transcript[2].latency;
    assert.ok(latency, 'the turn records its stages');
    for (const stage of ['endOfTurnMs', 'recognitionMs', 'brainMs', 'firstAudioMs', 'totalMs'])
      assert.equal(typeof latency[stage], 'number', stage);
    assert.ok(latency.totalMs >= latency.endOfTurnMs + latency.recognitionMs + latency.brainMs);
    await spokeAndStopped(arrivals, firstHeard);
    assert.equal((await api('POST', `/calls/${callId}/hangup`)).status, 200);
    await trunk;
    phone.close();
  });

  test('a caller who talks over a long answer cuts it off and is answered; a cough does not', async () => {
    const { phone, arrivals, packets } = await callerPhone();
    const { trunk, callId } = await dial(phone);
    await spokeAndStopped(arrivals, 0);
    const long = [
      'We offer cleanings, fillings, crowns, bridges and root canals for adults and children.',
      'Our hygienists see patients every weekday from eight in the morning to six in the evening.',
      'We also offer teeth whitening, clear aligners and emergency appointments on the same day.',
      'Most insurance plans are accepted, and we offer payment plans for larger treatments.',
    ].join(' ');
    model.replies.push({ pieces: long.split(/(?<= )/), delayMs: 5 });
    model.replies.push({ pieces: ['Of course. ', 'We have a free slot on Monday at ten.'], delayMs: 5 });
    const fullSeconds = (await synthesise(long))!.length / 8000;
    const asked = performance.now();
    await phone.play(await say('What services do you offer?'));
    // The agent speaks; two seconds in, the caller coughs (100 ms), then a second later talks over it.
    while (!arrivals.some((at) => at > asked)) await sleep(20);
    const answerStart = arrivals.find((at) => at > asked)!;
    await sleep(Math.max(0, answerStart + 2000 - performance.now()));
    await phone.play(concatenate(tone(0.1, 300), silence(0.5)));
    const afterCough = performance.now();
    await sleep(1000);
    assert.ok(
      arrivals.some((at) => at > afterCough + 500),
      'the agent went on speaking after the cough',
    );
    const interruption = await say('Can I book an appointment?');
    const voicedFrom = interruption.findIndex((sample) => Math.abs(sample) > 64);
    const sendingAt = performance.now();
    const speechStart = sendingAt + (voicedFrom / 8000) * 1000;
    await phone.play(interruption);
    // The agent's last packet before its stream of packets broke off (a say sends one every 20 ms).
    const after = packets.filter((at) => at >= speechStart);
    const gap = after.findIndex((at, i) => i + 1 < after.length && after[i + 1]! - at > 200);
    const stopped = gap >= 0 ? after[gap]! : after.at(-1)!;
    const cutMs = Math.round(stopped - speechStart);
    const spokenMs = Math.round(stopped - answerStart);
    console.log(
      `barge-in: the agent's audio stopped ${cutMs} ms after the caller began speaking ` +
        `(its reply was ${Math.round(fullSeconds * 1000)} ms long; ${spokenMs} ms of it went out)`,
    );
    const speechSeconds = (interruption.length - voicedFrom) / 8000;
    assert.ok(
      stopped - speechStart < speechSeconds * 1000,
      'the agent stopped while the caller was speaking',
    );
    assert.ok(stopped - answerStart < fullSeconds * 1000 * 0.5, 'long before its reply would have ended');
    const row = await turnsReached(callId, 5);
    const cut = row.transcript[2];
    assert.equal(cut.role, 'agent');
    assert.equal(cut.interrupted, true);
    assert.ok(cut.text.length > 0 && long.startsWith(cut.text.slice(0, 20)), 'what it said, from the start');
    assert.ok(cut.text.length < long.length, 'and not what it never said');
    assert.equal(row.transcript[3].role, 'caller');
    assert.equal(row.transcript[3].text, 'Can I book an appointment?');
    assert.equal(row.transcript[4].text, 'Of course. We have a free slot on Monday at ten.');
    assert.equal(row.transcript[4].interrupted, undefined);
    assert.equal((await api('POST', `/calls/${callId}/hangup`)).status, 200);
    await trunk;
    phone.close();
  });
});
