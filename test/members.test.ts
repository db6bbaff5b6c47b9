// Members on the portal (CONTRACT section 11, docs/members.md), with invitations mailed over a real SMTP server:
// a new person is invited, chooses a password through the mail's link (which accepts) and signs in as a member;
// a person with an account is invited, not added, and becomes a member only by accepting in the portal; roles
// change; the last owner stays; who may do what; every refusal in Shape A with its code and nothing changed;
// another organization's members are out of reach. Declining, revoking, refreshing and expiry are in
// invitations.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertRefusedA, createOrganization, type TestApp } from './helpers/app.ts';
import { MailCatcher, startAppWithMail, textOf, tokenIn } from './helpers/mail.ts';
import { createUser, login, PASSWORD, signIn, uniqueEmail } from './helpers/portal.ts';

const MEMBERS = '/v2/portal/members';
const INVITATIONS = '/v2/portal/invitations';

describe('members', () => {
  let t: TestApp;
  const catcher = new MailCatcher();
  before(async () => {
    t = await startAppWithMail(catcher, 'https://console.example.com');
    t.ctx.jobs.start();
  });
  after(() => t.close());

  const call = (token: string, method: string, path: string, body?: unknown) =>
    t.request(method, path, { token, body });
  const list = async (token: string) =>
    (await call(token, 'GET', `${MEMBERS}?limit=100`)).body.data as {
      userId: string | null;
      email: string;
      role: string;
      status: string;
      invitation: { id: string } | null;
    }[];

  async function team() {
    const org = await createOrganization(t, { name: 'Team Co' });
    const owner = await createUser(t, { organizationIds: [org.id], role: 'owner' });
    const admin = await createUser(t, { organizationIds: [org.id], role: 'admin' });
    const member = await createUser(t, { organizationIds: [org.id], role: 'member' });
    return {
      org,
      owner: { ...owner, token: await signIn(t, owner) },
      admin: { ...admin, token: await signIn(t, admin) },
      member: { ...member, token: await signIn(t, member) },
    };
  }

  test('a new person is invited, chooses a password from the mail and signs in as a member', async () => {
    const { org, owner } = await team();
    const email = uniqueEmail('invitee');
    const invited = await call(owner.token, 'POST', MEMBERS, { email, role: 'member' });
    assert.equal(invited.status, 201, invited.text);
    assert.equal(invited.body.data.email, email);
    assert.equal(invited.body.data.role, 'member');
    assert.equal(invited.body.data.status, 'invited');
    assert.equal(invited.body.data.userId, null, 'not a member until they accept');
    assert.match(invited.body.data.invitation.id, /^inv_/);
    assert.deepEqual(
      (await list(owner.token)).filter((m) => m.email === email).map((m) => [m.status, m.userId]),
      [['invited', null]],
    );
    // Nobody knows the password yet: signing in fails like any wrong password.
    assert.equal((await login(t, { email, password: PASSWORD })).status, 401);

    const mail = await catcher.waitFor(email);
    const text = textOf(mail);
    assert.match(text, /invited you to Team Co/);
    assert.match(text, /https:\/\/console\.example\.com\/reset-password\?token=prt_/);
    const confirmed = await t.request('POST', '/v2/portal/auth/password-reset/confirm', {
      body: { token: tokenIn(mail), newPassword: 'my own password 1' },
    });
    assert.equal(confirmed.status, 200, confirmed.text);
    const session = await login(t, { email, password: 'my own password 1' });
    assert.equal(session.status, 200, session.text);
    assert.equal(session.body.data.organizationId, org.id);
    const me = await call(session.body.data.token, 'GET', '/v2/portal/auth/me');
    assert.equal(me.body.data.role, 'member');
    assert.equal(me.body.data.pendingInvitations, 0, 'choosing the password accepted it');
    const rows = (await list(owner.token)).filter((m) => m.email === email);
    assert.deepEqual(
      rows.map((m) => [m.status, m.userId]),
      [['active', me.body.data.user.id]],
    );
  });

  test('a person with an account is invited, not added, and joins only by accepting in the portal', async () => {
    const { org, admin } = await team();
    const elsewhere = await createUser(t);
    const invited = await call(admin.token, 'POST', MEMBERS, {
      email: elsewhere.email.toUpperCase(),
      role: 'admin',
    });
    assert.equal(invited.status, 201, invited.text);
    // The organization sees what it sees for a new person: the address, invited, no account named.
    assert.equal(invited.body.data.userId, null);
    assert.equal(invited.body.data.status, 'invited');
    assert.equal(invited.body.data.joinedAt, null);
    const invitationId = invited.body.data.invitation.id as string;
    const rows = await list(admin.token);
    assert.ok(!rows.some((m) => m.userId === elsewhere.id), 'not a member');
    assert.deepEqual(
      rows.filter((m) => m.invitation).map((m) => [m.status, m.role, m.invitation?.id]),
      [['invited', 'admin', invitationId]],
    );
    const outstanding = await call(admin.token, 'GET', `${MEMBERS}/invitations`);
    assert.deepEqual(
      outstanding.body.data.map((i: { id: string; status: string }) => [i.id, i.status]),
      [[invitationId, 'pending']],
    );

    const mail = await catcher.waitFor(elsewhere.email);
    assert.match(textOf(mail), /invited you to join Team Co as admin/);
    assert.match(textOf(mail), /https:\/\/console\.example\.com\/invitations/);
    assert.doesNotMatch(textOf(mail), /prt_/, 'no link that could set their password');

    // Signed in, they are still not a member: not offered, not reachable, but told an invitation waits.
    const session = await login(t, { email: elsewhere.email, password: PASSWORD });
    assert.ok(!session.body.data.availableOrganizations.some((o: { id: string }) => o.id === org.id));
    const token = session.body.data.token as string;
    assertRefusedA(
      await call(token, 'POST', '/v2/portal/auth/switch-organization', { organizationId: org.id }),
      403,
      'FORBIDDEN',
    );
    assert.equal((await call(token, 'GET', '/v2/portal/auth/me')).body.data.pendingInvitations, 1);
    const mine = await call(token, 'GET', INVITATIONS);
    assert.equal(mine.status, 200, mine.text);
    assert.deepEqual(mine.body.data, [
      {
        id: invitationId,
        organization: { id: org.id, name: 'Team Co' },
        role: 'admin',
        invitedBy: { name: 'Test User', email: admin.email },
        status: 'pending',
        invitedAt: mine.body.data[0].invitedAt,
        expiresAt: mine.body.data[0].expiresAt,
      },
    ]);
    assert.equal(
      Date.parse(mine.body.data[0].expiresAt) - Date.parse(mine.body.data[0].invitedAt),
      7 * 864e5,
    );

    // Someone else cannot answer it, and it is not in their list.
    const stranger = await signIn(t, await createUser(t));
    assert.deepEqual((await call(stranger, 'GET', INVITATIONS)).body.data, []);
    for (const answer of ['accept', 'decline']) {
      assertRefusedA(
        await call(stranger, 'POST', `${INVITATIONS}/${invitationId}/${answer}`),
        404,
        undefined,
      );
    }

    const accepted = await call(token, 'POST', `${INVITATIONS}/${invitationId}/accept`);
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal(accepted.body.data.status, 'accepted');
    const me = (await call(token, 'GET', '/v2/portal/auth/me')).body.data;
    assert.equal(me.pendingInvitations, 0);
    assert.deepEqual(
      me.availableOrganizations.find((o: { id: string }) => o.id === org.id),
      { id: org.id, name: 'Team Co', role: 'admin' },
    );
    const switched = await call(token, 'POST', '/v2/portal/auth/switch-organization', {
      organizationId: org.id,
    });
    assert.equal(switched.status, 200, switched.text);
    assert.equal((await call(switched.body.data.token, 'GET', '/v2/portal/auth/me')).body.data.role, 'admin');
    const after = await list(admin.token);
    assert.deepEqual(
      after.filter((m) => m.email === elsewhere.email).map((m) => [m.status, m.userId, m.role]),
      [['active', elsewhere.id, 'admin']],
    );
    assert.ok(!after.some((m) => m.invitation), 'the invitation left the list');

    assertRefusedA(
      await call(switched.body.data.token, 'POST', `${INVITATIONS}/${invitationId}/accept`),
      409,
      'INVITATION_ANSWERED',
    );
    const again = await call(admin.token, 'POST', MEMBERS, { email: elsewhere.email, role: 'member' });
    assertRefusedA(again, 409, 'MEMBER_EXISTS');
  });

  test('roles: owner and admin manage, a member reads; only an owner touches owners', async () => {
    const { owner, admin, member } = await team();
    const pending = await call(owner.token, 'POST', MEMBERS, { email: uniqueEmail('future'), role: 'owner' });
    const invitationId = pending.body.data.invitation.id as string;
    const before = await list(member.token);
    assert.equal(before.length, 4, 'a member may read the list, the invitation with it');

    for (const refused of [
      await call(member.token, 'POST', MEMBERS, { email: uniqueEmail(), role: 'member' }),
      await call(member.token, 'PATCH', `${MEMBERS}/${admin.id}`, { role: 'member' }),
      await call(member.token, 'DELETE', `${MEMBERS}/${admin.id}`),
      await call(admin.token, 'POST', MEMBERS, { email: uniqueEmail(), role: 'owner' }),
      await call(admin.token, 'PATCH', `${MEMBERS}/${member.id}`, { role: 'owner' }),
      await call(admin.token, 'PATCH', `${MEMBERS}/${owner.id}`, { role: 'member' }),
      await call(admin.token, 'DELETE', `${MEMBERS}/${owner.id}`),
      await call(member.token, 'DELETE', `${MEMBERS}/invitations/${invitationId}`),
      // An invitation to be owner is an owner's: an admin neither changes it by inviting again nor revokes it.
      await call(admin.token, 'POST', MEMBERS, { email: pending.body.data.email, role: 'member' }),
      await call(admin.token, 'DELETE', `${MEMBERS}/invitations/${invitationId}`),
    ]) {
      assertRefusedA(refused, 403, 'FORBIDDEN');
    }
    assert.deepEqual(await list(owner.token), before, 'nothing changed');

    const promoted = await call(admin.token, 'PATCH', `${MEMBERS}/${member.id}`, { role: 'admin' });
    assert.equal(promoted.status, 200, promoted.text);
    assert.equal(promoted.body.data.role, 'admin');
    assert.equal((await call(member.token, 'GET', '/v2/portal/auth/me')).body.data.role, 'admin', 'at once');
    const demoted = await call(admin.token, 'PATCH', `${MEMBERS}/${member.id}`, { role: 'member' });
    assert.equal(demoted.body.data.role, 'member');
    const owned = await call(owner.token, 'PATCH', `${MEMBERS}/${admin.id}`, { role: 'owner' });
    assert.equal(owned.body.data.role, 'owner');
  });

  test('the last owner cannot be demoted or removed (409 LAST_OWNER); with two owners one may go', async () => {
    const { owner, admin } = await team();
    assertRefusedA(
      await call(owner.token, 'PATCH', `${MEMBERS}/${owner.id}`, { role: 'admin' }),
      409,
      'LAST_OWNER',
    );
    assertRefusedA(await call(owner.token, 'DELETE', `${MEMBERS}/${owner.id}`), 409, 'LAST_OWNER');
    assert.equal((await list(owner.token)).find((m) => m.userId === owner.id)?.role, 'owner');

    await call(owner.token, 'PATCH', `${MEMBERS}/${admin.id}`, { role: 'owner' });
    // Two owners demote each other at the same moment: the owners' rows are locked, so one stays owner.
    const [a, b] = await Promise.all([
      call(owner.token, 'PATCH', `${MEMBERS}/${admin.id}`, { role: 'member' }),
      call(admin.token, 'PATCH', `${MEMBERS}/${owner.id}`, { role: 'member' }),
    ]);
    const statuses = [a.status, b.status].sort();
    const owners = (await list(owner.token).catch(() => [])).filter((m) => m.role === 'owner');
    const stillOwner = owners.length ? owners : (await list(admin.token)).filter((m) => m.role === 'owner');
    assert.equal(stillOwner.length, 1, `one owner left (${statuses.join(', ')})`);
  });

  test('removing a member ends their sessions in the organization; they keep their account', async () => {
    const { org, owner, member } = await team();
    const removed = await call(owner.token, 'DELETE', `${MEMBERS}/${member.id}`);
    assert.equal(removed.status, 200, removed.text);
    assert.deepEqual(removed.body.data, { removed: true });
    assertRefusedA(await call(member.token, 'GET', '/v2/portal/auth/me'), 401, 'SESSION_EXPIRED');
    assert.ok(!(await list(owner.token)).some((m) => m.userId === member.id));
    // They may still sign in (to other organizations they belong to); this one is no longer theirs.
    const other = await createOrganization(t);
    await t.ctx.users.addMembership(member.id, other.id, 'member');
    const session = await login(t, { email: member.email, password: PASSWORD });
    assert.equal(session.status, 200);
    assert.ok(!session.body.data.availableOrganizations.some((o: { id: string }) => o.id === org.id));
  });

  test("refusals: bad input 400, unknown or another organization's member 404, nothing changed", async () => {
    const { owner } = await team();
    const stranger = await team();
    const before = await list(owner.token);
    for (const body of [
      {},
      { email: 'not-an-email', role: 'member' },
      { email: uniqueEmail(), role: 'king' },
    ]) {
      assertRefusedA(await call(owner.token, 'POST', MEMBERS, body), 400, undefined);
    }
    assertRefusedA(
      await call(owner.token, 'PATCH', `${MEMBERS}/${stranger.member.id}`, { role: 'admin' }),
      404,
      undefined,
    );
    assertRefusedA(await call(owner.token, 'DELETE', `${MEMBERS}/${stranger.member.id}`), 404, undefined);
    assertRefusedA(await call(owner.token, 'DELETE', `${MEMBERS}/usr_nobody`), 404, undefined);
    assertRefusedA(
      await call(owner.token, 'PATCH', `${MEMBERS}/${owner.id}`, { role: 'boss' }),
      400,
      undefined,
    );
    assert.deepEqual(await list(owner.token), before);
    assert.equal((await list(stranger.owner.token)).length, 3, "the other organization's members untouched");
    assertRefusedA(await t.request('GET', MEMBERS), 401, 'AUTH_REQUIRED');
  });
});
