// Ring groups (CONTRACT section 13; the ring order of each strategy as a unit: ring-order.test.ts). The
// resource over a real socket with an API key and in the portal: create, read, list, change, delete, every
// refusal with nothing written, another organization's extensions and groups, scopes, the product, portal roles;
// a deleted extension leaving its groups. And what a call flow's dial step gets from the service: attempts() for
// each strategy, round robin moving on after answeredBy(), longest idle read from real call records made on the
// simulated PBX.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

describe('ring groups', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const org = (fields: Record<string, unknown> = {}, scopes?: string[]) => sender(t, fields, { scopes });
  const groupsOf = (who: Sender) =>
    countRows(t, 'SELECT 1 FROM ring_groups WHERE organization_id = $1', [who.id]);

  /** `count` extensions of `who`, numbered from `first`. */
  async function extensions(who: Sender, count: number, first = 101): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const res = await api(who, 'POST', '/extensions', { extension: String(first + i), name: `Desk ${i}` });
      assert.equal(res.status, 201, res.text);
      ids.push(res.body.data.id);
    }
    return ids;
  }

  test('create with defaults, read, list, change, delete', async () => {
    const acme = await org();
    const [a, b, c] = await extensions(acme, 3);
    const created = await api(acme, 'POST', '/ring-groups', { name: 'Sales', extensionIds: [b, a] });
    assert.equal(created.status, 201, created.text);
    const group = created.body.data;
    assert.match(group.id, /^rg_/);
    assert.deepEqual(
      { ...group, id: undefined, createdAt: undefined, updatedAt: undefined },
      {
        id: undefined,
        name: 'Sales',
        extensionIds: [b, a],
        strategy: 'simultaneous',
        ringSeconds: 20,
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    assert.deepEqual((await api(acme, 'GET', `/ring-groups/${group.id}`)).body.data, group);

    const second = await api(acme, 'POST', '/ring-groups', {
      name: 'Support',
      extensionIds: [c],
      strategy: 'longest_idle',
      ringSeconds: 300,
    });
    assert.equal(second.status, 201, second.text);
    assert.equal(second.body.data.strategy, 'longest_idle');
    assert.equal(second.body.data.ringSeconds, 300);
    const list = await api(acme, 'GET', '/ring-groups?limit=1');
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.pagination.total, 2);
    assert.equal(list.body.data[0].id, second.body.data.id, 'newest first');
    assert.equal((await api(acme, 'GET', '/ring-groups?page=2&limit=1')).body.data[0].id, group.id);

    t.ctx.clock.advance(5);
    const changed = await api(acme, 'PATCH', `/ring-groups/${group.id}`, {
      name: 'Sales floor',
      extensionIds: [c, a, b],
      strategy: 'round_robin',
      ringSeconds: 5,
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.data.name, 'Sales floor');
    assert.deepEqual(changed.body.data.extensionIds, [c, a, b], 'the new list in its own order');
    assert.equal(changed.body.data.strategy, 'round_robin');
    assert.equal(changed.body.data.ringSeconds, 5);
    assert.ok(changed.body.data.updatedAt > group.updatedAt);
    const renamed = await api(acme, 'PATCH', `/ring-groups/${group.id}`, { name: 'Floor' });
    assert.deepEqual(renamed.body.data.extensionIds, [c, a, b], 'members stay when not given');

    const deleted = await api(acme, 'DELETE', `/ring-groups/${group.id}`);
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body.data, { id: group.id, deleted: true });
    assert.equal((await api(acme, 'GET', `/ring-groups/${group.id}`)).status, 404);
    assert.equal((await api(acme, 'DELETE', `/ring-groups/${group.id}`)).status, 404);
    assert.equal(
      await countRows(t, 'SELECT 1 FROM ring_group_members WHERE ring_group_id = $1', [group.id]),
      0,
    );
    assert.equal((await api(acme, 'GET', `/extensions/${a}`)).status, 200, 'its extensions stay');
  });

  test('refusals: 400 for each malformed field, repeated or foreign members; nothing written', async () => {
    const acme = await org();
    const [mine] = await extensions(acme, 1);
    const globex = await org();
    const [theirs] = await extensions(globex, 1);
    const cases: [unknown, RegExp | undefined][] = [
      [{}, undefined],
      [{ name: 'x' }, /extensionIds/],
      [{ name: '', extensionIds: [mine] }, /name/],
      [{ name: 'x'.repeat(101), extensionIds: [mine] }, /name/],
      [{ name: 'x', extensionIds: [] }, /extensionIds/],
      [{ name: 'x', extensionIds: [mine, mine] }, /duplicate/],
      [{ name: 'x', extensionIds: mine }, /extensionIds/],
      [{ name: 'x', extensionIds: [mine], strategy: 'random' }, /strategy/],
      [{ name: 'x', extensionIds: [mine], ringSeconds: 4 }, /ringSeconds/],
      [{ name: 'x', extensionIds: [mine], ringSeconds: 301 }, /ringSeconds/],
      [{ name: 'x', extensionIds: [mine], ringSeconds: 20.5 }, /ringSeconds/],
      [{ name: 'x', extensionIds: [mine], lastAnsweredExtensionId: mine }, undefined],
      [{ name: 'x', extensionIds: [mine, theirs] }, new RegExp(`${theirs} is not an extension`)],
      [{ name: 'x', extensionIds: ['ext_nothing'] }, /ext_nothing is not an extension/],
    ];
    for (const [body, message] of cases) {
      const res = await api(acme, 'POST', '/ring-groups', body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.success, false);
      if (message) assert.match(res.body.error, message, JSON.stringify(body));
    }
    // 51 members: one more than a group holds.
    const many = Array.from({ length: 51 }, (_, i) => `ext_${i}`);
    assert.equal((await api(acme, 'POST', '/ring-groups', { name: 'x', extensionIds: many })).status, 400);
    assert.equal(await groupsOf(acme), 0);

    const group = (await api(acme, 'POST', '/ring-groups', { name: 'Ok', extensionIds: [mine] })).body.data;
    for (const body of [
      {},
      { extensionIds: [] },
      { extensionIds: [theirs] },
      { ringSeconds: 0 },
      { strategy: 'all' },
      { id: 'rg_other' },
    ]) {
      const res = await api(acme, 'PATCH', `/ring-groups/${group.id}`, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    }
    const refusedWithName = await api(acme, 'PATCH', `/ring-groups/${group.id}`, {
      name: 'Renamed',
      extensionIds: [theirs],
    });
    assert.equal(refusedWithName.status, 400);
    assert.deepEqual(
      (await api(acme, 'GET', `/ring-groups/${group.id}`)).body.data,
      group,
      'a refused change changes nothing, not even the fields that were fine',
    );
  });

  test('fifty members is the most a group holds', async () => {
    const acme = await org();
    const ids = await extensions(acme, 50, 1000);
    const res = await api(acme, 'POST', '/ring-groups', { name: 'Everyone', extensionIds: ids });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.data.extensionIds, ids);
  });

  test("another organization's groups are 404 on every route and stay as they were", async () => {
    const acme = await org();
    const [a] = await extensions(acme, 1);
    const group = (await api(acme, 'POST', '/ring-groups', { name: 'A', extensionIds: [a] })).body.data;
    const globex = await org();
    const [g] = await extensions(globex, 1);
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { name: 'Mine' }],
      ['PATCH', { extensionIds: [g] }],
      ['DELETE', undefined],
    ] as const) {
      const res = await api(globex, method, `/ring-groups/${group.id}`, body);
      assert.equal(res.status, 404, `${method}: ${res.text}`);
    }
    assert.equal((await api(globex, 'GET', '/ring-groups')).body.pagination.total, 0);
    assert.deepEqual((await api(acme, 'GET', `/ring-groups/${group.id}`)).body.data, group);
    assert.equal(await t.ctx.ringGroups.attempts(globex.id, group.id), undefined);
  });

  test('scopes flows:read and flows:write, the voice product, and the portal twin with its roles', async () => {
    const acme = await org();
    const [a] = await extensions(acme, 1);
    const reader = await sender(t, {}, { scopes: ['flows:read'], number: null });
    // A reader of another organization: scopes are checked before the body is.
    const refused = await api(reader, 'POST', '/ring-groups', { name: 'x', extensionIds: [a] });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'insufficient_scope');
    assert.equal((await api(reader, 'GET', '/ring-groups')).status, 200);
    const extensionsOnly = await sender(t, {}, { scopes: ['extensions:write'], number: null });
    assert.equal((await api(extensionsOnly, 'GET', '/ring-groups')).status, 403);

    const noVoice = await org({ products: ['messaging'] });
    const gated = await api(noVoice, 'GET', '/ring-groups');
    assert.equal(gated.status, 402);
    assert.deepEqual(gated.body.data, { product: 'voice' });

    const owner = await signIn(t, await createUser(t, { role: 'owner', organizationIds: [acme.id] }));
    const member = await signIn(t, await createUser(t, { role: 'member', organizationIds: [acme.id] }));
    const portal = (token: string, method: string, path: string, body?: unknown) =>
      t.request(method, `/v2/portal${path}`, { token, body });
    const created = await portal(owner, 'POST', '/ring-groups', { name: 'Desk', extensionIds: [a] });
    assert.equal(created.status, 201, created.text);
    const id = created.body.data.id;
    assert.equal((await api(acme, 'GET', `/ring-groups/${id}`)).body.data.name, 'Desk', 'one resource');
    const listed = await portal(member, 'GET', '/ring-groups');
    assert.equal(listed.status, 200);
    assert.equal(listed.body.data[0].id, id);
    assert.equal((await portal(member, 'GET', `/ring-groups/${id}`)).status, 200);
    const memberChanges = await portal(member, 'PATCH', `/ring-groups/${id}`, { name: 'Mine' });
    assert.equal(memberChanges.status, 403);
    assert.ok(isShapeA(memberChanges.body));
    const invalid = await portal(owner, 'POST', '/ring-groups', { name: 'x', extensionIds: ['ext_none'] });
    assert.equal(invalid.status, 400);
    assert.ok(isShapeA(invalid.body), invalid.text);
    assert.match(invalid.body.message, /ext_none is not an extension/);
    assert.equal((await portal(owner, 'PATCH', `/ring-groups/${id}`, { ringSeconds: 60 })).status, 200);
    assert.equal((await portal(owner, 'DELETE', `/ring-groups/${id}`)).status, 200);
    assert.equal((await portal(member, 'GET', `/ring-groups/${id}`)).status, 404);
  });

  test('deleting an extension takes it out of every group; a group left empty rings nobody', async () => {
    const acme = await org();
    const [a, b] = await extensions(acme, 2);
    const both = (await api(acme, 'POST', '/ring-groups', { name: 'Both', extensionIds: [a, b] })).body.data;
    const alone = (await api(acme, 'POST', '/ring-groups', { name: 'Alone', extensionIds: [a] })).body.data;
    assert.equal((await api(acme, 'DELETE', `/extensions/${a}`)).status, 200);
    assert.deepEqual((await api(acme, 'GET', `/ring-groups/${both.id}`)).body.data.extensionIds, [b]);
    assert.deepEqual((await api(acme, 'GET', `/ring-groups/${alone.id}`)).body.data.extensionIds, []);
    assert.deepEqual(await t.ctx.ringGroups.attempts(acme.id, alone.id), { ringSeconds: 20, attempts: [] });
    // Still a group: members can be given again.
    const refilled = await api(acme, 'PATCH', `/ring-groups/${alone.id}`, { extensionIds: [b] });
    assert.deepEqual(refilled.body.data.extensionIds, [b]);
  });

  test('attempts: simultaneous and sequential; undefined for an unknown group', async () => {
    const acme = await org();
    const [a, b, c] = await extensions(acme, 3);
    const group = async (strategy: string) =>
      (
        await api(acme, 'POST', '/ring-groups', {
          name: strategy,
          extensionIds: [c, a, b],
          strategy,
          ringSeconds: 15,
        })
      ).body.data.id as string;
    assert.deepEqual(await t.ctx.ringGroups.attempts(acme.id, await group('simultaneous')), {
      ringSeconds: 15,
      attempts: [{ extensionIds: [c, a, b] }],
    });
    assert.deepEqual(await t.ctx.ringGroups.attempts(acme.id, await group('sequential')), {
      ringSeconds: 15,
      attempts: [{ extensionIds: [c] }, { extensionIds: [a] }, { extensionIds: [b] }],
    });
    assert.equal(await t.ctx.ringGroups.attempts(acme.id, 'rg_missing'), undefined);
  });

  test('round robin moves on after answeredBy, survives edits, and starts over when its member leaves', async () => {
    const acme = await org();
    const [a, b, c] = await extensions(acme, 3);
    const id = (
      await api(acme, 'POST', '/ring-groups', {
        name: 'RR',
        extensionIds: [a, b, c],
        strategy: 'round_robin',
      })
    ).body.data.id as string;
    const firsts = async () =>
      (await t.ctx.ringGroups.attempts(acme.id, id))!.attempts.map((attempt) => attempt.extensionIds[0]);
    assert.deepEqual(await firsts(), [a, b, c], 'nobody answered yet');
    await t.ctx.ringGroups.answeredBy(id, a);
    assert.deepEqual(await firsts(), [b, c, a]);
    await t.ctx.ringGroups.answeredBy(id, b);
    assert.deepEqual(await firsts(), [c, a, b]);
    await t.ctx.ringGroups.answeredBy(id, c);
    assert.deepEqual(await firsts(), [a, b, c], 'wraps around');
    await t.ctx.ringGroups.answeredBy(id, b);
    // An extension that is not a member (another organization's, or a stranger) moves nothing.
    const globex = await org();
    const [g] = await extensions(globex, 1);
    await t.ctx.ringGroups.answeredBy(id, g!);
    await t.ctx.ringGroups.answeredBy(id, 'ext_nobody');
    assert.deepEqual(await firsts(), [c, a, b]);
    // Reordering keeps the position: after b, in the new order.
    await api(acme, 'PATCH', `/ring-groups/${id}`, { extensionIds: [b, c, a] });
    assert.deepEqual(await firsts(), [c, a, b]);
    await api(acme, 'PATCH', `/ring-groups/${id}`, { extensionIds: [c, a, b] });
    assert.deepEqual(await firsts(), [c, a, b], 'b is last: the top of the list');
    // b deleted: the rotation starts over at the top.
    await api(acme, 'DELETE', `/extensions/${b}`);
    assert.deepEqual(await firsts(), [c, a]);
    // The position is kept in the database, not in a process.
    const [row] = await t.ctx.db.query<{ last_answered_extension_id: string }>(
      'SELECT last_answered_extension_id FROM ring_groups WHERE id = $1',
      [id],
    );
    assert.equal(row!.last_answered_extension_id, b);
  });

  test('longest idle from real calls: answered calls count, missed calls and voicemail do not', async () => {
    const acme = await org();
    const [a, b, c, d] = await extensions(acme, 4);
    const id = (
      await api(acme, 'POST', '/ring-groups', {
        name: 'Idle',
        extensionIds: [a, b, c, d],
        strategy: 'longest_idle',
      })
    ).body.data.id as string;
    const order = async () =>
      (await t.ctx.ringGroups.attempts(acme.id, id))!.attempts.map((attempt) => attempt.extensionIds[0]);
    const drive = async (callId: string, event: string) => {
      const res = await t.admin('POST', `/test/pbx/calls/${callId}`, { event });
      assert.equal(res.status, 200, res.text);
      return res.body.data;
    };
    /** A click-to-call from `extensionId`: it answers, the callee answers, they talk a minute, it ends. */
    const talk = async (extensionId: string) => {
      const placed = await api(acme, 'POST', '/calls', {
        from: acme.number,
        to: '+14155550199',
        extensionId,
      });
      assert.equal(placed.status, 202, placed.text);
      await drive(placed.body.data.id, 'answered');
      await drive(placed.body.data.id, 'answered');
      t.ctx.clock.advance(60);
      const ended = await drive(placed.body.data.id, 'completed');
      assert.equal(ended.status, 'completed');
      t.ctx.clock.advance(60);
    };

    assert.deepEqual(await order(), [a, b, c, d], 'nobody has had a call: the list order');
    await talk(c);
    await talk(a);
    assert.deepEqual(await order(), [b, d, c, a], 'never called first, then the longest since their call');
    await talk(b);
    await talk(d);
    assert.deepEqual(await order(), [c, a, b, d]);
    await talk(c);
    assert.deepEqual(await order(), [a, b, d, c]);

    // A call the extension did not answer leaves it as idle as it was.
    const missed = await api(acme, 'POST', '/calls', {
      from: acme.number,
      to: '+14155550198',
      extensionId: a,
    });
    await drive(missed.body.data.id, 'no_answer');
    // A caller talking to a's voicemail box: a was not on the phone.
    const [number] = (await api(acme, 'GET', '/numbers')).body.data;
    await api(acme, 'PATCH', `/numbers/${number.id}`, { voiceRoute: { type: 'extension', target: a } });
    const voicemail = await t.admin('POST', '/test/pbx/inbound', {
      from: '+14155550197',
      to: acme.number,
      outcome: 'no_answer',
    });
    assert.match(voicemail.body.data?.voicemailId ?? '', /^vm_/, voicemail.text);
    // A call still under way is not an ended call.
    const live = await api(acme, 'POST', '/calls', { from: acme.number, to: '+14155550196', extensionId: b });
    await drive(live.body.data.id, 'answered');
    assert.deepEqual(await order(), [a, b, d, c]);
  });
});
