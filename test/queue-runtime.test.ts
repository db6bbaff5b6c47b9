// The queue runtime (issue 33) on the simulated PBX, through the HTTP API, the operator's test controls and the
// test clock: three callers wait in order, hear their place, and are answered in order as members come free
// (busy on another call first, then a member who lets a caller ring out, then a member's wrap-up); a caller who
// waits past the maximum goes to voicemail through onTimeout; a caller who hangs up is abandoned. GET
// /queues/{id}/live shows the callers' places and the members' states all along, and the queue events are
// recorded; a caller who hangs up while a member rings is abandoned as well. Last, /live's refusals: another
// organization's queue, a missing scope, the portal twin.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

type Live = {
  waiting: { callId: string; from: string; since: string; position: number }[];
  members: { extensionId: string; state: string }[];
};

describe('queues at run time (simulated PBX)', () => {
  let t: TestApp;
  let who: Sender;
  let m1: string;
  let m2: string;
  let box: string;
  let queueId: string;
  before(async () => {
    t = await startTestApp();
    who = await sender(t);
    const extension = async (body: Record<string, unknown>) => {
      const res = await api('POST', '/extensions', body);
      assert.equal(res.status, 201, res.text);
      return res.body.data.id as string;
    };
    m1 = await extension({ extension: '101', name: 'Ann' });
    m2 = await extension({ extension: '102', name: 'Bob' });
    box = await extension({
      extension: '103',
      name: 'After hours',
      voicemail: { enabled: true, greeting: 'Leave a message.' },
    });
    const queue = await api('POST', '/queues', {
      name: 'Support',
      extensionIds: [m1, m2],
      strategy: 'sequential',
      announcePosition: true,
      wrapUpSeconds: 30,
      maxWaitSeconds: 120,
      onTimeout: [{ type: 'voicemail', extensionId: box }],
    });
    assert.equal(queue.status, 201, queue.text);
    queueId = queue.body.data.id;
    // A flow naming a queue the organization does not have is refused when saved.
    const missing = await api('POST', '/call-flows', {
      name: 'Nowhere',
      steps: [{ type: 'queue', queueId: 'q_0000000001abcdefabcdefabcd' }],
    });
    assert.equal(missing.status, 400, missing.text);
    assert.equal(missing.body.code, 'INVALID_FLOW_STEP');
    assert.match(missing.body.error, /steps\.0\.queueId names no queue/);
    const flow = await api('POST', '/call-flows', { name: 'Queue', steps: [{ type: 'queue', queueId }] });
    assert.equal(flow.status, 201, flow.text);
    const numberId = (await api('GET', '/numbers')).body.data[0].id;
    const routed = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'flow', target: flow.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
  });
  after(() => t.close());

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const advance = async (seconds: number) => {
    const moved = await t.admin('POST', '/test/clock', { advanceSeconds: seconds });
    assert.equal(moved.status, 200, moved.text);
  };
  /**
   * The test control's event, once the call waits on a step that takes it (the queue moves on between
   * controls: a caller is offered to a member a moment after a call ends).
   */
  const drive = async (callId: string, event: string) => {
    for (let i = 0; i < 200; i++) {
      const res = await t.admin('POST', `/test/pbx/calls/${callId}`, { event });
      if (res.status === 200) return res.body.data as Record<string, any>;
      assert.equal(res.status, 409, res.text);
      await sleep(20);
    }
    throw new Error(`call ${callId} never took ${event}`);
  };
  const arrive = async (from: string) => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from, to: who.number });
    assert.equal(arrived.status, 201, arrived.text);
    return arrived.body.data.id as string;
  };
  const call = async (id: string) => (await t.ctx.calls.get(who.id, id)) as unknown as Record<string, any>;
  const live = async (): Promise<Live> => {
    const res = await api('GET', `/queues/${queueId}/live`);
    assert.equal(res.status, 200, res.text);
    return res.body.data;
  };
  /** Waits until `ok` holds of what `read` answers (the runtime works between the test's requests). */
  async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
    let value = await read();
    for (let i = 0; i < 200 && !ok(value); i++) {
      await sleep(25);
      value = await read();
    }
    assert.ok(ok(value), `never got there: ${JSON.stringify(value)}`);
    return value;
  }
  const states = (now: Live) => now.members.map((member) => member.state).join(',');
  const waitingIds = (now: Live) => now.waiting.map((entry) => [entry.callId, entry.position]);
  const said = (callId: string) => t.ctx.simulatedPbx.said(callId);
  const events = async (type: string) =>
    (
      await t.ctx.db.query<{ data: Record<string, any> }>(
        `SELECT data FROM events WHERE organization_id = $1 AND type = $2 ORDER BY created_at, id`,
        [who.id, type],
      )
    ).map((row) => row.data);
  const entryState = async (callId: string) =>
    (
      await t.ctx.db.query<{ state: string }>(
        'SELECT state FROM queue_entries WHERE call_id = $1 ORDER BY joined_at DESC LIMIT 1',
        [callId],
      )
    )[0]?.state;
  /** Both members talk with each other: an internal call from 101 to 102, answered on both sides. */
  const bothBusy = async () => {
    const placed = await api('POST', '/calls', { from: '101', to: '102' });
    assert.equal(placed.status, 202, placed.text);
    const id = placed.body.data.id as string;
    // The caller's phone answers, then the callee's.
    await drive(id, 'answered');
    await drive(id, 'answered');
    await until(live, (now) => states(now) === 'on_call,on_call');
    return id;
  };

  test('three callers wait in order, hear their place, and are answered in order as members come free', async () => {
    const busy = await bothBusy();
    assert.deepEqual((await live()).waiting, []);

    const a = await arrive('+14155550101');
    await advance(1);
    const b = await arrive('+14155550102');
    await advance(1);
    const c = await arrive('+14155550103');
    // The flow answered each caller to hold them; each heard their place as they joined.
    assert.equal((await call(a)).status, 'in_progress');
    assert.deepEqual(said(a), ['Please hold.', 'You are number 1 in line.']);
    assert.deepEqual(said(b), ['Please hold.', 'You are number 2 in line.']);
    assert.deepEqual(said(c), ['Please hold.', 'You are number 3 in line.']);
    const waiting = await live();
    assert.deepEqual(waitingIds(waiting), [
      [a, 1],
      [b, 2],
      [c, 3],
    ]);
    assert.deepEqual(
      waiting.waiting.map((entry) => entry.from),
      ['+14155550101', '+14155550102', '+14155550103'],
    );
    assert.ok(waiting.waiting[0]!.since < waiting.waiting[1]!.since);
    assert.deepEqual(waiting.members, [
      { extensionId: m1, state: 'on_call' },
      { extensionId: m2, state: 'on_call' },
    ]);

    // The members' call ends: the first caller rings the first member, the second the second (sequential).
    await drive(busy, 'completed');
    await until(live, (now) => states(now) === 'ringing,ringing');
    assert.deepEqual(waitingIds(await live()), [
      [a, 1],
      [b, 2],
      [c, 3],
    ]);
    await drive(a, 'answered');
    assert.equal(
      (
        await until(
          () => call(a),
          (now) => now.extensionId === m1,
        )
      ).status,
      'in_progress',
    );
    // Bob lets the second caller ring out: they wait again, still before the third; Bob rests a moment.
    await drive(b, 'no_answer');
    await until(live, (now) => now.waiting.length === 2 && states(now) === 'on_call,available');
    assert.deepEqual(waitingIds(await live()), [
      [b, 1],
      [c, 2],
    ]);
    assert.equal(await entryState(c), 'waiting');
    // Ten seconds on, Bob is offered the second caller again, and answers.
    await advance(11);
    await until(live, (now) => states(now) === 'on_call,ringing');
    await drive(b, 'answered');
    await until(
      () => call(b),
      (now) => now.extensionId === m2,
    );

    // Ann's call ends: she wraps up for 30 seconds, and the third caller waits through it.
    await drive(a, 'completed');
    assert.equal(
      (
        await until(
          () => call(a),
          (now) => now.endedAt !== null,
        )
      ).status,
      'completed',
    );
    await until(live, (now) => states(now) === 'wrap_up,on_call');
    assert.deepEqual(waitingIds(await live()), [[c, 1]]);
    // Thirty seconds after the third caller's last announcement they hear their new place and the expected wait.
    await advance(20);
    const heard = await until(
      async () => said(c),
      (texts) => texts.length === 3,
    );
    assert.match(heard[2]!, /^You are number 1 in line\. The expected wait is about 1 minute\.$/);
    await sleep(300);
    assert.equal(await entryState(c), 'waiting', 'not offered during the wrap-up');
    assert.equal(states(await live()), 'wrap_up,on_call');
    // The wrap-up over, Ann takes the third caller.
    await advance(11);
    await until(live, (now) => states(now) === 'ringing,on_call');
    await drive(c, 'answered');
    await until(
      () => call(c),
      (now) => now.extensionId === m1,
    );
    assert.deepEqual((await live()).waiting, []);
    assert.equal(states(await live()), 'on_call,on_call');
    await drive(b, 'completed');
    await drive(c, 'completed');
    await until(live, (now) => states(now) === 'wrap_up,wrap_up');

    const answered = await events('call.queue.answered');
    assert.deepEqual(
      answered.map((event) => [event.callId, event.extensionId, event.queueId]),
      [
        [a, m1, queueId],
        [b, m2, queueId],
        [c, m1, queueId],
      ],
    );
    assert.ok(answered[1]!.waitSeconds >= 11, JSON.stringify(answered[1]));
    const joined = await events('call.queue.joined');
    assert.deepEqual(
      joined.map((event) => [event.callId, event.position, event.from]),
      [
        [a, 1, '+14155550101'],
        [b, 2, '+14155550102'],
        [c, 3, '+14155550103'],
      ],
    );
    assert.deepEqual(await events('call.queue.abandoned'), []);
  });

  test('a caller who waits past maxWaitSeconds leaves the queue and reaches voicemail through onTimeout', async () => {
    await advance(60);
    const busy = await bothBusy();
    const d = await arrive('+14155550104');
    assert.deepEqual(waitingIds(await live()), [[d, 1]]);
    await advance(119);
    await sleep(100);
    assert.equal(await entryState(d), 'waiting', 'not before the maximum');
    await advance(2);
    await until(
      () => entryState(d),
      (state) => state === 'timed_out',
    );
    assert.deepEqual((await live()).waiting, []);
    const boxed = await until(
      () => call(d),
      (now) => now.extensionId === box,
    );
    assert.equal(boxed.status, 'in_progress');
    // The caller talks to the box, then hangs up: the message is the box's.
    await drive(d, 'completed');
    const ended = await until(
      () => call(d),
      (now) => now.endedAt !== null,
    );
    assert.equal(ended.status, 'completed');
    assert.ok(ended.voicemailId, 'a voicemail was left');
    const [message] = await t.ctx.db.query<{ extension_id: string }>(
      'SELECT extension_id FROM voicemails WHERE id = $1',
      [ended.voicemailId],
    );
    assert.equal(message!.extension_id, box);
    const [left] = await events('call.queue.abandoned');
    assert.equal(left!.callId, d);
    assert.equal(left!.reason, 'timeout');
    assert.ok(left!.waitSeconds >= 120, JSON.stringify(left));
    await drive(busy, 'completed');
  });

  test('a caller who hangs up while waiting is abandoned; the others keep their order', async () => {
    await advance(60);
    const busy = await bothBusy();
    const e = await arrive('+14155550105');
    await advance(1);
    const f = await arrive('+14155550106');
    assert.deepEqual(waitingIds(await live()), [
      [e, 1],
      [f, 2],
    ]);
    await drive(e, 'completed');
    const ended = await until(
      () => call(e),
      (now) => now.endedAt !== null,
    );
    assert.equal(ended.status, 'completed', 'the flow had answered');
    assert.equal(await entryState(e), 'abandoned');
    assert.deepEqual(waitingIds(await live()), [[f, 1]]);
    const abandoned = (await events('call.queue.abandoned')).filter((event) => event.callId === e);
    assert.deepEqual(
      abandoned.map((event) => event.reason),
      ['hangup'],
    );
    // The API's hang-up of a waiting caller is an abandon too.
    const hungUp = await api('POST', `/calls/${f}/hangup`);
    assert.equal(hungUp.status, 200, hungUp.text);
    assert.equal(await entryState(f), 'abandoned');
    assert.deepEqual((await live()).waiting, []);
    await drive(busy, 'completed');
    await until(live, (now) => states(now) === 'available,available');

    // A caller who hangs up while a member rings for them is abandoned too; the member is free again.
    const g = await arrive('+14155550107');
    await until(live, (now) => states(now) === 'ringing,available');
    await drive(g, 'completed');
    assert.equal(
      (
        await until(
          () => call(g),
          (now) => now.endedAt !== null,
        )
      ).status,
      'completed',
    );
    assert.equal(await entryState(g), 'abandoned');
    await until(live, (now) => now.waiting.length === 0 && states(now) === 'available,available');
    assert.deepEqual(
      (await events('call.queue.abandoned'))
        .filter((event) => event.callId === g)
        .map((event) => event.reason),
      ['hangup'],
    );
  });

  test("GET /queues/{id}/live: another organization's queue is 404; flows:read; the portal twin", async () => {
    const globex = await sender(t, {}, { number: null });
    const foreign = await t.request('GET', `/api/v2/queues/${queueId}/live`, { apiKey: globex.key });
    assert.equal(foreign.status, 404, foreign.text);
    const unknown = await api('GET', '/queues/q_0000000001abcdefabcdefabcd/live');
    assert.equal(unknown.status, 404);
    const callsOnly = await sender(t, {}, { scopes: ['calls:read'], number: null });
    const refused = await t.request('GET', `/api/v2/queues/${queueId}/live`, { apiKey: callsOnly.key });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'insufficient_scope');
    const member = await signIn(t, await createUser(t, { role: 'member', organizationIds: [who.id] }));
    const portal = await t.request('GET', `/v2/portal/queues/${queueId}/live`, { token: member });
    assert.equal(portal.status, 200, portal.text);
    assert.deepEqual(
      portal.body.data.members.map((member: { extensionId: string }) => member.extensionId),
      [m1, m2],
    );
  });

  test("GET /queues/{id}/live counts how the day's waits ended, for a wallboard", async () => {
    // The tests above end their callers' waits without waiting for the last to be written: the counts are
    // read once every wait of the queue has ended (a loaded machine wrote an abandonment within the second).
    for (let waited = 0; ; waited += 50) {
      const [open] = await t.ctx.db.query<{ count: number }>(
        `SELECT count(*)::int AS count FROM queue_entries WHERE queue_id = $1 AND left_at IS NULL`,
        [queueId],
      );
      if (open!.count === 0) break;
      assert.ok(waited < 15_000, 'every wait of the queue ends');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const [counted] = await t.ctx.db.query<{ answered: number; abandoned: number; timed_out: number }>(
      `SELECT count(*) FILTER (WHERE state = 'answered')::int AS answered,
              count(*) FILTER (WHERE state = 'abandoned')::int AS abandoned,
              count(*) FILTER (WHERE state = 'timed_out')::int AS timed_out
         FROM queue_entries WHERE queue_id = $1`,
      [queueId],
    );
    assert.ok(
      counted!.answered >= 3 && counted!.abandoned >= 3 && counted!.timed_out >= 1,
      'the tests above ran',
    );
    const live = (await api('GET', `/queues/${queueId}/live`)).body.data;
    assert.deepEqual(
      {
        answered: live.outcomes.answered,
        abandoned: live.outcomes.abandoned,
        timedOut: live.outcomes.timedOut,
      },
      { answered: counted!.answered, abandoned: counted!.abandoned, timedOut: counted!.timed_out },
    );
    const [last] = await t.ctx.db.query<{ left_at: Date }>(
      'SELECT max(left_at) AS left_at FROM queue_entries WHERE queue_id = $1',
      [queueId],
    );
    // Just after the last wait ended (and not in the future, which is refused).
    const now = new Date(Math.min(last!.left_at.getTime() + 1, t.ctx.clock.nowMs())).toISOString();
    const fromNow = (await api('GET', `/queues/${queueId}/live?since=${now}`)).body.data.outcomes;
    assert.deepEqual(fromNow, { since: now, answered: 0, abandoned: 0, timedOut: 0 });
    for (const since of ['soon', new Date(t.ctx.clock.nowMs() + 60_000).toISOString()]) {
      const refused = await api('GET', `/queues/${queueId}/live?since=${since}`);
      assert.equal(refused.status, 400, refused.text);
    }
  });
});
