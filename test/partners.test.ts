// Partners (CONTRACT section 11, docs/partners.md): a non-partner gets 403 on every partner route; a partner
// gets 412 REQUIRES_PARTNER_AGREEMENT_ACCEPTANCE with data.version until it accepts the agreement in force, then
// 200, and 412 again when a new version is published; acceptance records who and when; client organizations
// are created (their creator their owner) and listed; their usage over a period; another partner's client is
// a 404. Every refusal is Shape A with its code, and changes nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertRefusedA, createOrganization, startTestApp, type TestApp } from './helpers/app.ts';
import { createUser, signIn } from './helpers/portal.ts';

const P = '/v2/portal/partner';

describe('partners', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const call = (token: string, method: string, path: string, body?: unknown) =>
    t.request(method, path, { token, body });

  async function partner(name = 'Reseller') {
    const org = await createOrganization(t, { name, partner: true });
    const owner = await createUser(t, { organizationIds: [org.id], role: 'owner' });
    const member = await createUser(t, { organizationIds: [org.id], role: 'member' });
    return { org, owner, ownerToken: await signIn(t, owner), memberToken: await signIn(t, member) };
  }

  const routes = [
    ['GET', `${P}/agreement`],
    ['POST', `${P}/agreement/accept`, { version: 'v1' }],
    ['GET', `${P}/organizations`],
    ['POST', `${P}/organizations`, { name: 'Client' }],
    ['GET', `${P}/organizations/org_x/usage`],
  ] as const;

  test('a non-partner gets 403 FORBIDDEN on every partner route, and nothing is made', async () => {
    const org = await createOrganization(t);
    const token = await signIn(t, await createUser(t, { organizationIds: [org.id] }));
    for (const [method, path, body] of routes)
      assertRefusedA(await call(token, method, path, body), 403, 'FORBIDDEN');
    const [{ n }] = await t.ctx.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM organizations WHERE partner_id = $1',
      [org.id],
    );
    assert.equal(n, 0);
  });

  test('412 until the agreement in force is accepted, then 200; 412 again after a new version', async () => {
    const { ownerToken, memberToken, owner } = await partner();
    const v1 = await t.admin('POST', '/partner-agreements', {
      version: `v1-${Date.now()}`,
      text: 'Terms, version 1',
    });
    assert.equal(v1.status, 201, v1.text);
    const version = v1.body.data.version;
    for (const [method, path, body] of routes.slice(2)) {
      const refused = await call(ownerToken, method, path, body);
      assertRefusedA(refused, 412, 'REQUIRES_PARTNER_AGREEMENT_ACCEPTANCE');
      assert.deepEqual(refused.body.data, { version });
    }
    const shown = await call(memberToken, 'GET', `${P}/agreement`);
    assert.equal(shown.status, 200, shown.text);
    assert.equal(shown.body.data.version, version);
    assert.equal(shown.body.data.text, 'Terms, version 1');
    assert.equal(shown.body.data.accepted, false);

    assertRefusedA(await call(memberToken, 'POST', `${P}/agreement/accept`, { version }), 403, 'FORBIDDEN');
    assertRefusedA(
      await call(ownerToken, 'POST', `${P}/agreement/accept`, { version: 'v0' }),
      409,
      'AGREEMENT_VERSION_MISMATCH',
    );
    assert.equal(
      (await call(memberToken, 'GET', `${P}/agreement`)).body.data.accepted,
      false,
      'nothing recorded',
    );

    const accepted = await call(ownerToken, 'POST', `${P}/agreement/accept`, { version });
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal(accepted.body.data.accepted, true);
    assert.deepEqual(accepted.body.data.acceptedBy, { userId: owner.id, email: owner.email });
    const acceptedAt = Date.parse(accepted.body.data.acceptedAt);
    assert.ok(Math.abs(acceptedAt - t.ctx.clock.nowMs()) < 60_000, 'when, on the server clock');
    assert.equal(
      (await call(memberToken, 'GET', `${P}/organizations`)).status,
      200,
      'any member may read now',
    );

    const v2 = await t.admin('POST', '/partner-agreements', {
      version: `v2-${Date.now()}`,
      text: 'Terms, version 2',
    });
    assert.equal(v2.status, 201);
    const again = await call(ownerToken, 'GET', `${P}/organizations`);
    assertRefusedA(again, 412, 'REQUIRES_PARTNER_AGREEMENT_ACCEPTANCE');
    assert.deepEqual(again.body.data, { version: v2.body.data.version });
    await call(ownerToken, 'POST', `${P}/agreement/accept`, { version: v2.body.data.version });
    assert.equal((await call(ownerToken, 'GET', `${P}/organizations`)).status, 200);

    assertRefusedA(
      await t.admin('POST', '/partner-agreements', { version, text: 'again' }),
      409,
      'AGREEMENT_EXISTS',
    );
  });

  test('client organizations: created with their creator as owner, listed, their usage; others 404', async () => {
    const reseller = await partner('Reseller A');
    const current = (await call(reseller.ownerToken, 'GET', `${P}/agreement`)).body.data;
    await call(reseller.ownerToken, 'POST', `${P}/agreement/accept`, { version: current.version });

    assertRefusedA(
      await call(reseller.memberToken, 'POST', `${P}/organizations`, { name: 'Nope' }),
      403,
      'FORBIDDEN',
    );
    const created = await call(reseller.ownerToken, 'POST', `${P}/organizations`, {
      name: 'Dental Client',
      region: 'ca',
    });
    assert.equal(created.status, 201, created.text);
    const client = created.body.data;
    assert.equal(client.name, 'Dental Client');
    assert.equal(client.region, 'ca');
    assert.equal((await t.admin('GET', `/organizations/${client.id}`)).body.data.partnerId, reseller.org.id);
    const listed = await call(reseller.memberToken, 'GET', `${P}/organizations`);
    assert.deepEqual(
      listed.body.data.map((c: { id: string }) => c.id),
      [client.id],
    );
    // The creator may switch into the client and act there as its owner.
    const switched = await call(reseller.ownerToken, 'POST', '/v2/portal/auth/switch-organization', {
      organizationId: client.id,
    });
    assert.equal(switched.status, 200, switched.text);
    assert.equal((await call(switched.body.data.token, 'GET', '/v2/portal/auth/me')).body.data.role, 'owner');

    // Usage over a period: messages (both ways), outbound segments, calls and whole minutes.
    const now = t.ctx.clock.now();
    const hourAgo = new Date(now.getTime() - 3600_000);
    await t.ctx.db.query(
      `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                             encoding, status, status_updated_at, created_at)
       VALUES ('msg_p1', $1, 'outbound', 'api', '+12025550100', '+12025550101', 'a', 3, 'GSM-7', 'delivered', $2, $2),
              ('msg_p2', $1, 'outbound', 'api', '+12025550100', '+12025550101', 'b', 1, 'GSM-7', 'sent', $2, $2),
              ('msg_p3', $1, 'inbound', 'carrier', '+12025550101', '+12025550100', 'c', 1, 'GSM-7', 'received', $2, $2),
              ('msg_p4', $1, 'outbound', 'api', '+12025550100', '+12025550101', 'old', 5, 'GSM-7', 'delivered', $3, $3)`,
      [client.id, hourAgo, new Date(now.getTime() - 40 * 86_400_000)],
    );
    await t.ctx.db.query(
      `INSERT INTO calls (id, organization_id, region, direction, from_number, to_number, status, started_at,
                          duration_seconds, created_at, updated_at)
       VALUES ('call_p1', $1, 'ca', 'outbound', '+12025550100', '+12025550101', 'completed', $2, 61, $2, $2),
              ('call_p2', $1, 'ca', 'inbound', '+12025550101', '+12025550100', 'completed', $2, 30, $2, $2),
              ('call_p3', $1, 'ca', 'inbound', '+12025550101', '+12025550100', 'no_answer', $2, 0, $2, $2)`,
      [client.id, hourAgo],
    );
    const usage = await call(reseller.memberToken, 'GET', `${P}/organizations/${client.id}/usage`);
    assert.equal(usage.status, 200, usage.text);
    assert.deepEqual(
      {
        messages: usage.body.data.messages,
        segments: usage.body.data.segments,
        calls: usage.body.data.calls,
        minutes: usage.body.data.minutes,
      },
      { messages: 3, segments: 4, calls: 3, minutes: 3 },
    );
    const since = new Date(now.getTime() - 60 * 86_400_000).toISOString();
    const longer = await call(
      reseller.memberToken,
      'GET',
      `${P}/organizations/${client.id}/usage?since=${since}`,
    );
    assert.equal(longer.body.data.messages, 4);
    assert.equal(longer.body.data.segments, 9);
    assertRefusedA(
      await call(reseller.memberToken, 'GET', `${P}/organizations/${client.id}/usage?since=soon`),
      400,
      undefined,
    );

    // Another partner cannot see it; nor can anyone reach a non-client through the partner routes.
    const other = await partner('Reseller B');
    await call(other.ownerToken, 'POST', `${P}/agreement/accept`, { version: current.version });
    assertRefusedA(
      await call(other.memberToken, 'GET', `${P}/organizations/${client.id}/usage`),
      404,
      undefined,
    );
    assert.deepEqual((await call(other.memberToken, 'GET', `${P}/organizations`)).body.data, []);
    assertRefusedA(
      await call(reseller.memberToken, 'GET', `${P}/organizations/${other.org.id}/usage`),
      404,
      undefined,
    );
  });
});
