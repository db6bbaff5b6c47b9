// Call flows as a resource (CONTRACT section 13): create, read, list, change and delete on the developer API
// and the portal; every change of the steps a new version, the old ones kept for the calls that started on
// them (resolve); each kind of invalid step refused with the path of the bad field and nothing stored; the ids
// steps name looked up in the organization; a number routed to a flow, and the flow's delete refused while it
// is; scopes, the voice product, the portal roles, and another organization's flows out of reach everywhere.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertRefusedB, isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

/**
 * A flow with many kinds of steps, with nested lists, all valid.
 */
function everyStep(ids: { extensionId: string; agentId: string }) {
  return [
    {
      type: 'hours',
      timezone: 'Europe/Paris',
      open: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '17:30' }],
      holidays: ['2026-12-25'],
      whenOpen: [
        { type: 'say', text: 'Welcome to Acme', voice: 'alice', language: 'en-US' },
        {
          type: 'gather',
          input: ['dtmf'],
          numDigits: 1,
          finishOnKey: '#',
          timeoutSeconds: 5,
          prompt: { type: 'say', text: 'Press 1 for sales, 2 for our assistant.' },
          branches: {
            '1': [
              {
                type: 'dial',
                targets: [
                  { type: 'extension', target: ids.extensionId },
                  { type: 'number', target: '+14155550100' },
                ],
                strategy: 'sequential',
                timeoutSeconds: 20,
                record: true,
                onNoAnswer: [{ type: 'voicemail', extensionId: ids.extensionId }],
                onBusy: [{ type: 'say', text: 'Everyone is busy.' }, { type: 'hangup' }],
              },
            ],
            '2': [{ type: 'agent', agentId: ids.agentId }],
            '3': [{ type: 'hangup' }],
          },
          otherwise: [{ type: 'say', text: 'Sorry, I did not get that.' }],
        },
      ],
      whenClosed: [{ type: 'pause', seconds: 1 }, { type: 'hangup' }],
    },
  ];
}

