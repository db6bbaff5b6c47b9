// The operator API (CONTRACT section 3): provisioning organizations, users and numbers, its defaults, its
// refusals (each changing nothing), its token, and the whole tree answering 404 when ADMIN_TOKEN is unset.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verifyPassword } from '../src/platform/auth/passwords.ts';
import { ADMIN_TOKEN, createOrganization, isShapeA, startTestApp, type TestApp } from './helpers/app.ts';

describe('operator API', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  describe('authentication', () => {
    test('no token is 401 AUTH_REQUIRED in Shape A', async () => {
      const res = await t.request('POST', '/admin/v1/organizations', { body: { name: 'x' } });
      assert.equal(res.status, 401);
      assert.ok(isShapeA(res.body));
      assert.equal(res.body.code, 'AUTH_REQUIRED');
    });

    test('a wrong token is 401 and creates nothing', async () => {
      const before = await t.ctx.organizations.count();
      const res = await t.request('POST', '/admin/v1/organizations', {
        body: { name: 'x' },
        headers: { authorization: `Bearer ${ADMIN_TOKEN}x` },
      });
      assert.equal(res.status, 401);
      assert.equal(res.body.code, 'TOKEN_INVALID');
      assert.equal(await t.ctx.organizations.count(), before);
    });

    test('the token is only accepted as a Bearer token', async () => {
      const res = await t.request('POST', '/admin/v1/organizations', {
        body: { name: 'x' },
        headers: { authorization: ADMIN_TOKEN },
      });
      assert.equal(res.status, 401);
    });
  });

  describe('organizations', () => {
    test('created with the documented defaults', async () => {
      const res = await t.admin('POST', '/organizations', { name: 'Acme' });
      assert.equal(res.status, 201);
      const org = res.body.data;
      assert.match(org.id, /^org_/);
      assert.equal(org.name, 'Acme');
      assert.equal(org.plan, 'pro');
      assert.equal(org.subscriptionState, 'trial');
      assert.equal(org.cardVerified, false);
      assert.equal(org.region, 'us');
      assert.equal(org.monthlyAllowanceSegments, 1000);
      assert.equal(org.dailyLimitSegments, 5000);
      assert.equal(org.trialMessageLimit, 100);
      assert.ok(!Number.isNaN(Date.parse(org.createdAt)));
    });

    test('created with every field set', async () => {
      const fields = {
        name: 'Globex',
        plan: 'enterprise',
        subscriptionState: 'past_due',
        cardVerified: true,
        region: 'ca',
        monthlyAllowanceSegments: 20000,
        dailyLimitSegments: 900,
        trialMessageLimit: 5,
        createdAt: '2026-01-02T03:04:05.000Z',
      };
      const res = await t.admin('POST', '/organizations', fields);
      assert.equal(res.status, 201);
      for (const [key, value] of Object.entries(fields)) assert.deepEqual(res.body.data[key], value, key);
      const read = await t.admin('GET', `/organizations/${res.body.data.id}`);
      assert.equal(read.status, 200);
      assert.deepEqual(read.body.data, res.body.data);
    });

    test('invalid fields are a 400 naming each, and nothing is created', async () => {
      const before = await t.ctx.organizations.count();
      for (const body of [
        {},
        { name: '' },
        { name: 'x', plan: 'gold' },
        { name: 'x', subscriptionState: 'cancelled' },
        { name: 'x', region: 'mars' },
        { name: 'x', monthlyAllowanceSegments: -1 },
        { name: 'x', dailyLimitSegments: 1.5 },
        { name: 'x', cardVerified: 'yes' },
        { name: 'x', createdAt: 'last week' },
        { name: 'x', colour: 'blue' },
      ]) {
        const res = await t.admin('POST', '/organizations', body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.ok(isShapeA(res.body));
        assert.equal(res.body.code, undefined);
      }
      assert.equal(await t.ctx.organizations.count(), before);
    });

    test('PATCH changes only the given fields', async () => {
      const org = await createOrganization(t);
      const res = await t.admin('PATCH', `/organizations/${org.id}`, {
        plan: 'ultra',
        subscriptionState: 'scheduled_to_cancel',
        cardVerified: true,
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.plan, 'ultra');
      assert.equal(res.body.data.subscriptionState, 'scheduled_to_cancel');
      assert.equal(res.body.data.cardVerified, true);
      assert.equal(res.body.data.name, org.name);
      assert.equal(res.body.data.region, 'us');
    });

    test('PATCH of an unknown organization is 404; an empty or invalid PATCH is 400 and changes nothing', async () => {
      const missing = await t.admin('PATCH', '/organizations/org_nope', { plan: 'ultra' });
      assert.equal(missing.status, 404);
      assert.ok(isShapeA(missing.body));

      const org = await createOrganization(t);
      assert.equal((await t.admin('PATCH', `/organizations/${org.id}`, {})).status, 400);
      const bad = await t.admin('PATCH', `/organizations/${org.id}`, { plan: 'ultra', region: 'moon' });
      assert.equal(bad.status, 400);
      const read = await t.admin('GET', `/organizations/${org.id}`);
      assert.equal(read.body.data.plan, 'pro');
    });

    test('GET of an unknown organization is 404', async () => {
      const res = await t.admin('GET', '/organizations/org_unknown');
      assert.equal(res.status, 404);
    });
  });

  describe('users', () => {
    test('created with an argon2id password and memberships', async () => {
      const a = await createOrganization(t);
      const b = await createOrganization(t);
      const res = await t.admin('POST', '/users', {
        email: 'Jane@Example.com',
        password: 'correct horse battery',
        name: 'Jane',
        memberships: [
          { organizationId: a.id, role: 'owner' },
          { organizationId: b.id, role: 'member' },
        ],
      });
      assert.equal(res.status, 201);
      assert.deepEqual(Object.keys(res.body.data).sort(), ['email', 'id']);
      assert.match(res.body.data.id, /^usr_/);

      const user = await t.ctx.users.get(res.body.data.id);
      assert.match(user.passwordHash, /^\$argon2id\$/);
      assert.equal(await verifyPassword(user.passwordHash, 'correct horse battery'), true);
      assert.equal(await verifyPassword(user.passwordHash, 'wrong'), false);
      const memberships = await t.ctx.users.memberships(user.id);
      assert.deepEqual(
        memberships.map((m) => [m.organizationId, m.role]),
        [
          [a.id, 'owner'],
          [b.id, 'member'],
        ],
      );
    });

    test('a duplicate e-mail (any case) is 409 and creates nothing', async () => {
      const org = await createOrganization(t);
      const body = {
        email: 'dup@example.com',
        password: 'password-1',
        memberships: [{ organizationId: org.id, role: 'admin' }],
      };
      assert.equal((await t.admin('POST', '/users', body)).status, 201);
      const res = await t.admin('POST', '/users', { ...body, email: 'DUP@example.com' });
      assert.equal(res.status, 409);
      assert.ok(isShapeA(res.body));
    });

    test('an unknown organization in memberships is 404 and creates no user', async () => {
      const org = await createOrganization(t);
      const res = await t.admin('POST', '/users', {
        email: 'ghost@example.com',
        password: 'password-1',
        memberships: [
          { organizationId: org.id, role: 'owner' },
          { organizationId: 'org_missing', role: 'member' },
        ],
      });
      assert.equal(res.status, 404);
      assert.equal(await t.ctx.users.findByEmail('ghost@example.com'), undefined);
    });

    test('invalid user input is 400: bad e-mail, short password, unknown role, no memberships', async () => {
      const org = await createOrganization(t);
      const valid = {
        email: 'ok@example.com',
        password: 'password-1',
        memberships: [{ organizationId: org.id, role: 'owner' }],
      };
      for (const body of [
        { ...valid, email: 'not-an-email' },
        { ...valid, password: 'short' },
        { ...valid, memberships: [{ organizationId: org.id, role: 'superuser' }] },
        { ...valid, memberships: [] },
        { email: valid.email, password: valid.password },
      ]) {
        const res = await t.admin('POST', '/users', body);
        assert.equal(res.status, 400, JSON.stringify(body));
      }
      assert.equal(await t.ctx.users.findByEmail('ok@example.com'), undefined);
    });

    test('PATCH sets requirePasswordChange; unknown user is 404', async () => {
      const org = await createOrganization(t);
      const created = await t.admin('POST', '/users', {
        email: 'patch@example.com',
        password: 'password-1',
        memberships: [{ organizationId: org.id, role: 'member' }],
      });
      const res = await t.admin('PATCH', `/users/${created.body.data.id}`, { requirePasswordChange: true });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.requirePasswordChange, true);
      assert.equal(res.body.data.passwordHash, undefined);
      assert.equal((await t.admin('PATCH', '/users/usr_missing', { name: 'x' })).status, 404);
    });
  });

  describe('numbers', () => {
    test('the first number is the default sender, later ones are not', async () => {
      const org = await createOrganization(t);
      const first = await t.admin('POST', `/organizations/${org.id}/numbers`, {
        number: '+12025550101',
        type: 'local',
      });
      assert.equal(first.status, 201);
      assert.match(first.body.data.id, /^num_/);
      assert.equal(first.body.data.isDefault, true);
      const second = await t.admin('POST', `/organizations/${org.id}/numbers`, {
        number: '+18335550102',
        type: 'toll_free',
      });
      assert.equal(second.status, 201);
      assert.equal(second.body.data.isDefault, false);
      assert.equal(second.body.data.type, 'toll_free');
    });

    test('numbers are normalised to E.164', async () => {
      const org = await createOrganization(t);
      const res = await t.admin('POST', `/organizations/${org.id}/numbers`, {
        number: '+1 (416) 555-0199',
        type: 'ca_local',
      });
      assert.equal(res.status, 201);
      assert.equal(res.body.data.number, '+14165550199');
    });

    test('refusals: invalid number 400, bad type 400, number owned elsewhere 409, unknown organization 404', async () => {
      const org = await createOrganization(t);
      const other = await createOrganization(t);
      assert.equal(
        (await t.admin('POST', `/organizations/${org.id}/numbers`, { number: '12345', type: 'local' }))
          .status,
        400,
      );
      assert.equal(
        (
          await t.admin('POST', `/organizations/${org.id}/numbers`, {
            number: '+12025550111',
            type: 'mobile',
          })
        ).status,
        400,
      );
      assert.equal(
        (await t.admin('POST', `/organizations/${org.id}/numbers`, { number: '+12025550111', type: 'local' }))
          .status,
        201,
      );
      const taken = await t.admin('POST', `/organizations/${other.id}/numbers`, {
        number: '+12025550111',
        type: 'local',
      });
      assert.equal(taken.status, 409);
      assert.equal((await t.ctx.numbers.list(other.id)).length, 0);
      const missing = await t.admin('POST', '/organizations/org_missing/numbers', {
        number: '+12025550112',
        type: 'local',
      });
      assert.equal(missing.status, 404);
    });
  });
});

describe('operator API without ADMIN_TOKEN', () => {
  test('the whole /admin tree answers 404, even with a token', async () => {
    const t = await startTestApp({ config: { adminToken: undefined } });
    try {
      for (const [method, path] of [
        ['POST', '/admin/v1/organizations'],
        ['GET', '/admin/v1/organizations/org_x'],
        ['POST', '/admin/v1/test/clock'],
        ['POST', '/admin/v1/users'],
      ] as const) {
        const res = await t.request(method, path, {
          body: method === 'GET' ? undefined : { name: 'x' },
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        });
        assert.equal(res.status, 404, path);
        assert.ok(isShapeA(res.body));
      }
    } finally {
      await t.close();
    }
  });
});
