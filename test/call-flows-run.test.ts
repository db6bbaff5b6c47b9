// Call flows running on calls (issue 33), on the simulated PBX through the HTTP API and the operator's test
// controls: a menu routes key 1 and key 2 to different extensions and repeats itself on a wrong key; the same
// flow answers differently as the test clock crosses closing time and a holiday; a flow that loops forever is
// stopped by the step limit; a caller who hangs up during the menu ends the call.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';

describe('call flows on calls (simulated PBX)', () => {
  let t: TestApp;
  let who: Sender;
  let numberId: string;
  let sales: { id: string };
  let support: { id: string };
  before(async () => {
    t = await startTestApp();
    who = await sender(t);
    sales = (await api('POST', '/extensions', { extension: '101', name: 'Sales' })).body.data;
    support = (
      await api('POST', '/extensions', {
        extension: '102',
        name: 'Support',
        voicemail: { enabled: true, greeting: 'Support is closed.' },
      })
    ).body.data;
    numberId = (await api('GET', '/numbers')).body.data[0].id;
  });
  after(() => t.close());

  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const drive = (callId: string, body: Record<string, unknown>) =>
    t.admin('POST', `/test/pbx/calls/${callId}`, body);
  const arrive = async () => {
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550198', to: who.number });
    assert.equal(arrived.status, 201, arrived.text);
    return arrived.body.data as Record<string, any>;
  };
  /** The call as the API shows it, read through the service (polling the API would spend the key's limit). */
  const call = async (id: string) => (await t.ctx.calls.get(who.id, id)) as unknown as Record<string, any>;
  /** Waits until the call's record satisfies `ok` (the flow runs on between test controls). */
  const until = async (id: string, ok: (call: Record<string, any>) => boolean) => {
    for (let i = 0; i < 200; i++) {
      const now = await call(id);
      if (ok(now)) return now;
      await sleep(25);
    }
    throw new Error(`call ${id} never got there: ${JSON.stringify(await call(id))}`);
  };
  const gathered = async (callId: string) =>
    (
      await t.ctx.db.query<{ data: { digits: string } }>(
        `SELECT data FROM events WHERE type = 'call.gather.completed' AND data->>'callId' = $1 ORDER BY created_at, id`,
        [callId],
      )
    ).map((row) => row.data.digits);
  async function routeTo(steps: unknown[], name = 'Flow') {
    const flow = await api('POST', '/call-flows', { name, steps });
    assert.equal(flow.status, 201, flow.text);
    const routed = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'flow', target: flow.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
    return flow.body.data as { id: string };
  }

  test('a menu: key 3 is refused and the menu repeats; key 1 reaches sales, key 2 support', async () => {
    const menu = await routeTo([{ type: 'hangup' }], 'Menu');
    const steps = [
      {
        type: 'gather',
        input: ['dtmf'],
        numDigits: 1,
        timeoutSeconds: 30,
        prompt: { type: 'say', text: 'Press 1 for sales, 2 for support.' },
        branches: {
          '1': [{ type: 'dial', targets: [{ type: 'extension', target: sales.id }] }],
          '2': [{ type: 'dial', targets: [{ type: 'extension', target: support.id }] }],
        },
        otherwise: [
          { type: 'say', text: 'Sorry.' },
          { type: 'redirect', flowId: menu.id },
        ],
      },
    ];
    assert.equal((await api('PATCH', `/call-flows/${menu.id}`, { steps })).status, 200);

    for (const [key, extension] of [
      ['1', sales.id],
      ['2', support.id],
    ] as const) {
      const arrived = await arrive();
      // The flow answered to speak its menu.
      assert.equal(arrived.status, 'in_progress');
      await drive(arrived.id, { event: 'digits', digits: '3' });
      await drive(arrived.id, { event: 'digits', digits: key });
      await until(arrived.id, (now) => now.extensionId === extension);
      await drive(arrived.id, { event: 'answered' });
      await drive(arrived.id, { event: 'completed' });
      const ended = await until(arrived.id, (now) => now.endedAt !== null);
      assert.equal(ended.status, 'completed');
      assert.equal(ended.extensionId, extension);
      assert.deepEqual(await gathered(arrived.id), ['3', key]);
    }
  });

  test('business hours: open until 17:00 in New York, closed after and on a holiday', async () => {
    await routeTo(
      [
        {
          type: 'hours',
          timezone: 'America/New_York',
          open: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '17:00' }],
          holidays: ['2026-12-24'],
          whenOpen: [{ type: 'dial', targets: [{ type: 'extension', target: sales.id }] }],
          whenClosed: [{ type: 'voicemail', extensionId: support.id }],
        },
      ],
      'Hours',
    );
    const at = async (now: string) => {
      const set = await t.admin('POST', '/test/clock', { now });
      assert.equal(set.status, 200, set.text);
      return arrive();
    };
    // Wednesday 2 December 2026, 16:59 in New York (21:59 UTC): open, sales rings.
    const open = await at('2026-12-02T21:59:00Z');
    await until(open.id, (now) => now.extensionId === sales.id);
    assert.equal((await drive(open.id, { event: 'ringing' })).body.data.status, 'ringing');
    await drive(open.id, { event: 'completed' });
    // 17:01: closed, support's voicemail answers.
    const closed = await at('2026-12-02T22:01:00Z');
    const box = await until(closed.id, (now) => now.status === 'in_progress');
    assert.equal(box.extensionId, support.id);
    await drive(closed.id, { event: 'completed' });
    assert.ok((await until(closed.id, (now) => now.endedAt !== null)).voicemailId);
    // Thursday 24 December 2026, 10:00 in New York: a holiday, closed.
    const holiday = await at('2026-12-24T15:00:00Z');
    assert.equal((await until(holiday.id, (now) => now.status === 'in_progress')).extensionId, support.id);
    await drive(holiday.id, { event: 'completed' });
  });

  test('a ring group: in order, the next member after no answer; round robin starts after the last who answered', async () => {
    const third = (await api('POST', '/extensions', { extension: '103', name: 'Billing' })).body.data;
    const group = await api('POST', '/ring-groups', {
      name: 'Front desk',
      extensionIds: [sales.id, support.id, third.id],
      strategy: 'sequential',
      ringSeconds: 10,
    });
    assert.equal(group.status, 201, group.text);
    // A ring group the organization does not have is refused when the flow is saved.
    const missing = await api('POST', '/call-flows', {
      name: 'Nowhere',
      steps: [{ type: 'dial', targets: [{ type: 'ring_group', target: 'rg_0000000001abcdefabcdefabcd' }] }],
    });
    assert.equal(missing.status, 400, missing.text);
    assert.equal(missing.body.code, 'INVALID_FLOW_STEP');
    assert.match(missing.body.error, /steps\.0\.targets\.0\.target names no ring group/);
    await routeTo([{ type: 'dial', targets: [{ type: 'ring_group', target: group.body.data.id }] }], 'Group');
    const answeredBy = async (events: string[]) => {
      const arrived = await arrive();
      for (const event of events) {
        await sleep(50);
        await drive(arrived.id, { event });
      }
      const talking = await until(arrived.id, (now) => now.status === 'in_progress');
      await drive(arrived.id, { event: 'completed' });
      await until(arrived.id, (now) => now.endedAt !== null);
      return talking.extensionId as string;
    };
    // Sequential: sales rings out, support answers.
    assert.equal(await answeredBy(['no_answer', 'answered']), support.id);
    // Round robin: the turn after support, whoever answered last, is billing.
    const patched = await api('PATCH', `/ring-groups/${group.body.data.id}`, { strategy: 'round_robin' });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(await answeredBy(['answered']), third.id);
    // All at once: one ring of every member; the simulator's first member answers.
    await api('PATCH', `/ring-groups/${group.body.data.id}`, { strategy: 'simultaneous' });
    assert.equal(await answeredBy(['answered']), sales.id);
  });

  test('a flow that loops forever is ended by the step limit; the call is failed, flow_step_limit', async () => {
    const loop = await routeTo([{ type: 'hangup' }], 'Loop');
    const steps = [
      { type: 'pause', seconds: 1 },
      { type: 'redirect', flowId: loop.id },
    ];
    assert.equal((await api('PATCH', `/call-flows/${loop.id}`, { steps })).status, 200);
    const arrived = await arrive();
    const ended = await until(arrived.id, (now) => now.endedAt !== null);
    assert.deepEqual([ended.status, ended.hangupCause], ['failed', 'flow_step_limit']);
  });

  test('POST /calls/{id}/hangup between two steps, while nothing waits on the PBX, still ends the call', async () => {
    const next = await routeTo(
      [{ type: 'dial', targets: [{ type: 'extension', target: sales.id }] }],
      'Next',
    );
    await routeTo([{ type: 'redirect', flowId: next.id }], 'First');
    // The redirect's flow is slow to read (a database under load): the hang-up lands while the runner waits
    // for it, before the dial has anything ringing.
    const flows = t.ctx.flows;
    let entered!: () => void;
    const reading = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    t.ctx.calls.useFlows(
      {
        resolve: async (organizationId, flowId, version) => {
          if (flowId === next.id) {
            entered();
            await held;
          }
          return flows.resolve(organizationId, flowId, version);
        },
      },
      t.ctx.ringGroups,
    );
    try {
      const arriving = t.admin('POST', '/test/pbx/inbound', { from: '+14155550198', to: who.number });
      await reading;
      const [row] = await t.ctx.db.query<{ id: string }>(
        'SELECT id FROM calls WHERE organization_id = $1 ORDER BY created_at DESC LIMIT 1',
        [who.id],
      );
      const hangingUp = api('POST', `/calls/${row!.id}/hangup`);
      await sleep(150);
      release();
      const hungUp = await hangingUp;
      assert.equal(hungUp.status, 200, hungUp.text);
      assert.deepEqual(
        [hungUp.body.data.status, hungUp.body.data.hangupCause],
        ['canceled', 'hangup_requested'],
      );
      await arriving;
    } finally {
      t.ctx.calls.useFlows(flows, t.ctx.ringGroups);
    }
  });

  test('the caller hangs up during the menu: the call ends completed, the gather heard nothing', async () => {
    await routeTo(
      [
        {
          type: 'gather',
          input: ['dtmf'],
          numDigits: 1,
          timeoutSeconds: 30,
          otherwise: [{ type: 'hangup' }],
        },
      ],
      'Hang-up',
    );
    const arrived = await arrive();
    await drive(arrived.id, { event: 'completed' });
    const ended = await until(arrived.id, (now) => now.endedAt !== null);
    assert.equal(ended.status, 'completed');
    assert.deepEqual(await gathered(arrived.id), []);
  });
});
