// Transfers on the simulated PBX through the HTTP API (issue 33, CONTRACT section 13): POST /calls/{id}/transfer
// moves a call in progress from one extension to another (blind: the first person is let go and the caller
// waits for the target; attended: they talk on until the target answers, and an unanswered target leaves the
// call as it was), the record says transferredTo and transferredAt, call.transferred is recorded; a blind
// transfer nobody answers ends the call `transfer_failed`; a call flow's transfer step does the same for a
// flow's caller; refusals: 404 for another organization's call, 409 CALL_NOT_IN_PROGRESS, 400 for a bad
// target, 403 without calls:write; the portal twin.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

describe('transfers (simulated PBX)', () => {
  let t: TestApp;
  let who: Sender;
  let numberId: string;
  let front: { id: string };
  let sales: { id: string };
  before(async () => {
    t = await startTestApp();
    who = await sender(t);
    front = (await api('POST', '/extensions', { extension: '101', name: 'Front desk' })).body.data;
    sales = (await api('POST', '/extensions', { extension: '102', name: 'Sales' })).body.data;
    numberId = (await api('GET', '/numbers')).body.data[0].id;
    await routeTo({ type: 'extension', target: front.id });
  });
  after(() => t.close());

  const api = (method: string, path: string, body?: unknown, key = who.key) =>
    t.request(method, `/api/v2${path}`, { apiKey: key, body });
  const drive = (callId: string, event: string) => t.admin('POST', `/test/pbx/calls/${callId}`, { event });
  const routeTo = async (voiceRoute: unknown) => {
    const routed = await api('PATCH', `/numbers/${numberId}`, { voiceRoute });
    assert.equal(routed.status, 200, routed.text);
  };
  const call = async (id: string) => (await t.ctx.calls.get(who.id, id)) as unknown as Record<string, any>;
  /** Waits until the call's record satisfies `ok` (writes land just after the test control answers). */
  const until = async (id: string, ok: (call: Record<string, any>) => boolean) => {
    for (let i = 0; i < 200; i++) {
      const now = await call(id);
      if (ok(now)) return now;
      await sleep(25);
    }
    throw new Error(`call ${id} never got there: ${JSON.stringify(await call(id))}`);
  };
  const transferredEvents = async (callId: string) =>
    (
      await t.ctx.db.query<{ data: Record<string, unknown> }>(
        `SELECT data FROM events WHERE type = 'call.transferred' AND data->>'callId' = $1 ORDER BY created_at, id`,
        [callId],
      )
    ).map((row) => row.data);
  /** A caller reaches the front desk, which answers: the call is in progress. */
  const talking = async () => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550198', to: who.number });
    assert.equal(arrived.status, 201, arrived.text);
    const id = arrived.body.data.id as string;
    await drive(id, 'ringing');
    await drive(id, 'answered');
    await until(id, (now) => now.status === 'in_progress');
    return id;
  };

  test('blind: the front desk transfers the caller to sales, who answers; the record and call.transferred say so', async () => {
    const id = await talking();
    const asked = await api('POST', `/calls/${id}/transfer`, {
      target: { type: 'extension', target: sales.id },
    });
    assert.equal(asked.status, 202, asked.text);
    assert.equal(asked.body.data.id, id);
    assert.equal(asked.body.data.transferredTo, null, 'nothing is transferred until the target answers');
    // Sales rings (a second ringing changes nothing), then answers.
    assert.equal((await drive(id, 'ringing')).status, 200);
    assert.equal((await drive(id, 'answered')).status, 200);
    const moved = await until(id, (now) => now.transferredTo !== null);
    assert.deepEqual(moved.transferredTo, { type: 'extension', target: sales.id });
    assert.equal(moved.status, 'in_progress');
    assert.ok(moved.transferredAt >= moved.answeredAt, 'transferred after the answer');
    assert.equal(moved.extensionId, front.id, 'the call stays the front desk’s in its record');
    const [event] = await transferredEvents(id);
    assert.deepEqual(event, {
      callId: id,
      target: { type: 'extension', target: sales.id },
      mode: 'blind',
      by: 'api',
      at: moved.transferredAt,
    });
    // The caller and sales talk until one hangs up: one call, completed.
    await drive(id, 'completed');
    const ended = await until(id, (now) => now.endedAt !== null);
    assert.equal(ended.status, 'completed');
    assert.equal(ended.hangupCause, 'normal_clearing');
    assert.deepEqual(ended.transferredTo, { type: 'extension', target: sales.id });
  });

  test('a ring group (its members at once) and an extension by its sip: URI are targets too', async () => {
    const desk = (await api('POST', '/extensions', { extension: '103', name: 'Desk' })).body.data;
    const group = await api('POST', '/ring-groups', {
      name: 'Sales team',
      extensionIds: [sales.id, desk.id],
      strategy: 'sequential',
      ringSeconds: 20,
    });
    assert.equal(group.status, 201, group.text);
    const id = await talking();
    const asked = await api('POST', `/calls/${id}/transfer`, {
      target: { type: 'ring_group', target: group.body.data.id },
    });
    assert.equal(asked.status, 202, asked.text);
    // Both members ring at once (a transfer is one ring, whatever the group's own order).
    const rung = t.ctx.simulatedPbx.rungParties(id).at(-1) as {
      kind: string;
      members?: { extensionId: string }[];
    };
    assert.equal(rung.kind, 'extensions');
    assert.deepEqual(
      rung.members?.map((member) => member.extensionId),
      [sales.id, desk.id],
    );
    await drive(id, 'answered');
    const moved = await until(id, (now) => now.transferredTo !== null);
    assert.deepEqual(moved.transferredTo, { type: 'ring_group', target: group.body.data.id });
    await drive(id, 'completed');
    await until(id, (now) => now.endedAt !== null);

    // sip:<extension>@<the SIP domain> is that extension; another host is a 400 and changes nothing.
    const second = await talking();
    const elsewhere = await api('POST', `/calls/${second}/transfer`, {
      target: { type: 'sip', target: 'sip:102@pbx.example.com' },
    });
    assert.equal(elsewhere.status, 400, elsewhere.text);
    assert.equal(elsewhere.body.code, 'INVALID_TRANSFER_TARGET');
    const byUri = await api('POST', `/calls/${second}/transfer`, {
      target: { type: 'sip', target: `sip:102@${t.ctx.config.sipDomain}` },
    });
    assert.equal(byUri.status, 202, byUri.text);
    const party = t.ctx.simulatedPbx.rungParties(second).at(-1) as { kind: string; extensionId?: string };
    assert.deepEqual([party.kind, party.extensionId], ['extension', sales.id]);
    await drive(second, 'answered');
    const bySip = await until(second, (now) => now.transferredTo !== null);
    assert.deepEqual(bySip.transferredTo, { type: 'sip', target: `sip:102@${t.ctx.config.sipDomain}` });
    await drive(second, 'completed');
    await until(second, (now) => now.endedAt !== null);
    await api('DELETE', `/ring-groups/${group.body.data.id}`);
    await api('DELETE', `/extensions/${desk.id}`);
  });

  test('blind to a number nobody answers: the call ends transfer_failed, never transferred', async () => {
    const id = await talking();
    const asked = await api('POST', `/calls/${id}/transfer`, {
      target: { type: 'number', target: '+14155550142' },
      mode: 'blind',
    });
    assert.equal(asked.status, 202, asked.text);
    await drive(id, 'no_answer');
    const ended = await until(id, (now) => now.endedAt !== null);
    assert.equal(ended.status, 'completed');
    assert.equal(ended.hangupCause, 'transfer_failed');
    assert.equal(ended.transferredTo, null);
    assert.deepEqual(await transferredEvents(id), []);
  });

  test('attended: busy leaves the call as it was; a second try answered moves it', async () => {
    const id = await talking();
    const first = await api('POST', `/calls/${id}/transfer`, {
      target: { type: 'extension', target: sales.id },
      mode: 'attended',
    });
    assert.equal(first.status, 202, first.text);
    // A second transfer while the first rings: refused.
    const twice = await api('POST', `/calls/${id}/transfer`, {
      target: { type: 'extension', target: sales.id },
    });
    assert.equal(twice.status, 409, twice.text);
    assert.equal(twice.body.code, 'CALL_NOT_IN_PROGRESS');
    await drive(id, 'busy');
    // The front desk and the caller still talk: the conversation takes the test control's end again.
    await sleep(50);
    assert.equal((await call(id)).status, 'in_progress');
    const second = await api('POST', `/calls/${id}/transfer`, {
      target: { type: 'number', target: '+14155550143' },
      mode: 'attended',
    });
    assert.equal(second.status, 202, second.text);
    await drive(id, 'answered');
    const moved = await until(id, (now) => now.transferredTo !== null);
    assert.deepEqual(moved.transferredTo, { type: 'number', target: '+14155550143' });
    const events = await transferredEvents(id);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.mode, 'attended');
    // The API's hang-up ends the transferred call.
    const hungUp = await api('POST', `/calls/${id}/hangup`);
    assert.equal(hungUp.status, 200, hungUp.text);
    assert.equal(hungUp.body.data.hangupCause, 'hangup_requested');
  });

  test('the caller hangs up while the target rings: the call is completed, not transferred', async () => {
    const id = await talking();
    assert.equal(
      (await api('POST', `/calls/${id}/transfer`, { target: { type: 'extension', target: sales.id } }))
        .status,
      202,
    );
    await drive(id, 'completed');
    const ended = await until(id, (now) => now.endedAt !== null);
    assert.equal(ended.status, 'completed');
    assert.equal(ended.transferredTo, null);
  });

  test('a call flow’s transfer step moves the caller to the target; unanswered, the flow goes on', async () => {
    const flow = await api('POST', '/call-flows', {
      name: 'Transfer',
      steps: [
        { type: 'say', text: 'Transferring you.' },
        { type: 'transfer', target: { type: 'extension', target: sales.id } },
        { type: 'hangup' },
      ],
    });
    assert.equal(flow.status, 201, flow.text);
    await routeTo({ type: 'flow', target: flow.body.data.id });
    try {
      const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550199', to: who.number });
      const id = arrived.body.data.id as string;
      await until(id, (now) => now.status === 'in_progress');
      await drive(id, 'answered');
      const moved = await until(id, (now) => now.transferredTo !== null);
      assert.deepEqual(moved.transferredTo, { type: 'extension', target: sales.id });
      const [event] = await transferredEvents(id);
      assert.equal(event!.by, 'flow');
      await drive(id, 'completed');
      const ended = await until(id, (now) => now.endedAt !== null);
      assert.equal(ended.status, 'completed');
      assert.equal(ended.hangupCause, 'normal_clearing');

      // Unanswered: the flow goes on to its hangup.
      const again = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550199', to: who.number });
      const next = again.body.data.id as string;
      await until(next, (now) => now.status === 'in_progress');
      await drive(next, 'no_answer');
      const over = await until(next, (now) => now.endedAt !== null);
      assert.equal(over.hangupCause, 'flow_hangup');
      assert.equal(over.transferredTo, null);
    } finally {
      await routeTo({ type: 'extension', target: front.id });
    }
  });

  test('refusals: 404 another organization’s call, 409 not in progress, 400 bad targets, 403 without calls:write; nothing changes', async () => {
    const id = await talking();
    const stranger = await sender(t);
    const theirs = await api(
      'POST',
      `/calls/${id}/transfer`,
      { target: { type: 'number', target: '+14155550144' } },
      stranger.key,
    );
    assert.equal(theirs.status, 404, theirs.text);
    assert.equal(
      (await api('POST', '/calls/call_nope/transfer', { target: { type: 'number', target: '+14155550144' } }))
        .status,
      404,
    );

    const otherExtension = (
      await api('POST', '/extensions', { extension: '301', name: 'Theirs' }, stranger.key)
    ).body.data;
    const foreign = await api('POST', `/calls/${id}/transfer`, {
      target: { type: 'extension', target: otherExtension.id },
    });
    assert.equal(foreign.status, 400, foreign.text);
    assert.equal(foreign.body.code, 'INVALID_TRANSFER_TARGET');
    const notE164 = await api('POST', `/calls/${id}/transfer`, {
      target: { type: 'number', target: '4155550144' },
    });
    assert.equal(notE164.status, 400);
    assert.equal(notE164.body.code, 'INVALID_TRANSFER_TARGET');
    for (const body of [
      {},
      { target: { type: 'sip', target: 'sip:a@b' } },
      { target: { type: 'extension' } },
      { target: { type: 'number', target: '+14155550144' }, mode: 'warm' },
      { target: { type: 'number', target: '+14155550144' }, extra: 1 },
    ]) {
      const bad = await api('POST', `/calls/${id}/transfer`, body);
      assert.equal(bad.status, 400, `${JSON.stringify(body)}: ${bad.text}`);
    }
    const reader = await t.ctx.apiKeys.create(who.id, { name: 'r', scopes: ['calls:read'] as never });
    const unscoped = await api(
      'POST',
      `/calls/${id}/transfer`,
      { target: { type: 'number', target: '+14155550144' } },
      reader.secret,
    );
    assert.equal(unscoped.status, 403);
    // Nothing of those rang: the call still waits on its conversation, which takes `completed`.
    assert.equal((await drive(id, 'answered')).status, 409, 'no transfer rings');
    await drive(id, 'completed');
    const ended = await until(id, (now) => now.endedAt !== null);
    assert.equal(ended.transferredTo, null);

    const late = await api('POST', `/calls/${id}/transfer`, {
      target: { type: 'number', target: '+14155550144' },
    });
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'CALL_NOT_IN_PROGRESS');
    // Ringing, not answered yet: not in progress either.
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550198', to: who.number });
    const ringing = arrived.body.data.id as string;
    await drive(ringing, 'ringing');
    const early = await api('POST', `/calls/${ringing}/transfer`, {
      target: { type: 'number', target: '+14155550144' },
    });
    assert.equal(early.status, 409);
    assert.equal(early.body.code, 'CALL_NOT_IN_PROGRESS');
    await drive(ringing, 'completed');
  });

  test('the portal twin: a member transfers a call', async () => {
    const id = await talking();
    const member = await signIn(t, await createUser(t, { role: 'member', organizationIds: [who.id] }));
    const asked = await t.request('POST', `/v2/portal/calls/${id}/transfer`, {
      token: member,
      body: { target: { type: 'extension', target: sales.id } },
    });
    assert.equal(asked.status, 202, asked.text);
    await drive(id, 'answered');
    await until(id, (now) => now.transferredTo !== null);
    await drive(id, 'completed');
    await until(id, (now) => now.endedAt !== null);
  });
});
