// The call-level machine (src/modules/voice/call-states.ts): its table, every transition it allows and the
// ones it refuses; a live call that writes only what the table allows, its writes landing in the order the
// call took its steps even when the first is slow; and, through the HTTP API on the simulated PBX, a phone's
// ringing delivered after its answer that leaves the call in progress.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CallEnding } from '../src/modules/voice/call-end.ts';
import {
  CALL_TRANSITIONS,
  type CallEvent,
  CallMachine,
  nextCallState,
} from '../src/modules/voice/call-states.ts';
import { CALL_STATUSES, type CallStatus } from '../src/modules/voice/call-store.ts';
import { LiveCall } from '../src/modules/voice/live-call.ts';
import type { Party, Pbx, PbxCall, RingResult } from '../src/modules/voice/pbx.ts';
import type { Database } from '../src/platform/db/index.ts';
import { createLogger } from '../src/platform/log.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';

const EVENTS: CallEvent[] = ['ringing', 'answered', 'completed', 'busy', 'no_answer', 'failed', 'canceled'];

/** Every move the call's life allows, written out here so a change of the table is a change of this test. */
const ALLOWED: [CallStatus, CallEvent, CallStatus][] = [
  ['queued', 'ringing', 'ringing'],
  ['queued', 'answered', 'in_progress'],
  ['queued', 'busy', 'busy'],
  ['queued', 'no_answer', 'no_answer'],
  ['queued', 'failed', 'failed'],
  ['queued', 'canceled', 'canceled'],
  ['ringing', 'answered', 'in_progress'],
  ['ringing', 'busy', 'busy'],
  ['ringing', 'no_answer', 'no_answer'],
  ['ringing', 'failed', 'failed'],
  ['ringing', 'canceled', 'canceled'],
  ['in_progress', 'completed', 'completed'],
  ['in_progress', 'failed', 'failed'],
];

function silentLog(lines: string[] = []) {
  return createLogger('debug', { write: (line: string) => void lines.push(line) });
}

describe('the call table', () => {
  test('allows exactly the listed moves, each to its state', () => {
    for (const [from, event, to] of ALLOWED) assert.equal(nextCallState(from, event), to, `${from} ${event}`);
    const allowed = new Set(ALLOWED.map(([from, event]) => `${from} ${event}`));
    for (const from of CALL_STATUSES) {
      for (const event of EVENTS) {
        if (allowed.has(`${from} ${event}`)) continue;
        assert.equal(nextCallState(from, event), undefined, `${from} ${event} is refused`);
      }
    }
    assert.deepEqual(Object.keys(CALL_TRANSITIONS).sort(), [...CALL_STATUSES].sort());
  });

  test('refuses a ringing after the answer or the end, an answer after the end, a second end; and logs it', () => {
    const refusals: [CallStatus, CallEvent][] = [
      ['completed', 'ringing'],
      ['in_progress', 'ringing'],
      ['ringing', 'ringing'],
      ['busy', 'answered'],
      ['in_progress', 'answered'],
      ['completed', 'completed'],
      ['canceled', 'failed'],
      ['in_progress', 'canceled'],
      ['queued', 'completed'],
    ];
    for (const [from, event] of refusals) {
      const lines: string[] = [];
      const machine = new CallMachine(from, 'call_test', silentLog(lines));
      assert.equal(machine.move(event), false, `${from} ${event}`);
      assert.equal(machine.state, from);
      assert.equal(lines.length, 1);
      assert.match(lines[0]!, /call event refused/);
    }
    const machine = new CallMachine('queued', 'call_test', silentLog());
    assert.equal(machine.move('ringing'), true);
    assert.equal(machine.move('answered'), true);
    assert.equal(machine.ended, false);
    assert.equal(machine.move('completed'), true);
    assert.equal(machine.ended, true);
    assert.equal(machine.move('failed'), false);
    assert.equal(machine.state, 'completed');
  });
});

