// Invitations to an organization (docs/members.md), beyond the two ways in (members.test.ts): declining
// changes nothing, inviting again refreshes the one invitation, revoking takes it (and its mailed link) away,
// an expired one is refused with 410 and can be renewed, an account with no organization left answers by the
// link, and no organization reaches another's invitations. Mail goes over a real SMTP server.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertRefusedA, createOrganization, type TestApp } from './helpers/app.ts';
import { MailCatcher, startAppWithMail, textOf, tokenIn } from './helpers/mail.ts';
import { advance, createUser, login, PASSWORD, signIn, uniqueEmail } from './helpers/portal.ts';

const MEMBERS = '/v2/portal/members';
const INVITATIONS = '/v2/portal/invitations';
const HOUR = 3600;
const DAY = 24 * HOUR;

describe('invitations', () => {
  let t: TestApp;
  const catcher = new MailCatcher();
  before(async () => {
    t = await startAppWithMail(catcher, 'https://console.example.com');
    t.ctx.jobs.start();
  });
  after(() => t.close());

  const call = (token: string, method: string, path: string, body?: unknown) =>
    t.request(method, path, { token, body });
  const invitationRows = async (token: string) =>
    ((await call(token, 'GET', `${MEMBERS}?limit=100`)).body.data as any[]).filter((m) => m.invitation);
  const mine = async (token: string) => (await call(token, 'GET', INVITATIONS)).body.data as any[];
  const membersOf = async (organizationId: string) =>
    t.ctx.db.query<{ user_id: string; role: string }>(
      'SELECT user_id, role FROM memberships WHERE organization_id = $1 ORDER BY created_at',
      [organizationId],
    );

  /** An organization with its owner signed in, and a person elsewhere with an account, signed in too. */
  async function setting() {
    const org = await createOrganization(t, { name: 'Inviting Co' });
    const owner = await createUser(t, { organizationIds: [org.id], role: 'owner' });
    const person = await createUser(t);
    return {
      org,
      owner: { ...owner, token: await signIn(t, owner) },
      person: { ...person, token: await signIn(t, person) },
    };
  }

  async function mailsTo(email: string, count: number) {
    for (let waited = 0; catcher.mailsTo(email).length < count; waited += 50) {
      assert.ok(waited < 10_000, `${count} mails to ${email}: ${catcher.mailsTo(email).length} arrived`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return catcher.mailsTo(email);
  }

  test('declining changes nothing: not a member, and the organization no longer lists it', async () => {
    const { org, owner, person } = await setting();
    const invited = await call(owner.token, 'POST', MEMBERS, { email: person.email, role: 'member' });
    const id = invited.body.data.invitation.id as string;
    const membersBefore = await membersOf(org.id);
    const declined = await call(person.token, 'POST', `${INVITATIONS}/${id}/decline`);
    assert.equal(declined.status, 200, declined.text);
    assert.equal(declined.body.data.status, 'declined');
    assert.deepEqual(await membersOf(org.id), membersBefore);
    assert.deepEqual(await invitationRows(owner.token), []);
    assert.deepEqual(await mine(person.token), []);
    assertRefusedA(
      await call(person.token, 'POST', `${INVITATIONS}/${id}/accept`),
      409,
      'INVITATION_ANSWERED',
    );
    assert.deepEqual(await membersOf(org.id), membersBefore, 'accepting after declining changed nothing');
    // The organization may ask again: a new invitation, which they may accept.
    const asked = await call(owner.token, 'POST', MEMBERS, { email: person.email, role: 'member' });
    assert.notEqual(asked.body.data.invitation.id, id);
    const accepted = await call(
      person.token,
      'POST',
      `${INVITATIONS}/${asked.body.data.invitation.id}/accept`,
    );
    assert.equal(accepted.status, 200, accepted.text);
    assert.ok((await membersOf(org.id)).some((m) => m.user_id === person.id && m.role === 'member'));
  });

  test('inviting again refreshes the one invitation: new role, 7 more days, mailed again', async () => {
    const { org, owner, person } = await setting();
    const first = await call(owner.token, 'POST', MEMBERS, { email: person.email, role: 'member' });
    await mailsTo(person.email, 1);
    await advance(t, HOUR);
    const second = await call(owner.token, 'POST', MEMBERS, {
      email: person.email.toUpperCase(),
      role: 'admin',
    });
    assert.equal(second.status, 201, second.text);
    assert.equal(second.body.data.invitation.id, first.body.data.invitation.id, 'the same invitation');
    // Seven days from the second invitation: an hour (and the real time the test took) later than the first.
    const moved =
      Date.parse(second.body.data.invitation.expiresAt) - Date.parse(first.body.data.invitation.expiresAt);
    assert.ok(moved >= HOUR * 1000 && moved < (HOUR + 60) * 1000, `expiry moved ${moved} ms`);
    const rows = await invitationRows(owner.token);
    assert.deepEqual(
      rows.map((m) => [m.invitation.id, m.role, m.status]),
      [[first.body.data.invitation.id, 'admin', 'invited']],
    );
    const mails = await mailsTo(person.email, 2);
    assert.match(textOf(mails[1]!), /to join Inviting Co as admin/);
    const token = await signIn(t, person);
    assert.deepEqual(
      (await mine(token)).map((i) => [i.id, i.role]),
      [[first.body.data.invitation.id, 'admin']],
    );
    await call(token, 'POST', `${INVITATIONS}/${first.body.data.invitation.id}/accept`);
    assert.deepEqual(
      (await membersOf(org.id)).find((m) => m.user_id === person.id),
      { user_id: person.id, role: 'admin' },
    );
  });

  test('revoking: the invitation leaves the list and cannot be accepted; only owners and admins revoke', async () => {
    const { owner, person } = await setting();
    const invited = await call(owner.token, 'POST', MEMBERS, { email: person.email, role: 'member' });
    const id = invited.body.data.invitation.id as string;
    const other = await setting();
    assertRefusedA(await call(other.owner.token, 'DELETE', `${MEMBERS}/invitations/${id}`), 404, undefined);
    assert.equal(
      (await invitationRows(owner.token)).length,
      1,
      "another organization's owner changed nothing",
    );

    const revoked = await call(owner.token, 'DELETE', `${MEMBERS}/invitations/${id}`);
    assert.equal(revoked.status, 200, revoked.text);
    assert.deepEqual(revoked.body.data, { id, revoked: true });
    assert.deepEqual(await invitationRows(owner.token), []);
    assert.deepEqual(await mine(person.token), []);
    assert.equal((await call(person.token, 'GET', '/v2/portal/auth/me')).body.data.pendingInvitations, 0);
    assertRefusedA(await call(person.token, 'POST', `${INVITATIONS}/${id}/accept`), 404, undefined);
    assertRefusedA(await call(owner.token, 'DELETE', `${MEMBERS}/invitations/${id}`), 404, undefined);
  });

  test("revoking a new person's invitation voids the link in their mail", async () => {
    const { org, owner } = await setting();
    const email = uniqueEmail('revoked');
    const invited = await call(owner.token, 'POST', MEMBERS, { email, role: 'member' });
    const link = tokenIn(await catcher.waitFor(email));
    await call(owner.token, 'DELETE', `${MEMBERS}/invitations/${invited.body.data.invitation.id}`);
    const confirmed = await t.request('POST', '/v2/portal/auth/password-reset/confirm', {
      body: { token: link, newPassword: 'my own password 1' },
    });
    assertRefusedA(confirmed, 400, undefined);
    assert.equal((await login(t, { email, password: 'my own password 1' })).status, 401);
    assert.equal((await membersOf(org.id)).length, 1, 'only the owner');
  });

  test('an invitation not answered in 7 days is refused with 410 and may be renewed', async () => {
    const { org, owner, person } = await setting();
    const invited = await call(owner.token, 'POST', MEMBERS, { email: person.email, role: 'member' });
    const id = invited.body.data.invitation.id as string;
    await advance(t, 7 * DAY + 1);
    const ownerToken = await signIn(t, owner);
    const personToken = await signIn(t, person);
    assert.deepEqual(
      (await invitationRows(ownerToken)).map((m) => [m.invitation.id, m.status]),
      [[id, 'expired']],
    );
    assert.deepEqual(
      (await call(ownerToken, 'GET', `${MEMBERS}/invitations`)).body.data.map((i: any) => i.status),
      ['expired'],
    );
    assert.deepEqual(await mine(personToken), []);
    assert.equal((await call(personToken, 'GET', '/v2/portal/auth/me')).body.data.pendingInvitations, 0);
    for (const answer of ['accept', 'decline']) {
      assertRefusedA(
        await call(personToken, 'POST', `${INVITATIONS}/${id}/${answer}`),
        410,
        'INVITATION_EXPIRED',
      );
    }
    assert.ok(!(await membersOf(org.id)).some((m) => m.user_id === person.id));

    const renewed = await call(ownerToken, 'POST', MEMBERS, { email: person.email, role: 'member' });
    assert.equal(renewed.body.data.invitation.id, id);
    assert.equal(renewed.body.data.status, 'invited');
    const accepted = await call(personToken, 'POST', `${INVITATIONS}/${id}/accept`);
    assert.equal(accepted.status, 200, accepted.text);
    assert.ok((await membersOf(org.id)).some((m) => m.user_id === person.id));
  });

  test('an account with no organization left answers by the link: choosing a password accepts', async () => {
    const { org, owner } = await setting();
    const removed = await createUser(t);
    await t.ctx.db.query('DELETE FROM memberships WHERE user_id = $1', [removed.id]);
    const invited = await call(owner.token, 'POST', MEMBERS, { email: removed.email, role: 'member' });
    assert.equal(invited.body.data.status, 'invited');
    const mail = await catcher.waitFor(removed.email);
    assert.match(textOf(mail), /Choosing it accepts the invitation/);
    const confirmed = await t.request('POST', '/v2/portal/auth/password-reset/confirm', {
      body: { token: tokenIn(mail), newPassword: 'a fresh password 2' },
    });
    assert.equal(confirmed.status, 200, confirmed.text);
    const session = await login(t, { email: removed.email, password: 'a fresh password 2' });
    assert.equal(session.status, 200, session.text);
    assert.equal(session.body.data.organizationId, org.id);
    assert.equal((await login(t, { email: removed.email, password: PASSWORD })).status, 401);
  });

  test('answering needs a session; unknown ids are 404; a suspended organization may still answer', async () => {
    const { owner, person } = await setting();
    assertRefusedA(await t.request('GET', INVITATIONS), 401, 'AUTH_REQUIRED');
    assertRefusedA(await call(person.token, 'POST', `${INVITATIONS}/inv_nothing/accept`), 404, undefined);
    const invited = await call(owner.token, 'POST', MEMBERS, { email: person.email, role: 'member' });
    assertRefusedA(
      await t.request('POST', `${INVITATIONS}/${invited.body.data.invitation.id}/accept`),
      401,
      'AUTH_REQUIRED',
    );
    // The person's own organization is suspended: accepting another is their way out.
    const own = (await call(person.token, 'GET', '/v2/portal/auth/me')).body.data.organization.id;
    await t.admin('PATCH', `/organizations/${own}`, { suspended: true });
    const accepted = await call(
      person.token,
      'POST',
      `${INVITATIONS}/${invited.body.data.invitation.id}/accept`,
    );
    assert.equal(accepted.status, 200, accepted.text);
  });
});
