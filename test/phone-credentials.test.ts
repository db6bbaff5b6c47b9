// The console phone's credentials (CONTRACT section 16, issue 37): `POST /v2/portal/phone/credentials` gives a
// signed-in member short-lived SIP digest credentials for their own extension. A phone made of a UDP socket
// registers with them on the real SIP listener (the address of record is the extension's, the digest username
// the credential's) and is authenticated on INVITE; sign-out, a revoked session, expiry and an extension taken
// from the member each end them (and the bindings made with them); a member without an extension gets 404
// NO_EXTENSION; another organization's member can neither get nor use them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertRefusedA, createOrganization, type TestApp } from './helpers/app.ts';
import type { Sender } from './helpers/messaging.ts';
import { advance, createUser, signIn, type TestUser } from './helpers/portal.ts';
import { type SipExtension, sipOffice } from './helpers/sip-office.ts';
import { UdpPhone } from './helpers/udp-phone.ts';

describe('phone credentials', () => {
  let t: TestApp;
  let port: number;
  let office: Sender;
  let create: (extension: string, fields?: Record<string, unknown>) => Promise<SipExtension>;
  const phones: UdpPhone[] = [];

  before(async () => {
    ({ t, port, office, create } = await sipOffice());
  });
  after(async () => {
    for (const each of phones) each.close();
    t.ctx.sipListener.stop();
    await t.close();
  });

  /** A member of the office with an extension of their own (digits `digits`), signed in. */
  async function memberWithExtension(digits: string, organizationId = office.id) {
    const user = await createUser(t, { role: 'member', organizationIds: [organizationId] });
    const extension = await create(digits, { userId: user.id });
    return { user, extension, token: await signIn(t, user) };
  }
  const issue = (token: string) => t.request('POST', '/v2/portal/phone/credentials', { token });

  /** A phone registering `credentials`: the challenge, then the answer; returns the final status. */
  async function register(credentials: { username: string; password: string; sipUri: string }) {
    const aorUser = /^sip:([^@]+)@/.exec(credentials.sipUri)![1]!;
    const phone = await UdpPhone.open(port, credentials.username, credentials.password, aorUser);
    phones.push(phone);
    const challenge = await phone.register();
    assert.equal(challenge.status, 401);
    const answer = await phone.register(phone.authorization('REGISTER', 'sip:localhost', challenge, 1));
    return { status: answer.status, phone };
  }
  const bindings = (extensionId: string) =>
    t.ctx.db.query<{ credential_id: string | null; expires_at: Date }>(
      'SELECT credential_id, expires_at FROM sip_registrations WHERE extension_id = $1',
      [extensionId],
    );

  test('issued for the member’s own extension, registered and authenticated with over SIP', async () => {
    const { extension, token } = await memberWithExtension('201');
    const res = await issue(token);
    assert.equal(res.status, 200, res.text);
    const data = res.body.data;
    assert.equal(data.extensionId, extension.id);
    assert.equal(data.extension, '201');
    assert.equal(data.sipUri, `sip:${extension.sip.username}@localhost`);
    assert.notEqual(data.username, extension.sip.username, 'a username of its own');
    assert.ok(data.password.length >= 24);
    assert.match(data.wsUrl, /^ws:\/\/.+\/sip$/);
    const lifetime = Date.parse(data.expiresAt) - t.ctx.clock.nowMs();
    assert.ok(lifetime > 3500_000 && lifetime <= 3600_000, `an hour: ${lifetime} ms`);

    // At rest the password is sealed, not stored as given.
    const [row] = await t.ctx.db.query<{ password_sealed: string }>(
      'SELECT password_sealed FROM phone_credentials WHERE username = $1',
      [data.username],
    );
    assert.ok(row && !row.password_sealed.includes(data.password));

    const { status, phone } = await register(data);
    assert.equal(status, 200);
    const [binding] = await bindings(extension.id);
    assert.ok(binding?.credential_id?.startsWith('phc_'), 'the binding names its credential');
    assert.ok(binding.expires_at.getTime() <= Date.parse(data.expiresAt), 'and lives no longer than it');
    // The registrar rings it as one of the extension's phones.
    assert.equal((await t.ctx.registrar.contacts(extension.id)).length, 1);

    // INVITE: authenticated with the same credential (404: extension 999 does not exist, so it got past auth).
    const challenge = await phone.invite('999');
    assert.equal(challenge.status, 401);
    assert.equal(
      (await phone.invite('999', phone.authorization('INVITE', 'sip:999@localhost', challenge, 1))).status,
      404,
    );

    // The extension's own password works beside it; a second issue gives new credentials, never the first again.
    assert.equal((await register({ ...extension.sip, sipUri: data.sipUri })).status, 200);
    const again = (await issue(token)).body.data;
    assert.notEqual(again.username, data.username);
    assert.notEqual(again.password, data.password);
    assert.equal((await register(data)).status, 200, 'the first still works until it expires');
    assert.equal(
      (await register({ ...data, password: again.password })).status,
      403,
      'passwords are per credential',
    );
  });

  test('sign-out ends them and the browser’s binding with them', async () => {
    const { extension, token } = await memberWithExtension('202');
    const credentials = (await issue(token)).body.data;
    assert.equal((await register(credentials)).status, 200);
    assert.equal((await bindings(extension.id)).length, 1);
    assert.equal((await t.request('POST', '/v2/portal/auth/logout', { token })).status, 200);
    assert.equal((await bindings(extension.id)).length, 0, 'the binding went with the session');
    assert.equal((await register(credentials)).status, 403);
  });

  test('a revoked session (sign-out everywhere) ends them: refused, and its binding no longer rung', async () => {
    const { user, extension, token } = await memberWithExtension('203');
    const credentials = (await issue(token)).body.data;
    assert.equal((await register(credentials)).status, 200);
    const other = await signIn(t, user);
    assert.equal((await t.request('POST', '/v2/portal/auth/logout-all', { token: other })).status, 200);
    assert.equal((await register(credentials)).status, 403);
    assert.deepEqual(await t.ctx.registrar.contacts(extension.id), []);
  });

  test('they expire: refused after their hour, and the clean-up removes them', async () => {
    const { token } = await memberWithExtension('204');
    const credentials = (await issue(token)).body.data;
    await advance(t, 3601);
    assert.equal((await register(credentials)).status, 403);
    await t.ctx.retention.run();
    const rows = await t.ctx.db.query('SELECT 1 FROM phone_credentials WHERE username = $1', [
      credentials.username,
    ]);
    assert.equal(rows.length, 0);
  });

  test('an extension taken from the member ends them', async () => {
    const { extension, token } = await memberWithExtension('205');
    const credentials = (await issue(token)).body.data;
    const patch = await t.request('PATCH', `/api/v2/extensions/${extension.id}`, {
      apiKey: office.key,
      body: { userId: null },
    });
    assert.equal(patch.status, 200, patch.text);
    assert.equal((await register(credentials)).status, 403);
    assertRefusedA(await issue(token), 404, 'NO_EXTENSION');
  });

  test('a member without an extension: 404 NO_EXTENSION saying who assigns one', async () => {
    const user: TestUser = await createUser(t, { role: 'member', organizationIds: [office.id] });
    // Someone else's extension is not theirs.
    await create('206', {
      userId: (await createUser(t, { role: 'member', organizationIds: [office.id] })).id,
    });
    const res = await issue(await signIn(t, user));
    assertRefusedA(res, 404, 'NO_EXTENSION');
    assert.match(res.body.message, /owner or admin/);
    const rows = await t.ctx.db.query('SELECT 1 FROM phone_credentials WHERE user_id = $1', [user.id]);
    assert.equal(rows.length, 0, 'nothing issued');
    assertRefusedA(await t.request('POST', '/v2/portal/phone/credentials'), 401, 'AUTH_REQUIRED');
  });

  test('another organization’s member can neither get nor use them', async () => {
    const mine = await memberWithExtension('207');
    // A member of another organization on this server.
    const otherOrg = await createOrganization(t, {
      plan: 'enterprise',
      subscriptionState: 'paid',
      cardVerified: true,
    });
    const stranger = await createUser(t, { role: 'owner', organizationIds: [otherOrg.id] });
    const strangerToken = await signIn(t, stranger);
    // Not theirs to get: without an extension in their organization, nothing (not ours).
    assertRefusedA(await issue(strangerToken), 404, 'NO_EXTENSION');
    const ext = await t.request('POST', '/v2/portal/extensions', {
      token: strangerToken,
      body: { extension: '207', name: 'Stranger', userId: stranger.id },
    });
    assert.equal(ext.status, 201, ext.text);
    const theirs = (await issue(strangerToken)).body.data;
    assert.equal(theirs.extensionId, ext.body.data.id, 'their own extension, never ours');
    // Not theirs to use: registering our extension's address of record with their credential is refused.
    const ours = (await issue(mine.token)).body.data;
    assert.equal((await register({ ...theirs, sipUri: ours.sipUri })).status, 403);
    assert.deepEqual(await t.ctx.registrar.contacts(mine.extension.id), []);
  });
});
