// Keys, answering machines and warm transfers on agent calls (issue 34), on the simulated PBX over a real socket:
// the caller's keys from the test control reach the agent (a mapped key repeats, transfers or ends the call; any
// other is the caller's turn, recorded with its digits and read by the brain); an outbound call to a machine
// (a number ending 0626) leaves the message or hangs up, as configured, and says who answered; a warm transfer
// says its summary to the person before the caller is put through. The settings' validation and defaults.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';

describe('keys, answering machines and warm transfers on agent calls (simulated PBX)', () => {
  let t: TestApp;
  let office: Sender;
  let agentId: string;
  before(async () => {
    t = await startTestApp();
    office = await sender(t);
    const kb = (await api('POST', '/knowledge-bases', { name: 'Front desk' })).body.data;
    await api('POST', `/knowledge-bases/${kb.id}/documents`, {
      title: 'Opening hours',
      content: 'On Saturdays we open from 9am to 1pm. We are closed on Sundays.',
    });
    const agent = await api('POST', '/agents', {
      name: 'Receptionist',
      firstMessage: 'Bright Smile Dental, how can I help?',
      knowledgeBaseIds: [kb.id],
      transferTo: '+14155550100',
      keys: { '0': 'transfer', '1': 'repeat', '#': 'end_call' },
      transferMode: 'warm',
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
  const until = async (callId: string, done: (row: Record<string, any>) => boolean) => {
    for (let i = 0; i < 200; i++) {
      const row = await agentCallOf(callId);
      if (row && done(row)) return row;
      await sleep(25);
    }
    throw new Error(`agent call of ${callId} never got there: ${JSON.stringify(await agentCallOf(callId))}`);
  };
  const inbound = async () => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550123', to: office.number });
    assert.equal(arrived.status, 201, arrived.text);
    const callId = arrived.body.data.id as string;
    await until(callId, (row) => row.transcript.length >= 1);
    return callId;
  };
  const turns = (row: Record<string, any>) =>
    row.transcript.map((turn: { role: string; text: string; digits?: string }) =>
      turn.digits === undefined ? [turn.role, turn.text.slice(0, 20)] : [turn.role, turn.text, turn.digits],
    );

  test('the agent has keys, machineDetection and transferMode; bad ones are 400 and change nothing', async () => {
    const agent = (await api('GET', `/agents/${agentId}`)).body.data;
    assert.deepEqual(agent.keys, { '0': 'transfer', '1': 'repeat', '#': 'end_call' });
    assert.equal(agent.machineDetection, null);
    assert.equal(agent.transferMode, 'warm');
    const plain = await api('POST', '/agents', { name: 'Plain' });
    assert.deepEqual(
      [plain.body.data.keys, plain.body.data.machineDetection, plain.body.data.transferMode],
      [{}, null, 'cold'],
    );
    for (const bad of [
      { keys: { '12': 'transfer' } },
      { keys: { a: 'transfer' } },
      { keys: { '5': 'dance' } },
      { machineDetection: { action: 'sing' } },
      { machineDetection: { action: 'hang_up', extra: true } },
      { machineDetection: { action: 'leave_message', message: '' } },
      { transferMode: 'lukewarm' },
    ]) {
      const refused = await api('PATCH', `/agents/${agentId}`, bad);
      assert.equal(refused.status, 400, `${JSON.stringify(bad)}: ${refused.text}`);
    }
    assert.deepEqual((await api('GET', `/agents/${agentId}`)).body.data, agent);
    const set = await api('PATCH', `/agents/${plain.body.data.id}`, {
      machineDetection: { action: 'leave_message', message: 'Call us back.' },
    });
    assert.deepEqual(set.body.data.machineDetection, { action: 'leave_message', message: 'Call us back.' });
    const off = await api('PATCH', `/agents/${plain.body.data.id}`, { machineDetection: null });
    assert.equal(off.body.data.machineDetection, null);
  });

  test('a mapped key repeats or ends the call; other keys are the caller’s turn, read by the brain', async () => {
    const callId = await inbound();
    assert.equal(
      (await drive(callId, { event: 'utterance', text: 'Are you open on Saturdays?' })).status,
      200,
    );
    const answered = await until(callId, (row) => row.transcript.length >= 3);
    // 1 repeats the agent's last words.
    assert.equal((await drive(callId, { event: 'digits', digits: '1' })).status, 200);
    let row = await until(callId, (each) => each.transcript.length >= 5);
    assert.deepEqual(turns(row).slice(3), [
      ['caller', '', '1'],
      ['agent', answered.transcript[2].text.slice(0, 20)],
    ]);
    // 4 2 is no key of the agent's: a turn of the caller, answered by the brain.
    assert.equal((await drive(callId, { event: 'digits', digits: '42' })).status, 200);
    row = await until(callId, (each) => each.transcript.length >= 7);
    assert.deepEqual(turns(row)[5], ['caller', '', '42']);
    assert.equal(row.transcript[6].role, 'agent');
    // # ends the call.
    assert.equal((await drive(callId, { event: 'digits', digits: '#' })).status, 200);
    row = await until(callId, (each) => each.outcome !== null);
    assert.equal(row.outcome, 'ended_by_agent');
    assert.deepEqual(turns(row).slice(7), [
      ['caller', '', '#'],
      ['agent', 'Thank you for callin'],
    ]);
    assert.match(row.summary, /pressed 1, pressed 42/);
    assert.equal(row.answeredBy, null);
  });

  test('0 transfers warm: the person hears who calls and what they said, then talks with the caller', async () => {
    const callId = await inbound();
    await drive(callId, { event: 'utterance', text: 'Are you open on Saturdays?' });
    await until(callId, (row) => row.transcript.length >= 3);
    assert.equal((await drive(callId, { event: 'digits', digits: '0' })).status, 200);
    const transferring = await until(callId, (row) => row.transcript.length >= 5);
    assert.deepEqual(turns(transferring).slice(3), [
      ['caller', '', '0'],
      ['agent', 'Please hold while I '],
    ]);
    assert.equal((await drive(callId, { event: 'answered' })).status, 200);
    const said = t.ctx.simulatedPbx.said(callId);
    assert.equal(said.length, 1, JSON.stringify(said));
    assert.match(said[0]!, /^Transferring a call from 1 4 1 5 5 5 5 0 1 2 3\. /);
    assert.match(said[0]!, /"Are you open on Saturdays\?", pressed 0/);
    await drive(callId, { event: 'completed' });
    assert.equal((await until(callId, (row) => row.outcome !== null)).outcome, 'transferred');
  });

  test('an outbound call that a machine answers leaves the message, or hangs up; a person gets the conversation', async () => {
    const outbound = async (to: string) => {
      const placed = await api('POST', `/agents/${agentId}/calls`, { to });
      assert.equal(placed.status, 202, placed.text);
      const callId = placed.body.data.callId as string;
      for (let i = 0; i < 50 && (await drive(callId, { event: 'answered' })).status !== 200; i++)
        await sleep(20);
      return callId;
    };
    await api('PATCH', `/agents/${agentId}`, {
      machineDetection: { action: 'leave_message', message: 'Your appointment is tomorrow at 9am.' },
    });
    const machine = await until(await outbound('+14155550626'), (row) => row.outcome !== null);
    assert.equal(machine.answeredBy, 'machine');
    assert.equal(machine.outcome, 'ended_by_agent');
    assert.deepEqual(
      machine.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text]),
      [['agent', 'Your appointment is tomorrow at 9am.']],
    );
    assert.match(machine.summary, /answering machine/);

    await api('PATCH', `/agents/${agentId}`, { machineDetection: { action: 'hang_up' } });
    const hungUp = await until(await outbound('+14155550626'), (row) => row.outcome !== null);
    assert.equal(hungUp.answeredBy, 'machine');
    assert.deepEqual(hungUp.transcript, []);

    const person = await outbound('+14155550188');
    const talking = await until(person, (row) => row.transcript.length >= 1);
    assert.equal(talking.answeredBy, 'human');
    assert.equal(talking.transcript[0].text, 'Bright Smile Dental, how can I help?');
    await drive(person, { event: 'completed' });
    await api('PATCH', `/agents/${agentId}`, { machineDetection: null });
  });
});