describe('a live call writes through the table', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const eventsOf = async (callId: string) =>
    (
      await t.ctx.db.query<{ type: string; data: { status: string } }>(
        `SELECT type, data FROM events WHERE data->>'id' = $1 ORDER BY created_at, id`,
        [callId],
      )
    ).map((row) => `${row.type}:${row.data.status}`);

  test('a slow ringing write lands before the answer; a late ringing, a late answer and a second end are not written', async () => {
    const who = await sender(t);
    const now = t.ctx.clock.now();
    const row = await t.ctx.calls.store.insert(t.ctx.db, {
      id: `call_states${Date.now()}`,
      organizationId: who.id,
      region: 'us',
      direction: 'outbound',
      from: who.number,
      to: '+14155550100',
      extensionId: null,
      record: false,
      leaseExpiresAt: new Date(now.getTime() + 60_000),
      now,
    });
    // The ringing write takes a connection that is slow to answer (a PostgreSQL pool under load): it is held
    // until the answer's write has been asked for. Taking its steps in order, the call waits for it.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let first = true;
    const slowFirst = new Proxy(t.ctx.db, {
      get(target, property) {
        if (property === 'transaction') {
          return async <T>(work: Parameters<Database['transaction']>[0]) => {
            if (first) {
              first = false;
              await held;
            }
            return target.transaction(work) as Promise<T>;
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as Database;
    // A PBX whose phone answers right after its 180, before the platform has written the ringing.
    let ringingWrite: Promise<void> | undefined;
    const answersAtOnce: Pbx = {
      name: 'double',
      takesVoicemail: false,
      ring: (_call: PbxCall, _party: Party, _seconds: number, onRinging: (at: Date) => Promise<void>) => {
        ringingWrite = onRinging(new Date(now.getTime() + 1000));
        return Promise.resolve<RingResult>({
          outcome: 'answered',
          at: new Date(now.getTime() + 2000),
          cause: '',
        });
      },
      converse: () => Promise.reject(new Error('not used')),
      takeVoicemail: () => Promise.reject(new Error('not used')),
      hangup: () => false,
      release: () => undefined,
    };
    const lines: string[] = [];
    const { store } = t.ctx.calls;
    const live = new LiveCall(row, answersAtOnce, {
      db: slowFirst,
      clock: t.ctx.clock,
      events: t.ctx.events,
      store,
      ending: new CallEnding({ store, media: t.ctx.media, events: t.ctx.events }),
      log: silentLog(lines),
    });
    const rang = await live.ring({ kind: 'phone', number: row.to_number }, 30);
    assert.equal(rang.outcome, 'answered');
    const answering = live.answered(rang.at);
    release();
    await Promise.all([ringingWrite, answering]);
    assert.equal(live.state, 'in_progress');
    assert.equal(live.row.status, 'in_progress');
    assert.equal((await store.findAny(t.ctx.db, row.id))!.status, 'in_progress');
    assert.deepEqual(await eventsOf(row.id), ['call.ringing:ringing', 'call.answered:in_progress']);
    assert.deepEqual(
      live.legs.map((leg) => leg.outcome),
      ['answered'],
    );

    // The phone's 180 again, after the answer: refused, nothing written, no event.
    assert.equal(await live.ringing(new Date(now.getTime() + 3000)), false);
    await live.finish({ status: 'completed', at: new Date(now.getTime() + 9000), cause: 'normal_clearing' });
    await live.finish({ status: 'failed', at: new Date(now.getTime() + 9500), cause: 'platform_error' });
    assert.equal(await live.answered(new Date(now.getTime() + 9900)), false);
    assert.equal(await live.ringing(new Date(now.getTime() + 9950)), false);
    assert.equal(await live.note({ extension_id: 'ext_late' }), false);
    const ended = (await store.findAny(t.ctx.db, row.id))!;
    assert.equal(ended.status, 'completed');
    assert.equal(ended.hangup_cause, 'normal_clearing');
    assert.equal(ended.duration_seconds, 7);
    assert.equal(ended.extension_id, null);
    assert.deepEqual(await eventsOf(row.id), [
      'call.ringing:ringing',
      'call.answered:in_progress',
      'call.completed:completed',
    ]);
    assert.equal(lines.filter((line) => line.includes('call event refused')).length, 4);
  });
});

describe('a late ringing on the simulated PBX, through the API', () => {
  let t: TestApp;
  let who: Sender;
  before(async () => {
    t = await startTestApp();
    who = await sender(t);
  });
  after(() => t.close());

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const drive = (callId: string, event: string) => t.admin('POST', `/test/pbx/calls/${callId}`, { event });
  const eventTypes = async (callId: string) =>
    (
      await t.ctx.db.query<{ type: string }>(
        `SELECT type FROM events WHERE data->>'id' = $1 ORDER BY created_at, id`,
        [callId],
      )
    ).map((row) => row.type);

  test("a phone's ringing delivered after its answer leaves the call in progress, and no call.ringing is sent", async () => {
    const placed = await api('POST', '/calls', { from: who.number, to: '+14155550123' });
    assert.equal(placed.status, 202, placed.text);
    const id = placed.body.data.id as string;
    assert.equal((await drive(id, 'ringing')).body.data.status, 'ringing');
    const answered = (await drive(id, 'answered')).body.data;
    assert.equal(answered.status, 'in_progress');
    // The 180 the network delivered behind the 200: the PBX hands it on; the call's table refuses it.
    const late = await drive(id, 'ringing');
    assert.equal(late.status, 200, late.text);
    assert.equal(late.body.data.status, 'in_progress');
    assert.equal(late.body.data.answeredAt, answered.answeredAt);
    assert.equal((await api('GET', `/calls/${id}`)).body.data.status, 'in_progress');
    assert.deepEqual(await eventTypes(id), ['call.ringing', 'call.answered']);

    const ended = (await drive(id, 'completed')).body.data;
    assert.equal(ended.status, 'completed');
    // Ended, the call waits on nothing: a ringing now is the PBX's 409, and the record stays as it ended.
    assert.equal((await drive(id, 'ringing')).status, 409);
    assert.deepEqual(await eventTypes(id), ['call.ringing', 'call.answered', 'call.completed']);
  });

  test('a second ringing while it rings (the callee after the extension) writes nothing more', async () => {
    const ext = await api('POST', '/extensions', { extension: '201', name: 'Desk' });
    assert.equal(ext.status, 201, ext.text);
    const placed = await api('POST', '/calls', {
      from: who.number,
      to: '+14155550124',
      extensionId: ext.body.data.id,
    });
    const id = placed.body.data.id as string;
    await drive(id, 'ringing');
    // The extension answers; the call still rings while the callee is dialled, and rings again.
    assert.equal((await drive(id, 'answered')).body.data.status, 'ringing');
    assert.equal((await drive(id, 'ringing')).body.data.status, 'ringing');
    assert.equal((await drive(id, 'busy')).body.data.status, 'busy');
    assert.deepEqual(await eventTypes(id), ['call.ringing', 'call.completed']);
  });
});
