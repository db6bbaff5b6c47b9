// What the console's live pages read (issue 37, docs/dashboard.md): messages and calls by hour for the
// dashboard's charts (GET /messages/stats/hourly, GET /calls/stats/hourly, developer API and portal twin), the
// calls that are live now (GET /calls?live=true), and an agent call's turns as events (agent_call.turn) on the
// live stream, each the same turn the agent call's record holds.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { type LiveStream, openStream } from './helpers/live-stream.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

const HOUR = 3600_000;

describe('the live pages’ reads', () => {
  let t: TestApp;
  let office: Sender;
  let other: Sender;
  let token: string;
  let agentId: string;
  const streams: LiveStream[] = [];
  before(async () => {
    t = await startTestApp();
    office = await sender(t);
    other = await sender(t);
    token = await signIn(t, await createUser(t, { role: 'member', organizationIds: [office.id] }));
    // The office's number goes to an AI agent: its calls stay live until the test ends them.
    const agent = await t.request('POST', '/api/v2/agents', {
      apiKey: office.key,
      body: { name: 'Receptionist', firstMessage: 'Hello, front desk.', maxDurationSeconds: 60 },
    });
    assert.equal(agent.status, 201, agent.text);
    agentId = agent.body.data.id;
    const numberId = (await api(office, '/numbers')).body.data[0].id;
    const routed = await t.request('PATCH', `/api/v2/numbers/${numberId}`, {
      apiKey: office.key,
      body: { voiceRoute: { type: 'agent', target: agentId } },
    });
    assert.equal(routed.status, 200, routed.text);
  });
  after(async () => {
    for (const stream of streams) stream.close();
    await t.close();
  });
  const api = (who: Sender, path: string) => t.request('GET', `/api/v2${path}`, { apiKey: who.key });

  test('messages by hour: outbound with their fate, inbound, one bucket per hour from since', async () => {
    const since = new Date(Math.floor(t.ctx.clock.nowMs() / HOUR) * HOUR - 3 * HOUR);
    const insert = (who: Sender, direction: string, status: string, count: number, createdAt: Date) =>
      t.ctx.db.query(
        `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                               encoding, status, status_updated_at, created_at)
         SELECT 'msg_hourly' || substr(md5(random()::text), 1, 16), $1, $2, 'api', '+12025550100', $3, 'x', 1,
                'GSM-7', $4, $5, $5
           FROM generate_series(1, $6::int)`,
        [who.id, direction, who.number, status, createdAt, count],
      );
    await insert(office, 'outbound', 'delivered', 3, new Date(since.getTime() + 10 * 60_000));
    await insert(office, 'outbound', 'undelivered', 1, new Date(since.getTime() + 59 * 60_000));
    await insert(office, 'outbound', 'scheduled', 2, new Date(since.getTime() + 60 * 60_000));
    await insert(office, 'inbound', 'received', 2, new Date(since.getTime() + 2 * HOUR));
    await insert(office, 'outbound', 'delivered', 5, new Date(since.getTime() - 1)); // before the window
    await insert(other, 'outbound', 'delivered', 7, new Date(since.getTime() + 60_000)); // not ours

    const until = new Date(since.getTime() + 3 * HOUR + 30 * 60_000);
    const query = `?since=${since.toISOString()}&until=${until.toISOString()}`;
    const res = await api(office, `/messages/stats/hourly${query}`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.since, since.toISOString());
    assert.deepEqual(
      res.body.data.buckets.map((bucket: Record<string, unknown>) => ({ ...bucket, start: undefined })),
      [
        { start: undefined, outbound: 4, inbound: 0, delivered: 3, failed: 1 },
        { start: undefined, outbound: 0, inbound: 0, delivered: 0, failed: 0 },
        { start: undefined, outbound: 0, inbound: 2, delivered: 0, failed: 0 },
        { start: undefined, outbound: 0, inbound: 0, delivered: 0, failed: 0 },
      ],
      'four buckets, the last cut short at until; the scheduled ones count nowhere',
    );
    assert.deepEqual(
      res.body.data.buckets.map(
        (bucket: { start: string }) => new Date(bucket.start).getTime() - since.getTime(),
      ),
      [0, HOUR, 2 * HOUR, 3 * HOUR],
    );
    // The portal twin answers the same to a member.
    const portal = await t.request('GET', `/v2/portal/messages/stats/hourly${query}`, { token });
    assert.equal(portal.status, 200, portal.text);
    assert.deepEqual(portal.body.data, res.body.data);
    // The default window: the last 24 hours, 24 buckets.
    assert.equal((await api(office, '/messages/stats/hourly')).body.data.buckets.length, 24);
    // A window too long, backwards or unreadable is a 400 that changes nothing.
    for (const bad of [
      `?since=${new Date(until.getTime() - 32 * 24 * HOUR).toISOString()}&until=${until.toISOString()}`,
      `?since=${until.toISOString()}&until=${since.toISOString()}`,
      '?since=yesterday',
    ]) {
      const refused = await api(office, `/messages/stats/hourly${bad}`);
      assert.equal(refused.status, 400, `${bad}: ${refused.text}`);
      assert.ok(isShapeB(refused.body), refused.text);
    }
  });

  test('calls by hour and the calls live now, only the organization’s own', async () => {
    const until = new Date(t.ctx.clock.nowMs() + 60_000);
    const since = new Date(until.getTime() - HOUR);
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550199', to: office.number });
    assert.equal(arrived.status, 201, arrived.text);
    await t.admin('POST', '/test/pbx/inbound', { from: '+14155550198', to: other.number });
    const hourly = await api(
      office,
      `/calls/stats/hourly?since=${since.toISOString()}&until=${until.toISOString()}`,
    );
    assert.equal(hourly.status, 200, hourly.text);
    const [bucket] = hourly.body.data.buckets;
    assert.equal(hourly.body.data.buckets.length, 1);
    assert.equal(bucket.total, 1);
    assert.equal(bucket.inbound, 1);

    const live = await api(office, '/calls?live=true');
    assert.equal(live.status, 200, live.text);
    assert.deepEqual(
      live.body.data.map((call: { id: string }) => call.id),
      [arrived.body.data.id],
    );
    await t.admin('POST', `/test/pbx/calls/${arrived.body.data.id}`, { event: 'completed' });
    assert.deepEqual((await api(office, '/calls?live=true')).body.data, []);
    assert.equal((await api(office, '/calls')).body.data.length, 1, 'the call is still listed without live');
  });

  test('each finished turn of an agent call is an agent_call.turn event on the live stream', async () => {
    const stream = await openStream(t.url, token);
    streams.push(stream);
    const arrived = await t.admin('POST', '/test/pbx/inbound', {
      from: '+14155550123',
      to: office.number,
      utterances: ['Are you open on Saturdays?'],
    });
    assert.equal(arrived.status, 201, arrived.text);
    const turns = [];
    for (let index = 0; index < 3; index++) {
      const event = await stream.next((e) => e.event === 'agent_call.turn');
      turns.push(JSON.parse(event.data).data);
    }
    assert.deepEqual(
      turns.map((turn) => [turn.index, turn.turn.role]),
      [
        [0, 'agent'],
        [1, 'caller'],
        [2, 'agent'],
      ],
    );
    assert.equal(turns[0].turn.text, 'Hello, front desk.');
    assert.equal(turns[1].turn.text, 'Are you open on Saturdays?');
    assert.equal(turns[0].callId, arrived.body.data.id);
    assert.equal(turns[0].agentId, agentId);
    const record = (await api(office, `/agent-calls/${turns[0].agentCallId}`)).body.data;
    for (const turn of turns) assert.deepEqual(record.transcript[turn.index], turn.turn);
    // The live calls page finds a call's agent call by the call.
    const byCall = await api(office, `/agent-calls?callId=${arrived.body.data.id}`);
    assert.deepEqual(
      byCall.body.data.map((row: { id: string }) => row.id),
      [record.id],
    );
    assert.deepEqual((await api(other, `/agent-calls?callId=${arrived.body.data.id}`)).body.data, []);
    await t.admin('POST', `/test/pbx/calls/${arrived.body.data.id}`, { event: 'completed' });
  });
});