describe('call flows', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const org = (fields: Record<string, unknown> = {}, scopes?: string[]) => sender(t, fields, { scopes });
  const flowRows = (organizationId: string) =>
    countRows(
      t,
      `SELECT 1 FROM call_flow_versions v JOIN call_flows f ON f.id = v.flow_id WHERE f.organization_id = $1`,
      [organizationId],
    );

  async function references(who: Sender) {
    const ext = await api(who, 'POST', '/extensions', { extension: '101', name: 'Desk' });
    assert.equal(ext.status, 201, ext.text);
    const agent = await api(who, 'POST', '/agents', { name: 'Bot' });
    assert.equal(agent.status, 201, agent.text);
    return { extensionId: ext.body.data.id as string, agentId: agent.body.data.id as string };
  }

  test('create, read, list, rename, new steps as version 2, delete; resolve keeps version 1', async () => {
    const acme = await org();
    const steps = everyStep(await references(acme));
    const created = await api(acme, 'POST', '/call-flows', { name: 'Main line', steps });
    assert.equal(created.status, 201, created.text);
    const flow = created.body.data;
    assert.match(flow.id, /^flow_[a-z0-9]+$/);
    assert.equal(flow.version, 1);
    assert.deepEqual(flow.steps, steps);
    assert.equal(flow.createdAt, flow.updatedAt);

    const read = await api(acme, 'GET', `/call-flows/${flow.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body.data, flow);
    const list = await api(acme, 'GET', '/call-flows?limit=10');
    assert.equal(list.status, 200);
    assert.equal(list.body.pagination.total, 1);
    assert.deepEqual(list.body.data, [flow]);

    // A new name alone makes no version.
    const renamed = await api(acme, 'PATCH', `/call-flows/${flow.id}`, { name: 'Front desk' });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.data.version, 1);
    assert.equal(renamed.body.data.name, 'Front desk');

    const simpler = [{ type: 'say', text: 'We moved' }, { type: 'hangup' }];
    const edited = await api(acme, 'PATCH', `/call-flows/${flow.id}`, { steps: simpler });
    assert.equal(edited.status, 200, edited.text);
    assert.equal(edited.body.data.version, 2);
    assert.deepEqual(edited.body.data.steps, simpler);
    assert.equal((await api(acme, 'GET', `/call-flows/${flow.id}`)).body.data.version, 2);
    assert.deepEqual(await t.ctx.flows.resolve(acme.id, flow.id, 1), { flowId: flow.id, version: 1, steps });
    assert.deepEqual(await t.ctx.flows.resolve(acme.id, flow.id), {
      flowId: flow.id,
      version: 2,
      steps: simpler,
    });
    assert.equal(await t.ctx.flows.resolve(acme.id, flow.id, 3), undefined);
    const third = await api(acme, 'PATCH', `/call-flows/${flow.id}`, { steps: [{ type: 'hangup' }] });
    assert.equal(third.body.data.version, 3);
    assert.equal(await flowRows(acme.id), 3);

    const deleted = await api(acme, 'DELETE', `/call-flows/${flow.id}`);
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body.data, { id: flow.id, deleted: true });
    assert.equal((await api(acme, 'GET', `/call-flows/${flow.id}`)).status, 404);
    assert.equal(await flowRows(acme.id), 0);
    assert.equal(await t.ctx.flows.resolve(acme.id, flow.id, 1), undefined);
  });

  test('invalid steps: 400 INVALID_FLOW_STEP naming the bad field; nothing stored, no version made', async () => {
    const acme = await org();
    const say = { type: 'say', text: 'Hello' };
    const hours = (fields: Record<string, unknown>) => ({
      type: 'hours',
      timezone: 'America/New_York',
      open: [{ days: ['mon'], from: '09:00', to: '17:00' }],
      whenOpen: [say],
      whenClosed: [],
      ...fields,
    });
    const nested = (levels: number): Record<string, unknown> =>
      levels === 0 ? say : hours({ whenOpen: [nested(levels - 1)] });
    const cases: [unknown[], string, RegExp][] = [
      [[say, { type: 'dance' }], 'steps.1.type', /must be one of say, play, gather/],
      [[hours({ open: [{ days: ['mon'], from: '9:00', to: '17:00' }] })], 'steps.0.open.0.from', /pattern/],
      [[hours({ open: [{ days: ['mon'], from: '09:00', to: '24:01' }] })], 'steps.0.open.0.to', /pattern/],
      [[hours({ open: [{ days: ['someday'], from: '09:00', to: '17:00' }] })], 'steps.0.open.0.days.0', /./],
      [[hours({ timezone: 'Mars/Olympus_Mons' })], 'steps.0.timezone', /IANA time zone/],
      [[hours({ holidays: ['2026-02-30'] })], 'steps.0.holidays.0', /calendar day/],
      [
        [say, say, { type: 'gather', input: ['dtmf'], branches: { '1': [{ type: 'say', text: '' }] } }],
        'steps.2.branches.1.0.text',
        /must not have fewer than 1 characters/,
      ],
      [
        [{ type: 'gather', input: ['dtmf'], branches: { 'yes please': [say] } }],
        'steps.0.branches["yes please"]',
        /not an answer of keys/,
      ],
      [[{ type: 'gather', input: ['dtmf'], numDigits: 33 }], 'steps.0.numDigits', /32/],
      [[{ type: 'gather', input: ['dtmf'], prompt: { type: 'hangup' } }], 'steps.0.prompt.type', /say, play/],
      [[{ type: 'say', txt: 'Hello' }], 'steps.0.txt', /is not a field of the say step/],
      [[{ type: 'say' }], 'steps.0.text', /is required/],
      [
        [{ type: 'play', audioUrl: 'https://a.example.com/x.wav', audioId: 'aud_1' }],
        'steps.0',
        /exactly one/,
      ],
      [[{ type: 'play', audioUrl: 'ftp://a.example.com/x.wav' }], 'steps.0.audioUrl', /https or http URL/],
      [[{ type: 'stream', url: 'https://a.example.com/ws' }], 'steps.0.url', /wss or ws URL/],
      [[{ type: 'say', text: 'Hi', voice: '../../etc/passwd' }], 'steps.0.voice', /pattern/],
      [[{ type: 'say', text: 'Hi', voice: '-w' }], 'steps.0.voice', /pattern/],
      [
        [{ type: 'dial', targets: [{ type: 'number', target: '555' }] }],
        'steps.0.targets.0.target',
        /E\.164/,
      ],
      [[{ type: 'pause', seconds: 0 }], 'steps.0.seconds', />= 1/],
      [[{ type: 'redirect' }], 'steps.0', /exactly one of flowId and url/],
      [[nested(8)], `steps.0${'.whenOpen.0'.repeat(7)}.whenOpen`, /deeper than 8 levels/],
      [
        [hours({ whenOpen: Array(300).fill(say), whenClosed: Array(200).fill(say) })],
        'steps.0.whenClosed.199',
        /one step too many: a flow holds at most 500/,
      ],
    ];
    for (const [steps, path, message] of cases) {
      const res = await api(acme, 'POST', '/call-flows', { name: 'Bad', steps });
      assertRefusedB(res, 400, 'INVALID_FLOW_STEP');
      assert.equal(res.body.data.path, path, res.text);
      assert.ok(res.body.error.startsWith(`${path} `), res.text);
      assert.match(res.body.error, message);
    }
    // The deepest and the largest flows allowed are taken.
    assert.equal((await api(acme, 'POST', '/call-flows', { name: 'Deep', steps: [nested(7)] })).status, 201);
    const largest = [hours({ whenOpen: Array(299).fill(say), whenClosed: Array(200).fill(say) })];
    assert.equal((await api(acme, 'POST', '/call-flows', { name: 'Big', steps: largest })).status, 201);
    assert.equal(await flowRows(acme.id), 2);

    const flow = (await api(acme, 'POST', '/call-flows', { name: 'Ok', steps: [say] })).body.data;
    const refused = await api(acme, 'PATCH', `/call-flows/${flow.id}`, { steps: [{ type: 'pause' }] });
    assertRefusedB(refused, 400, 'INVALID_FLOW_STEP');
    assert.equal(refused.body.data.path, 'steps.0.seconds');
    assert.equal((await api(acme, 'GET', `/call-flows/${flow.id}`)).body.data.version, 1);
    assert.equal((await api(acme, 'POST', '/call-flows', { name: 'Empty', steps: [] })).status, 400);
  });

  test('a transfer step takes every kind of target a transfer rings, each checked against the organization', async () => {
    const acme = await org();
    const extension = (await api(acme, 'POST', '/extensions', { extension: '201', name: 'Desk' })).body.data;
    const group = await api(acme, 'POST', '/ring-groups', { name: 'Team', extensionIds: [extension.id] });
    assert.equal(group.status, 201, group.text);
    const domain = t.ctx.config.sipDomain;
    for (const target of [
      { type: 'extension', target: extension.id },
      { type: 'ring_group', target: group.body.data.id },
      { type: 'number', target: '+14155550102' },
      { type: 'sip', target: `sip:201@${domain}` },
    ]) {
      const res = await api(acme, 'POST', '/call-flows', {
        name: 'Transfer',
        steps: [{ type: 'transfer', target }],
      });
      assert.equal(res.status, 201, `${JSON.stringify(target)}: ${res.text}`);
    }
    const before = await flowRows(acme.id);
    for (const target of [
      { type: 'ring_group', target: 'rg_0000000001abcdefabcdefabcd' },
      { type: 'sip', target: `sip:299@${domain}` },
    ]) {
      const res = await api(acme, 'POST', '/call-flows', {
        name: 'Nowhere',
        steps: [{ type: 'transfer', target }],
      });
      assertRefusedB(res, 400, 'INVALID_FLOW_STEP');
      assert.equal(res.body.data.path, 'steps.0.target.target', JSON.stringify(target));
    }
    assert.equal(await flowRows(acme.id), before);
  });

  test('a number routed to a flow; the delete refused while it is (409 CALL_FLOW_IN_USE)', async () => {
    const acme = await org();
    const flow = (await api(acme, 'POST', '/call-flows', { name: 'IVR', steps: [{ type: 'hangup' }] })).body
      .data;
    const [number] = (await api(acme, 'GET', '/numbers')).body.data;
    const routed = await api(acme, 'PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'flow', target: flow.id },
    });
    assert.equal(routed.status, 200, routed.text);
    assert.deepEqual(routed.body.data.voiceRoute, { type: 'flow', target: flow.id });

    const refused = await api(acme, 'DELETE', `/call-flows/${flow.id}`);
    assertRefusedB(refused, 409, 'CALL_FLOW_IN_USE');
    assert.ok(refused.body.error.includes(number.number), refused.text);
    assert.deepEqual(refused.body.data, { numbers: [{ id: number.id, number: number.number }] });
    assert.equal((await api(acme, 'GET', `/call-flows/${flow.id}`)).status, 200);

    const missing = await api(acme, 'PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'flow', target: 'flow_0000000000nosuchflow000000' },
    });
    assert.equal(missing.status, 400);
    assert.match(missing.body.error, /no call flow/);
    assert.deepEqual((await api(acme, 'GET', `/numbers/${number.id}`)).body.data.voiceRoute, {
      type: 'flow',
      target: flow.id,
    });

    await api(acme, 'PATCH', `/numbers/${number.id}`, { voiceRoute: null });
    assert.equal((await api(acme, 'DELETE', `/call-flows/${flow.id}`)).status, 200);
  });

  test("another organization's flows, extensions and agents are out of reach everywhere", async () => {
    const acme = await org();
    const globex = await org();
    const theirs = await references(globex);
    const flow = (await api(globex, 'POST', '/call-flows', { name: 'Theirs', steps: [{ type: 'hangup' }] }))
      .body.data;
    for (const [method, path, body] of [
      ['GET', `/call-flows/${flow.id}`, undefined],
      ['PATCH', `/call-flows/${flow.id}`, { name: 'Mine' }],
      ['PATCH', `/call-flows/${flow.id}`, { steps: [{ type: 'hangup' }] }],
      ['DELETE', `/call-flows/${flow.id}`, undefined],
    ] as const) {
      const res = await api(acme, method, path, body);
      assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
    }
    assert.deepEqual((await api(acme, 'GET', '/call-flows')).body.data, []);
    assert.equal(await t.ctx.flows.resolve(acme.id, flow.id), undefined);
    assert.equal(await t.ctx.flows.resolve(acme.id, flow.id, 1), undefined);

    const [number] = (await api(acme, 'GET', '/numbers')).body.data;
    const route = await api(acme, 'PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'flow', target: flow.id },
    });
    assert.equal(route.status, 400);
    assert.equal(`${route.body.error}`.includes('no call flow'), true, route.text);

    for (const [step, path] of [
      [{ type: 'redirect', flowId: flow.id }, 'steps.0.flowId'],
      [{ type: 'voicemail', extensionId: theirs.extensionId }, 'steps.0.extensionId'],
      [{ type: 'agent', agentId: theirs.agentId }, 'steps.0.agentId'],
      [
        { type: 'dial', targets: [{ type: 'extension', target: theirs.extensionId }] },
        'steps.0.targets.0.target',
      ],
    ] as const) {
      const res = await api(acme, 'POST', '/call-flows', { name: 'Borrowed', steps: [step] });
      assertRefusedB(res, 400, 'INVALID_FLOW_STEP');
      assert.equal(res.body.data.path, path);
      assert.match(res.body.error, /in this organization/);
    }
    assert.equal(await flowRows(acme.id), 0);
    assert.equal((await api(globex, 'GET', `/call-flows/${flow.id}`)).body.data.name, 'Theirs');

    // Its own flow it may redirect to.
    const own = (await api(acme, 'POST', '/call-flows', { name: 'Own', steps: [{ type: 'hangup' }] })).body
      .data;
    const linked = await api(acme, 'POST', '/call-flows', {
      name: 'Linked',
      steps: [{ type: 'redirect', flowId: own.id }],
    });
    assert.equal(linked.status, 201, linked.text);
  });

  test('scopes, the voice product, and the portal: members read, owners and admins change', async () => {
    const acme = await org();
    const reader = await org({}, ['flows:read']);
    assert.equal((await api(reader, 'GET', '/call-flows')).status, 200);
    const refused = await api(reader, 'POST', '/call-flows', { name: 'x', steps: [{ type: 'hangup' }] });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'insufficient_scope');
    const caller = await org({}, ['calls:write']);
    assert.equal((await api(caller, 'GET', '/call-flows')).status, 403);
    const noVoice = await org({ products: ['messaging'] });
    const gated = await api(noVoice, 'GET', '/call-flows');
    assert.equal(gated.status, 402);
    assert.deepEqual(gated.body.data, { product: 'voice' });

    const owner = await signIn(t, await createUser(t, { role: 'owner', organizationIds: [acme.id] }));
    const member = await signIn(t, await createUser(t, { role: 'member', organizationIds: [acme.id] }));
    const portal = (token: string, method: string, path: string, body?: unknown) =>
      t.request(method, `/v2/portal${path}`, { token, body });
    const created = await portal(owner, 'POST', '/call-flows', {
      name: 'Portal',
      steps: [{ type: 'hangup' }],
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.data.id;
    assert.equal((await portal(member, 'GET', '/call-flows')).body.data.length, 1);
    assert.equal((await portal(member, 'GET', `/call-flows/${id}`)).body.data.name, 'Portal');
    const memberEdits = await portal(member, 'PATCH', `/call-flows/${id}`, { name: 'No' });
    assert.equal(memberEdits.status, 403);
    assert.ok(isShapeA(memberEdits.body));
    const edited = await portal(owner, 'PATCH', `/call-flows/${id}`, {
      steps: [{ type: 'pause', seconds: 2 }],
    });
    assert.equal(edited.body.data.version, 2);
    const bad = await portal(owner, 'PATCH', `/call-flows/${id}`, {
      steps: [{ type: 'pause', seconds: 61 }],
    });
    assert.equal(bad.status, 400);
    assert.ok(isShapeA(bad.body));
    assert.equal(bad.body.code, 'INVALID_FLOW_STEP');
    assert.equal(bad.body.data.path, 'steps.0.seconds');
    // The same flow on both interfaces.
    assert.equal((await api(acme, 'GET', `/call-flows/${id}`)).body.data.version, 2);
    assert.equal((await portal(owner, 'DELETE', `/call-flows/${id}`)).status, 200);
    assert.equal((await api(acme, 'GET', `/call-flows/${id}`)).status, 404);
  });
});
