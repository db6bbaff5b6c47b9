// Call queues as a resource (CONTRACT section 13) over a real socket, with an API key and in the portal: create
// with defaults, read, list, change, delete; every refusal with nothing written (malformed fields, repeated or
// foreign members, onTimeout steps that are not valid call-flow steps); another organization's queues; scopes,
// the product, portal roles; a deleted extension leaving its queues. The queue runtime (waiting callers,
// members' states, GET /queues/{id}/live) is tested in queue-runtime.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

describe('queues', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const org = (fields: Record<string, unknown> = {}, scopes?: string[]) =>
    sender(t, fields, { scopes, number: null });
  const queuesOf = (who: Sender) => countRows(t, 'SELECT 1 FROM queues WHERE organization_id = $1', [who.id]);

  /** A recording of the organization (a queue's hold audio names one), stored as a call's recording is. */
  async function recording(who: Sender, id: string): Promise<string> {
    await t.ctx.db.query(
      `INSERT INTO recordings (id, organization_id, call_id, duration_seconds, voice, audio, created_at)
       VALUES ($1, $2, 'call_hold', 1, 'rtp', $3, now())`,
      [id, who.id, Buffer.alloc(44)],
    );
    return id;
  }

  async function extensions(who: Sender, count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const res = await api(who, 'POST', '/extensions', { extension: String(201 + i), name: `Agent ${i}` });
      assert.equal(res.status, 201, res.text);
      ids.push(res.body.data.id);
    }
    return ids;
  }

  test('create with defaults, read, list, change every field, delete', async () => {
    const acme = await org();
    const [a, b, c] = await extensions(acme, 3);
    const created = await api(acme, 'POST', '/queues', { name: 'Support', extensionIds: [a, b] });
    assert.equal(created.status, 201, created.text);
    const queue = created.body.data;
    assert.match(queue.id, /^q_/);
    assert.deepEqual(
      { ...queue, id: undefined, createdAt: undefined, updatedAt: undefined },
      {
        id: undefined,
        name: 'Support',
        extensionIds: [a, b],
        strategy: 'longest_idle',
        holdAudioId: null,
        announcePosition: false,
        maxWaitSeconds: 600,
        onTimeout: [],
        wrapUpSeconds: 0,
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    assert.deepEqual((await api(acme, 'GET', `/queues/${queue.id}`)).body.data, queue);

    const onTimeout = [
      { type: 'say', text: 'Everyone is still busy. Please leave a message.' },
      { type: 'voicemail', extensionId: a },
      { type: 'hangup' },
    ];
    await recording(acme, 'rec_hold');
    await recording(acme, 'rec_music');
    const full = await api(acme, 'POST', '/queues', {
      name: 'Sales',
      extensionIds: [c],
      strategy: 'round_robin',
      holdAudioId: 'rec_hold',
      announcePosition: true,
      maxWaitSeconds: 7200,
      onTimeout,
      wrapUpSeconds: 600,
    });
    assert.equal(full.status, 201, full.text);
    assert.equal(full.body.data.strategy, 'round_robin');
    assert.equal(full.body.data.holdAudioId, 'rec_hold');
    assert.equal(full.body.data.announcePosition, true);
    assert.equal(full.body.data.maxWaitSeconds, 7200);
    assert.deepEqual(full.body.data.onTimeout, onTimeout);
    assert.equal(full.body.data.wrapUpSeconds, 600);

    const list = await api(acme, 'GET', '/queues?limit=1');
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.pagination.total, 2);
    assert.equal(list.body.data[0].id, full.body.data.id, 'newest first');
    assert.deepEqual(list.body.data[0], full.body.data);

    t.ctx.clock.advance(5);
    const changed = await api(acme, 'PATCH', `/queues/${queue.id}`, {
      name: 'Support line',
      extensionIds: [c, b, a],
      strategy: 'simultaneous',
      holdAudioId: 'rec_music',
      announcePosition: true,
      maxWaitSeconds: 10,
      onTimeout: [{ type: 'hangup' }],
      wrapUpSeconds: 30,
    });
    assert.equal(changed.status, 200, changed.text);
    assert.deepEqual(
      { ...changed.body.data, updatedAt: undefined },
      {
        ...queue,
        name: 'Support line',
        extensionIds: [c, b, a],
        strategy: 'simultaneous',
        holdAudioId: 'rec_music',
        announcePosition: true,
        maxWaitSeconds: 10,
        onTimeout: [{ type: 'hangup' }],
        wrapUpSeconds: 30,
        updatedAt: undefined,
      },
    );
    assert.ok(changed.body.data.updatedAt > queue.updatedAt);
    const cleared = await api(acme, 'PATCH', `/queues/${queue.id}`, { holdAudioId: null, onTimeout: [] });
    assert.equal(cleared.body.data.holdAudioId, null);
    assert.deepEqual(cleared.body.data.onTimeout, []);
    assert.deepEqual(cleared.body.data.extensionIds, [c, b, a], 'members stay when not given');

    const deleted = await api(acme, 'DELETE', `/queues/${queue.id}`);
    assert.deepEqual(deleted.body.data, { id: queue.id, deleted: true });
    assert.equal((await api(acme, 'GET', `/queues/${queue.id}`)).status, 404);
    assert.equal((await api(acme, 'DELETE', `/queues/${queue.id}`)).status, 404);
    assert.equal(await countRows(t, 'SELECT 1 FROM queue_members WHERE queue_id = $1', [queue.id]), 0);
    assert.equal((await api(acme, 'GET', `/extensions/${a}`)).status, 200, 'its extensions stay');
  });

  test('refusals: 400 for each malformed field and repeated or foreign members; nothing written', async () => {
    const acme = await org();
    const [mine] = await extensions(acme, 1);
    const globex = await org();
    const [theirs] = await extensions(globex, 1);
    const globexRecording = await recording(globex, 'rec_globex_hold');
    const ok = { name: 'Q', extensionIds: [mine] };
    const cases: [unknown, RegExp | undefined][] = [
      [{}, undefined],
      [{ name: 'Q' }, /extensionIds/],
      [{ ...ok, name: '' }, /name/],
      [{ ...ok, extensionIds: [] }, /extensionIds/],
      [{ ...ok, extensionIds: [mine, mine] }, /duplicate/],
      [{ ...ok, extensionIds: Array.from({ length: 51 }, (_, i) => `ext_${i}`) }, /extensionIds/],
      [{ ...ok, strategy: 'fewest_calls' }, /strategy/],
      [{ ...ok, holdAudioId: '' }, /holdAudioId/],
      [{ ...ok, holdAudioId: 5 }, /holdAudioId/],
      [{ ...ok, announcePosition: 'yes' }, /announcePosition/],
      [{ ...ok, maxWaitSeconds: 9 }, /maxWaitSeconds/],
      [{ ...ok, maxWaitSeconds: 7201 }, /maxWaitSeconds/],
      [{ ...ok, wrapUpSeconds: -1 }, /wrapUpSeconds/],
      [{ ...ok, wrapUpSeconds: 601 }, /wrapUpSeconds/],
      [{ ...ok, onTimeout: { type: 'hangup' } }, /onTimeout/],
      [{ ...ok, onTimeout: ['hangup'] }, /onTimeout/],
      [{ ...ok, onTimeout: [{ text: 'no type' }] }, /onTimeout/],
      [{ ...ok, live: [] }, undefined],
      [{ ...ok, extensionIds: [mine, theirs] }, new RegExp(`${theirs} is not an extension`)],
      [{ ...ok, holdAudioId: 'rec_nowhere' }, /holdAudioId: rec_nowhere is not a recording/],
      [{ ...ok, holdAudioId: globexRecording }, /is not a recording of this organization/],
    ];
    for (const [body, message] of cases) {
      const res = await api(acme, 'POST', '/queues', body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.success, false);
      if (message) assert.match(res.body.error, message, JSON.stringify(body));
    }
    assert.equal(await queuesOf(acme), 0);

    const queue = (await api(acme, 'POST', '/queues', ok)).body.data;
    for (const body of [{}, { extensionIds: [theirs] }, { maxWaitSeconds: 0 }, { id: 'q_other' }]) {
      const res = await api(acme, 'PATCH', `/queues/${queue.id}`, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    }
    const refused = await api(acme, 'PATCH', `/queues/${queue.id}`, { name: 'New', extensionIds: [theirs] });
    assert.equal(refused.status, 400);
    assert.deepEqual((await api(acme, 'GET', `/queues/${queue.id}`)).body.data, queue, 'nothing changed');
  });

  test('onTimeout is checked as call-flow steps; a refusal names the path of the bad field', async () => {
    const acme = await org();
    const [mine] = await extensions(acme, 1);
    const ok = { name: 'Q', extensionIds: [mine] };
    const cases: [unknown[], RegExp][] = [
      [[{ type: 'dance' }], /onTimeout\.0/],
      [[{ type: 'hangup' }, { type: 'say' }], /onTimeout\.1/],
      [[{ type: 'say', text: 'hi', colour: 'red' }], /onTimeout\.0/],
      [[{ type: 'pause', seconds: 0 }], /onTimeout\.0\.seconds/],
      [
        [{ type: 'gather', input: ['dtmf'], branches: { '1': [{ type: 'say', text: 7 }] } }],
        /onTimeout\.0\.branches\.1\.0\.text/,
      ],
    ];
    for (const [onTimeout, message] of cases) {
      const res = await api(acme, 'POST', '/queues', { ...ok, onTimeout });
      assert.equal(res.status, 400, `${JSON.stringify(onTimeout)}: ${res.text}`);
      assert.match(res.body.error, message, res.text);
      assert.equal(res.body.code, 'INVALID_FLOW_STEP');
      assert.match(res.body.data.path, /^onTimeout\./);
    }
    assert.equal(await queuesOf(acme), 0);
    const queue = (await api(acme, 'POST', '/queues', ok)).body.data;
    const patched = await api(acme, 'PATCH', `/queues/${queue.id}`, { onTimeout: [{ type: 'dance' }] });
    assert.equal(patched.status, 400);
    assert.match(patched.body.error, /onTimeout\.0/);
    assert.deepEqual((await api(acme, 'GET', `/queues/${queue.id}`)).body.data.onTimeout, []);
  });

  test("another organization's queues are 404 on every route and stay as they were", async () => {
    const acme = await org();
    const [a] = await extensions(acme, 1);
    const queue = (await api(acme, 'POST', '/queues', { name: 'A', extensionIds: [a] })).body.data;
    const globex = await org();
    const [g] = await extensions(globex, 1);
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { name: 'Mine' }],
      ['PATCH', { extensionIds: [g] }],
      ['PATCH', { onTimeout: [{ type: 'dance' }] }],
      ['DELETE', undefined],
    ] as const) {
      const res = await api(globex, method, `/queues/${queue.id}`, body);
      assert.equal(res.status, 404, `${method}: ${res.text}`);
    }
    assert.equal((await api(globex, 'GET', '/queues')).body.pagination.total, 0);
    assert.deepEqual((await api(acme, 'GET', `/queues/${queue.id}`)).body.data, queue);
  });

  test('scopes flows:read and flows:write, the voice product, and the portal twin with its roles', async () => {
    const acme = await org();
    const [a] = await extensions(acme, 1);
    const reader = await org({}, ['flows:read']);
    const refused = await api(reader, 'POST', '/queues', { name: 'x', extensionIds: [a] });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'insufficient_scope');
    assert.equal((await api(reader, 'GET', '/queues')).status, 200);
    assert.equal((await api(await org({}, ['calls:read']), 'GET', '/queues')).status, 403);

    const noVoice = await org({ products: ['messaging'] });
    const gated = await api(noVoice, 'GET', '/queues');
    assert.equal(gated.status, 402);
    assert.deepEqual(gated.body.data, { product: 'voice' });

    const admin = await signIn(t, await createUser(t, { role: 'admin', organizationIds: [acme.id] }));
    const member = await signIn(t, await createUser(t, { role: 'member', organizationIds: [acme.id] }));
    const portal = (token: string, method: string, path: string, body?: unknown) =>
      t.request(method, `/v2/portal${path}`, { token, body });
    const created = await portal(admin, 'POST', '/queues', { name: 'Desk', extensionIds: [a] });
    assert.equal(created.status, 201, created.text);
    const id = created.body.data.id;
    assert.equal((await api(acme, 'GET', `/queues/${id}`)).body.data.name, 'Desk', 'one resource');
    const listed = await portal(member, 'GET', '/queues');
    assert.equal(listed.status, 200);
    assert.equal(listed.body.data[0].id, id);
    const memberCreates = await portal(member, 'POST', '/queues', { name: 'M', extensionIds: [a] });
    assert.equal(memberCreates.status, 403);
    assert.ok(isShapeA(memberCreates.body));
    const invalid = await portal(admin, 'PATCH', `/queues/${id}`, { maxWaitSeconds: 1 });
    assert.equal(invalid.status, 400);
    assert.ok(isShapeA(invalid.body), invalid.text);
    assert.equal((await portal(admin, 'PATCH', `/queues/${id}`, { wrapUpSeconds: 15 })).status, 200);
    assert.equal((await portal(admin, 'DELETE', `/queues/${id}`)).status, 200);
    assert.equal((await portal(member, 'GET', `/queues/${id}`)).status, 404);
  });

  test('deleting an extension takes it out of every queue', async () => {
    const acme = await org();
    const [a, b] = await extensions(acme, 2);
    const queue = (await api(acme, 'POST', '/queues', { name: 'Q', extensionIds: [a, b] })).body.data;
    const group = (await api(acme, 'POST', '/ring-groups', { name: 'G', extensionIds: [b, a] })).body.data;
    assert.equal((await api(acme, 'DELETE', `/extensions/${a}`)).status, 200);
    assert.deepEqual((await api(acme, 'GET', `/queues/${queue.id}`)).body.data.extensionIds, [b]);
    assert.deepEqual((await api(acme, 'GET', `/ring-groups/${group.id}`)).body.data.extensionIds, [b]);
    assert.equal((await api(acme, 'DELETE', `/extensions/${b}`)).status, 200);
    assert.deepEqual((await api(acme, 'GET', `/queues/${queue.id}`)).body.data.extensionIds, []);
  });
});
