// Members on the portal (CONTRACT section 11, docs/auth.md "Members"), with invitations mailed over a real SMTP
// server: a new person is invited, chooses a password through the mail's link and signs in as a member; a
// person with an account is added at once and told; roles change; the last owner stays; who may do what; every
// refusal in Shape A with its code and nothing changed; another organization's members are out of reach.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertRefusedA, createOrganization, type TestApp } from './helpers/app.ts';
import { MailCatcher, startAppWithMail, textOf, tokenIn } from './helpers/mail.ts';
import { createUser, login, PASSWORD, signIn, uniqueEmail } from './helpers/portal.ts';

const MEMBERS = '/v2/portal/members';

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
      userId: string;
      email: string;
      role: string;
      status: string;
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
    const row = (await list(owner.token)).find((m) => m.email === email);
    assert.equal(row?.status, 'active');
  });

  test('a person with an account is added at once, told by mail, and switches to the organization', async () => {
    const { org, admin } = await team();
    const elsewhere = await createUser(t);
    const added = await call(admin.token, 'POST', MEMBERS, {
      email: elsewhere.email.toUpperCase(),
      role: 'admin',
    });
    assert.equal(added.status, 201, added.text);
    assert.equal(added.body.data.userId, elsewhere.id);
    assert.equal(added.body.data.status, 'active');
    const mail = await catcher.waitFor(elsewhere.email);
    assert.match(textOf(mail), /added you to Team Co/);
    assert.doesNotMatch(textOf(mail), /prt_/, 'no link that could set their password');
    const token = await signIn(t, elsewhere);
    const switched = await call(token, 'POST', '/v2/portal/auth/switch-organization', {
      organizationId: org.id,
    });
    assert.equal(switched.status, 200, switched.text);

    const again = await call(admin.token, 'POST', MEMBERS, { email: elsewhere.email, role: 'member' });
    assertRefusedA(again, 409, 'MEMBER_EXISTS');
  });

  test('roles: owner and admin manage, a member reads; only an owner touches owners', async () => {
    const { owner, admin, member } = await team();
    const before = await list(member.token);
    assert.equal(before.length, 3, 'a member may read the list');

    for (const refused of [
      await call(member.token, 'POST', MEMBERS, { email: uniqueEmail(), role: 'member' }),
      await call(member.token, 'PATCH', `${MEMBERS}/${admin.id}`, { role: 'member' }),
      await call(member.token, 'DELETE', `${MEMBERS}/${admin.id}`),
      await call(admin.token, 'POST', MEMBERS, { email: uniqueEmail(), role: 'owner' }),
      await call(admin.token, 'PATCH', `${MEMBERS}/${member.id}`, { role: 'owner' }),
      await call(admin.token, 'PATCH', `${MEMBERS}/${owner.id}`, { role: 'member' }),
      await call(admin.token, 'DELETE', `${MEMBERS}/${owner.id}`),
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
