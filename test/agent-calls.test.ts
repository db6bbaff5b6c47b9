// Agent calls on the simulated PBX (CONTRACT section 10) over a real socket: an inbound call to a number routed
// to an agent, turn by turn (the caller's words from the test control), answered by the offline brain from the
// knowledge base; the agent transferring to a person, ending the call on a goodbye, cut off at
// maxDurationSeconds; the caller hanging up; an outbound call by the API, answered or not; the transcript,
// outcome, summary and the agent_call.* webhooks; other organizations and products. The caller's words as audio,
// transcribed by the transcription engine (a local server speaking the OpenAI transcription API).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeWav, encodeWav, tone } from '../src/modules/voice/audio.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import { transcriptionServer } from './helpers/transcription-server.ts';

describe('agent calls on the simulated PBX', () => {
  let t: TestApp;
  let receiver: Receiver;
  let office: Sender;
  let agentId: string;
  let numberId: string;
  before(async () => {
    t = await startTestApp();
    receiver = await startReceiver(() => t.ctx.clock.nowMs());
    office = await sender(t);
    const token = await signIn(t, await createUser(t, { role: 'owner', organizationIds: [office.id] }));
    const hook = await t.request('POST', '/api/webhooks', {
      token,
      body: {
        url: `${receiver.url}/hooks`,
        events: ['agent_call.started', 'agent_call.completed', 'agent_call.transferred'],
      },
    });
    assert.equal(hook.status, 201, hook.text);
    const kb = (await api('POST', '/knowledge-bases', { name: 'Front desk' })).body.data;
    for (const [title, content] of [
      [
        'Opening hours',
        'We are open Monday to Friday from 8am to 6pm. On Saturdays we open from 9am to 1pm. We are closed on Sundays.',
      ],
      ['Insurance', 'We accept Delta Dental, MetLife and Cigna. We do not accept Medicaid.'],
    ]) {
      await api('POST', `/knowledge-bases/${kb.id}/documents`, { title, content });
    }
    const agent = await api('POST', '/agents', {
      name: 'Receptionist',
      firstMessage: 'Bright Smile Dental, how can I help?',
      knowledgeBaseIds: [kb.id],
      transferTo: '+14155550100',
      maxDurationSeconds: 60,
    });
    assert.equal(agent.status, 201, agent.text);
    agentId = agent.body.data.id;
    numberId = (await api('GET', '/numbers')).body.data[0].id;
    const routed = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'agent', target: agentId },
    });
    assert.equal(routed.status, 200, routed.text);
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
  const drive = (callId: string, body: Record<string, unknown>) =>
    t.admin('POST', `/test/pbx/calls/${callId}`, body);
  const agentCallOf = async (callId: string) =>
    ((await api('GET', '/agent-calls?limit=100')).body.data as Record<string, any>[]).find(
      (row) => row.callId === callId,
    )!;
  /** Waits until the agent call's transcript has `turns` turns (the agent answers in the background). */
  const turnsReached = async (callId: string, turns: number) => {
    for (let i = 0; i < 100; i++) {
      const row = await agentCallOf(callId);
      if (row && row.transcript.length >= turns) return row;
      await sleep(50);
    }
    throw new Error(`the transcript of ${callId} never reached ${turns} turns`);
  };
  const events = async (agentCallId: string) => {
    await t.ctx.jobs.drain();
    return receiver.received
      .map(
        (delivery) =>
          JSON.parse(delivery.body) as { type: string; data: { id: string; outcome: string | null } },
      )
      .filter((event) => event.data.id === agentCallId);
  };

  test('inbound: the agent answers from the knowledge base turn by turn, then transfers to a person', async () => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', {
      from: '+14155550123',
      to: office.number,
      utterances: ['Are you open on Saturdays?', 'Do you take Cigna?'],
    });
    assert.equal(arrived.status, 201, arrived.text);
    const callId = arrived.body.data.id;
    const during = await turnsReached(callId, 5);
    assert.equal(during.status, 'in_progress');
    assert.equal(during.direction, 'inbound');
    assert.equal(during.agentId, agentId);
    assert.deepEqual(
      during.transcript.map((turn: { role: string }) => turn.role),
      ['agent', 'caller', 'agent', 'caller', 'agent'],
    );
    assert.equal(during.transcript[0].text, 'Bright Smile Dental, how can I help?');
    assert.match(during.transcript[2].text, /Saturdays we open from 9am to 1pm/);
    assert.match(during.transcript[4].text, /Cigna/);
    // Each answer records its stages (words came as text: nothing to wait for or recognise), read by the API.
    const read = (await api('GET', `/agent-calls/${during.id}`)).body.data;
    assert.equal(read.transcript[0].latency, undefined, 'the first message answers nobody');
    for (const answer of [read.transcript[2], read.transcript[4]]) {
      assert.deepEqual(Object.keys(answer.latency).sort(), [
        'brainMs',
        'endOfTurnMs',
        'firstAudioMs',
        'recognitionMs',
        'totalMs',
      ]);
      assert.equal(answer.latency.endOfTurnMs, 0);
      assert.equal(answer.interrupted, undefined, 'nobody talks over the agent on the simulated PBX');
    }
    const call = (await api('GET', `/calls/${callId}`)).body.data;
    assert.equal(call.status, 'in_progress');
    assert.equal(call.agentId, agentId);

    const asked = await drive(callId, { event: 'utterance', text: 'Can I speak to a real person please?' });
    assert.equal(asked.status, 200, asked.text);
    // The transfer rings the person; they answer; caller and person talk until the caller hangs up.
    assert.equal((await drive(callId, { event: 'answered' })).status, 200);
    const ended = await drive(callId, { event: 'completed' });
    assert.equal(ended.body.data.status, 'completed');

    const done = (await api('GET', `/agent-calls/${during.id}`)).body.data;
    assert.equal(done.status, 'completed');
    assert.equal(done.outcome, 'transferred');
    assert.equal(done.transcript.length, 7);
    assert.match(done.transcript[6].text, /transfer you/);
    assert.match(done.summary, /Are you open on Saturdays\?/);
    assert.match(done.summary, /transferred/);
    assert.ok(done.endedAt);
    assert.equal(typeof done.durationSeconds, 'number');
    // Recorded (agents record their calls unless told not to): the agent's part, then the person's.
    assert.ok(done.recordingId, 'the agent call has a recording');
    assert.equal((await api('GET', `/calls/${callId}`)).body.data.recordingId, done.recordingId);
    const recording = (await api('GET', `/recordings/${done.recordingId}`)).body.data;
    assert.equal(recording.callId, callId);
    const audio = await fetch(`${t.url}/api/v2/recordings/${done.recordingId}/audio`, {
      headers: { 'x-api-key': office.key },
    });
    assert.equal(audio.status, 200);
    const wav = decodeWav(Buffer.from(await audio.arrayBuffer()));
    assert.equal(wav.sampleRate, 8000);
    // Seven turns spoken (each at least a second of speech or tone) before the person's part.
    assert.ok(wav.samples.length >= 7 * 8000, `${wav.samples.length} samples`);
    assert.equal(recording.durationSeconds, Math.ceil(wav.samples.length / 8000));
    // Webhooks are delivered concurrently: each once, in whatever order they arrive.
    assert.deepEqual((await events(done.id)).map((event) => event.type).sort(), [
      'agent_call.completed',
      'agent_call.started',
      'agent_call.transferred',
    ]);
  });

  test("the caller's goodbye ends the call; a caller who hangs up ends it too", async () => {
    const bye = await t.admin('POST', '/test/pbx/inbound', {
      from: '+14155550124',
      to: office.number,
      utterances: ['Thanks, that is all. Goodbye!'],
    });
    const byeCall = bye.body.data.id;
    // Nothing to drive: the agent ends the call by itself, and its record's end is written after the call's.
    let ended = await agentCallOf(byeCall);
    for (let i = 0; i < 100 && !ended?.outcome; i++) {
      await sleep(50);
      ended = await agentCallOf(byeCall);
    }
    assert.equal(ended.outcome, 'ended_by_agent');
    assert.match(ended.transcript[2].text, /Goodbye/);

    const gone = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550125', to: office.number });
    const goneCall = gone.body.data.id;
    await turnsReached(goneCall, 1);
    assert.equal((await drive(goneCall, { event: 'completed' })).body.data.status, 'completed');
    const hungUp = await agentCallOf(goneCall);
    assert.equal(hungUp.outcome, 'completed');
    assert.match(hungUp.summary, /said nothing/);
    assert.equal((await drive(goneCall, { event: 'utterance', text: 'hello?' })).status, 409);
  });

  test('an agent told not to record its calls leaves no recording', async () => {
    assert.equal((await api('PATCH', `/agents/${agentId}`, { recordCalls: false })).status, 200);
    try {
      const bye = await t.admin('POST', '/test/pbx/inbound', {
        from: '+14155550128',
        to: office.number,
        utterances: ['Goodbye!'],
      });
      const callId = bye.body.data.id;
      let ended = await agentCallOf(callId);
      for (let i = 0; i < 100 && !ended?.outcome; i++) {
        await sleep(50);
        ended = await agentCallOf(callId);
      }
      assert.equal(ended.outcome, 'ended_by_agent');
      assert.equal(ended.recordingId, null);
      assert.equal((await api('GET', `/calls/${callId}`)).body.data.recordingId, null);
    } finally {
      await api('PATCH', `/agents/${agentId}`, { recordCalls: true });
    }
  });

  test('maxDurationSeconds: past it, the agent says so and ends the call', async () => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550126', to: office.number });
    const callId = arrived.body.data.id;
    await turnsReached(callId, 1);
    t.ctx.clock.advance(61);
    await drive(callId, { event: 'utterance', text: 'Are you open on Sundays?' });
    const row = await agentCallOf(callId);
    assert.equal(row.outcome, 'ended_by_agent');
    assert.match(row.transcript.at(-1).text, /time limit/);
    assert.equal((await api('GET', `/calls/${callId}`)).body.data.status, 'completed');
  });

  test('an utterance needs words: 400 without text or audio, and nothing happens', async () => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550127', to: office.number });
    const callId = arrived.body.data.id;
    await turnsReached(callId, 1);
    assert.equal((await drive(callId, { event: 'utterance' })).status, 400);
    assert.equal((await agentCallOf(callId)).transcript.length, 1);
    await drive(callId, { event: 'completed' });
  });

  test('outbound by the API: the agent talks once the callee answers; unanswered, no_answer', async () => {
    const placed = await api('POST', `/agents/${agentId}/calls`, { to: '+14155550188' });
    assert.equal(placed.status, 202, placed.text);
    assert.equal(placed.body.data.status, 'queued');
    assert.equal(placed.body.data.direction, 'outbound');
    assert.equal(placed.body.data.from, office.number);
    const callId = placed.body.data.callId;
    for (let i = 0; i < 50 && (await drive(callId, { event: 'ringing' })).status !== 200; i++)
      await sleep(20);
    assert.equal((await agentCallOf(callId)).status, 'ringing');
    await drive(callId, { event: 'answered' });
    await turnsReached(callId, 1);
    await drive(callId, { event: 'utterance', text: 'What insurance do you accept?' });
    assert.match((await agentCallOf(callId)).transcript[2].text, /Delta Dental/);
    await drive(callId, { event: 'completed' });
    assert.equal((await agentCallOf(callId)).outcome, 'completed');

    const unanswered = await api('POST', `/agents/${agentId}/calls`, { to: '+14155550189' });
    const missed = unanswered.body.data.callId;
    for (let i = 0; i < 50 && (await drive(missed, { event: 'no_answer' })).status !== 200; i++)
      await sleep(20);
    const row = await agentCallOf(missed);
    assert.equal(row.outcome, 'no_answer');
    assert.deepEqual(row.transcript, []);

    for (const [body, message] of [
      [{ to: 'nobody' }, /to must be a phone number/],
      [{ to: '+14155550190', from: '+14155550191' }, /from must be one of your numbers/],
    ] as const) {
      const refused = await api('POST', `/agents/${agentId}/calls`, body);
      assert.equal(refused.status, 400);
      assert.match(refused.body.error, message);
    }
  });

  test('other organizations 404; without the agents product 402', async () => {
    const globex = await sender(t);
    const theirs = (api: string) => t.request('GET', `/api/v2${api}`, { apiKey: globex.key });
    const [first] = (await api('GET', '/agent-calls')).body.data;
    assert.equal((await theirs(`/agent-calls/${first.id}`)).status, 404);
    assert.equal((await theirs('/agent-calls')).body.data.length, 0);
    const placed = await t.request('POST', `/api/v2/agents/${agentId}/calls`, {
      apiKey: globex.key,
      body: { to: '+14155550192' },
    });
    assert.equal(placed.status, 404);
    const noAgents = await sender(t, { products: ['messaging', 'voice'] });
    assert.equal((await t.request('GET', '/api/v2/agent-calls', { apiKey: noAgents.key })).status, 402);

    // A number still routed to an agent after the organization lost the agents product: calls to it are
    // refused (recorded failed, no_agents_product), and no agent answers them.
    const lapsed = await sender(t);
    const theirsApi = (method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: lapsed.key, body });
    const theirAgent = await theirsApi('POST', '/agents', { name: 'Lapsed', firstMessage: 'Hello.' });
    assert.equal(theirAgent.status, 201, theirAgent.text);
    const [theirNumber] = (await theirsApi('GET', '/numbers')).body.data;
    const routed = await theirsApi('PATCH', `/numbers/${theirNumber.id}`, {
      voiceRoute: { type: 'agent', target: theirAgent.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
    const lost = await t.admin('PATCH', `/organizations/${lapsed.id}`, { products: ['messaging', 'voice'] });
    assert.equal(lost.status, 200, lost.text);
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550123', to: lapsed.number });
    assert.equal(arrived.status, 201, arrived.text);
    const refusedCall = (await theirsApi('GET', `/calls/${arrived.body.data.id}`)).body.data;
    assert.equal(refusedCall.status, 'failed');
    assert.equal(refusedCall.hangupCause, 'no_agents_product');
    assert.equal(refusedCall.agentId, null);
    const restored = await t.admin('PATCH', `/organizations/${lapsed.id}`, {
      products: ['messaging', 'voice', 'agents'],
    });
    assert.equal(restored.status, 200, restored.text);
    assert.deepEqual((await theirsApi('GET', '/agent-calls')).body.data, []);
  });
});

