// The cross-organization matrix (issue 11): every operation of /openapi.json that takes an id in its path, on
// every interface a customer reaches (developer API, portal, management), is called by organization A with
// organization B's real ids, and must answer 404 and change nothing. The matrix is generated from the
// document: a new id route is covered without a test written for it, and if no foreign id can be found for
// it (its collection has no list, or nothing is seeded below), this test fails and says which route.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOrganization, startTestApp, type TestApp } from './helpers/app.ts';
import { operationsOf, validExample } from './helpers/openapi.ts';
import { createUser, signIn } from './helpers/portal.ts';

interface Party {
  apiKey: string;
  token: string;
}

describe('organization A can reach none of organization B’s resources', () => {
  let t: TestApp;
  let a: Party;
  let b: Party;
  let document: any;

  /** How `party` authenticates on the interface of `path`. */
  const credentials = (party: Party, path: string) =>
    path.startsWith('/api/v2/') ? { apiKey: party.apiKey } : { token: party.token };

  async function party(): Promise<Party> {
    const org = await createOrganization(t, {
      plan: 'enterprise',
      subscriptionState: 'paid',
      cardVerified: true,
    });
    const user = await createUser(t, { role: 'owner', organizationIds: [org.id] });
    const apiKey = (await t.ctx.apiKeys.create(org.id, { name: 'matrix', scopes: ['*'] })).secret;
    return { apiKey, token: await signIn(t, user) };
  }

  before(async () => {
    // A transcription service nobody answers: transcriptions are queued (and stay so), whatever is installed.
    t = await startTestApp({ config: { transcriptionUrl: 'http://127.0.0.1:9/v1' } });
    a = await party();
    b = await party();
    const bOrg = (await t.request('GET', '/api/v2/me', { apiKey: b.apiKey })).body.data.organization.id;
    await t.admin('POST', `/organizations/${bOrg}/numbers`, { number: '+12025550188', type: 'local' });
    // One of every resource B can have, made through the API as a customer would.
    const asB = (method: string, path: string, body?: unknown) =>
      t.request(method, path, { ...credentials(b, path), body });
    const contact = await asB('POST', '/api/v2/contacts', { phone: '+12025550111', firstName: 'Bea' });
    assert.equal(contact.status, 201, contact.text);
    const list = await asB('POST', '/api/v2/contact-lists', { name: 'B list' });
    assert.equal(list.status, 201, list.text);
    await asB('POST', `/api/v2/contact-lists/${list.body.data.id}/members`, {
      contactIds: [contact.body.data.id],
    });
    const campaign = await asB('POST', '/api/v2/campaigns', {
      name: 'B promo',
      message: 'Hi {{first_name}}',
      contactListIds: [list.body.data.id],
    });
    assert.equal(campaign.status, 201, campaign.text);
    const extension = await asB('POST', '/api/v2/extensions', { extension: '101', name: 'B desk' });
    assert.equal(extension.status, 201, extension.text);
    const members = { extensionIds: [extension.body.data.id] };
    const ringGroup = await asB('POST', '/api/v2/ring-groups', { name: 'B group', ...members });
    assert.equal(ringGroup.status, 201, ringGroup.text);
    const queue = await asB('POST', '/api/v2/queues', { name: 'B queue', ...members });
    assert.equal(queue.status, 201, queue.text);
    const [number] = (await asB('GET', '/api/v2/numbers')).body.data;
    await asB('PATCH', `/api/v2/numbers/${number.id}`, {
      voiceRoute: { type: 'extension', target: extension.body.data.id },
    });
    const missed = await t.admin('POST', '/test/pbx/inbound', {
      from: '+12025550112',
      to: number.number,
      outcome: 'no_answer',
    });
    assert.match(missed.body.data?.voicemailId ?? '', /^vm_/, missed.text);
    const call = await asB('POST', '/api/v2/calls', {
      from: number.number,
      to: '+12025550113',
      record: true,
    });
    assert.equal(call.status, 202, call.text);
    await t.admin('POST', `/test/pbx/calls/${call.body.data.id}`, { event: 'answered' });
    await t.admin('POST', `/test/pbx/calls/${call.body.data.id}`, { event: 'completed' });
    // A call still under way, for the hang-up route.
    await asB('POST', '/api/v2/calls', { from: number.number, to: '+12025550114' });
    const kb = await asB('POST', '/api/v2/knowledge-bases', { name: 'B answers' });
    assert.equal(kb.status, 201, kb.text);
    const doc = await asB('POST', `/api/v2/knowledge-bases/${kb.body.data.id}/documents`, {
      title: 'Hours',
      content: 'Open daily.',
    });
    assert.equal(doc.status, 201, doc.text);
    const agent = await asB('POST', '/api/v2/agents', {
      name: 'B agent',
      knowledgeBaseIds: [kb.body.data.id],
    });
    assert.equal(agent.status, 201, agent.text);
    const agentCall = await asB('POST', `/api/v2/agents/${agent.body.data.id}/calls`, { to: '+12025550115' });
    assert.equal(agentCall.status, 202, agentCall.text);
    const flow = await asB('POST', '/api/v2/call-flows', {
      name: 'B menu',
      steps: [{ type: 'voicemail', extensionId: extension.body.data.id }],
    });
    assert.equal(flow.status, 201, flow.text);
    const sent = await asB('POST', '/api/v2/messages/send', { to: '+12025550111', message: 'hi' });
    assert.equal(sent.status, 202, sent.text);
    const hook = await asB('POST', '/api/webhooks', {
      url: 'https://hooks.example.com/b',
      events: ['message.sent'],
    });
    assert.equal(hook.status, 201, hook.text);
    const tested = await asB('POST', `/api/webhooks/${hook.body.data.id}/test`);
    assert.equal(tested.status, 202, tested.text);
    const key = await asB('POST', '/api/api-keys', { name: 'B key', scopes: ['contacts:read'] });
    assert.equal(key.status, 201, key.text);
    const exported = await asB('POST', '/api/v2/exports', { resource: 'contacts', format: 'csv' });
    assert.equal(exported.status, 202, exported.text);
    // Both partners (no agreement published here), so A's refusal can only be B's client not being its own.
    const aOrg = (await t.request('GET', '/api/v2/me', { apiKey: a.apiKey })).body.data.organization.id;
    for (const id of [aOrg, bOrg]) await t.admin('PATCH', `/organizations/${id}`, { partner: true });
    const client = await asB('POST', '/v2/portal/partner/organizations', { name: 'B client' });
    assert.equal(client.status, 201, client.text);
    // An invitation B's organization sent, and one B's person received (from a third organization).
    const invited = await asB('POST', '/v2/portal/members', {
      email: 'b-invitee@example.com',
      role: 'member',
    });
    assert.equal(invited.status, 201, invited.text);
    const bEmail = (await asB('GET', '/v2/portal/auth/me')).body.data.user.email;
    const third = await createOrganization(t);
    const thirdOwner = await signIn(t, await createUser(t, { role: 'owner', organizationIds: [third.id] }));
    const received = await t.request('POST', '/v2/portal/members', {
      token: thirdOwner,
      body: { email: bEmail, role: 'member' },
    });
    assert.equal(received.status, 201, received.text);
    document = (await t.request('GET', '/openapi.json')).body;
  });
  after(() => t.close());

  /** B's ids for every parameter of `template`, each read from the list one level up, as B. */
  async function foreignIds(template: string): Promise<Record<string, string> | string> {
    const ids: Record<string, string> = {};
    const params = [...template.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
    for (const param of params) {
      const collection = template
        .slice(0, template.indexOf(`{${param}}`) - 1)
        .replace(/\{(\w+)\}/g, (_, name: string) => ids[name]!);
      const res = await t.request('GET', collection, credentials(b, collection));
      // A row names its id `id`, or after the parameter (members: `userId`, which a pending invitation listed
      // among them has not): the first row that has one.
      const rows: any[] = Array.isArray(res.body?.data) ? res.body.data : [];
      const first = rows.find((row) => row?.[param] ?? row?.id);
      const id = first?.[param] ?? first?.id;
      if (res.status !== 200 || !id) return `no foreign id for {${param}}: GET ${collection} → ${res.status}`;
      ids[param] = id;
    }
    return ids;
  }

  test('every id route of the developer API, the portal and management answers A with 404', async () => {
    // Not the operator API, nor carriers' webhooks (a provider's path, named by the carrier, not an id).
    const routes = operationsOf(document).filter(
      ({ path }) => path.includes('{') && !path.startsWith('/admin/') && !path.startsWith('/carriers/'),
    );
    assert.ok(routes.length >= 30, `only ${routes.length} id routes`);
    const problems: string[] = [];
    for (const [index, { path, method, operation }] of routes.entries()) {
      // Each key's request-rate window (100 a minute) would otherwise refuse B's lists part way through.
      if (index % 10 === 0) t.ctx.clock.advance(61);
      const ids = await foreignIds(path);
      const where = `${method.toUpperCase()} ${path}`;
      if (typeof ids === 'string') {
        problems.push(`${where}: ${ids} (seed one in this test)`);
        continue;
      }
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]!);
      const body = validExample(operation.requestBody?.content?.['application/json']?.schema);
      const res = await t.request(method.toUpperCase(), url, { ...credentials(a, url), body });
      if (res.status !== 404) problems.push(`${where}: A got ${res.status} ${res.text.slice(0, 160)}`);
      // And B still has it, unchanged in existence.
      const owner = await foreignIds(path);
      if (typeof owner === 'string') problems.push(`${where}: B lost its resource after A's call`);
    }
    assert.deepEqual(problems, []);
  });
});