describe('agent calls hearing audio', () => {
  let t: TestApp;
  let office: Sender;
  let service: Awaited<ReturnType<typeof transcriptionServer>>;
  let said = 'Do you take Cigna?';
  before(async () => {
    service = await transcriptionServer(() =>
      said
        ? { status: 200, body: JSON.stringify({ text: ` ${said} ` }) }
        : { status: 400, body: '{"error":"x"}' },
    );
    t = await startTestApp({ config: { transcriptionUrl: service.url } });
    office = await sender(t);
    const api = (method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
    const kb = (await api('POST', '/knowledge-bases', { name: 'FAQ' })).body.data;
    await api('POST', `/knowledge-bases/${kb.id}/documents`, {
      title: 'Insurance',
      content: 'We accept Delta Dental, MetLife and Cigna.',
    });
    const agent = (await api('POST', '/agents', { name: 'Desk', knowledgeBaseIds: [kb.id] })).body.data;
    const [number] = (await api('GET', '/numbers')).body.data;
    await api('PATCH', `/numbers/${number.id}`, { voiceRoute: { type: 'agent', target: agent.id } });
  });
  after(async () => {
    await t.close();
    await service.server.close();
  });

  test("the caller's audio is transcribed by the transcription engine and answered; unheard audio is asked again", async () => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550123', to: office.number });
    const callId = arrived.body.data.id;
    const wav = encodeWav(tone(1));
    const heard = await t.admin('POST', `/test/pbx/calls/${callId}`, {
      event: 'utterance',
      audio: wav.toString('base64'),
    });
    assert.equal(heard.status, 200, heard.text);
    assert.deepEqual(service.seen.at(-1), wav, 'the engine got the WAV the caller said');
    const api = (path: string) => t.request('GET', `/api/v2${path}`, { apiKey: office.key });
    let [row] = (await api('/agent-calls')).body.data;
    assert.equal(row.transcript[1].text, 'Do you take Cigna?');
    assert.match(row.transcript[2].text, /Cigna/);

    said = '';
    await t.admin('POST', `/test/pbx/calls/${callId}`, { event: 'utterance', audio: wav.toString('base64') });
    [row] = (await api('/agent-calls')).body.data;
    assert.equal(row.transcript.length, 4, 'nothing heard is not a caller turn');
    assert.match(row.transcript[3].text, /didn't catch that/);
    await t.admin('POST', `/test/pbx/calls/${callId}`, { event: 'completed' });
  });
});
