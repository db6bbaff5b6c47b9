// Two-factor authentication (spec "Session" table: challenge pending -> active; "Session rules" 5-6;
// CONTRACT section 4): set-up and enable, the login challenge, recovery codes, refusing a used time-step,
// step-up with the reusable guard, disabling, and the 10-per-15-minutes verification limit.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { App } from '../src/app.ts';
import { currentSession } from '../src/modules/identity/index.ts';
import { mountInterface } from '../src/platform/http/interfaces.ts';
import type { Runtime } from '../src/runtime.ts';
import { isShapeA, type Response, startTestApp, type TestApp } from './helpers/app.ts';
import {
  advance,
  alignClock,
  createUser,
  enableTwoFactor,
  login,
  PASSWORD,
  parseSetCookies,
  signIn,
  type TestUser,
  totpCode,
} from './helpers/portal.ts';

const AUTH = '/v2/portal/auth';

function assertRefused(res: Response, status: number, code: string | undefined) {
  assert.equal(res.status, status, res.text);
  assert.ok(isShapeA(res.body), `not Shape A: ${res.text}`);
  assert.equal(res.body.code, code, res.text);
}

/** A sensitive action and a managers-only action, declared the way API keys and webhooks declare theirs. */
function sensitiveRoutes(app: App, ctx: Runtime) {
  return mountInterface(app, { ...ctx.interfaces.portal, prefix: '/v2/portal/test' }, [
    (scope) => {
      scope.post('/sensitive', { config: { role: 'manager', stepUp: true } }, async (req) => ({
        success: true,
        data: { userId: currentSession(req).userId },
      }));
      scope.get('/managers-only', { config: { role: 'manager' } }, async () => ({
        success: true,
      }));
      scope.get('/anyone', async (req) => ({ success: true, data: { role: currentSession(req).role } }));
    },
  ]);
}

async function nextCode(t: TestApp, secret: string): Promise<string> {
  await advance(t, 30);
  return totpCode(t, secret);
}

async function challenge(t: TestApp, user: TestUser): Promise<string> {
  const res = await login(t, { email: user.email, password: PASSWORD });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.data.requiresTwoFactor, true, res.text);
  return res.body.data.tempToken;
}

async function userWithTwoFactor(t: TestApp, role: 'owner' | 'admin' | 'member' = 'owner') {
  const user = await createUser(t, { role });
  const token = await signIn(t, user);
  const { secret, recoveryCodes } = await enableTwoFactor(t, token);
  return { user, token, secret, recoveryCodes };
}

describe('two-factor set-up and login challenge', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true }, extend: sensitiveRoutes });
  });
  after(() => t.close());

  test('setup gives a secret and otpauth URL; the secret is stored encrypted; enable needs a right code', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    const setup = await t.request('POST', `${AUTH}/2fa/setup`, { token });
    assert.equal(setup.status, 200, setup.text);
    const { secret, otpauthUrl } = setup.body.data;
    assert.match(secret, /^[A-Z2-7]{32}$/);
    assert.ok(otpauthUrl.startsWith('otpauth://totp/'), otpauthUrl);
    assert.ok(otpauthUrl.includes(`secret=${secret}`), otpauthUrl);
    assert.ok(otpauthUrl.includes('issuer=Commsplatform'), otpauthUrl);
    const [row] = await t.ctx.db.query<{ secret_sealed: string }>(
      'SELECT secret_sealed FROM user_two_factor WHERE user_id = $1',
      [user.id],
    );
    assert.ok(row!.secret_sealed.startsWith('v1.'));
    assert.ok(!row!.secret_sealed.includes(secret), 'secret not stored in the clear');

    const wrong = await t.request('POST', `${AUTH}/2fa/enable`, {
      token,
      body: { code: '000000', password: PASSWORD },
    });
    assertRefused(wrong, 400, undefined);
    // Not enabled: login still gives a session directly.
    assert.ok((await login(t, { email: user.email, password: PASSWORD })).body.data.token);

    const enabled = await t.request('POST', `${AUTH}/2fa/enable`, {
      token,
      body: { code: totpCode(t, secret), password: PASSWORD },
    });
    assert.equal(enabled.status, 200, enabled.text);
    const codes = enabled.body.data.recoveryCodes;
    assert.equal(codes.length, 10);
    assert.equal(new Set(codes).size, 10);
    const stored = await t.ctx.db.query<{ code_hash: string }>(
      'SELECT code_hash FROM recovery_codes WHERE user_id = $1',
      [user.id],
    );
    assert.equal(stored.length, 10);
    assert.ok(
      stored.every((r) => !codes.includes(r.code_hash)),
      'recovery codes stored hashed',
    );
    const me = await t.request('GET', `${AUTH}/me`, { token });
    assert.equal(me.body.data.user.twoFactorEnabled, true);

    await advance(t, 30);
    const again = await t.request('POST', `${AUTH}/2fa/setup`, { token });
    assertRefused(again, 409, undefined);
  });

  test('with 2FA on, login answers a challenge with a temporary token and no cookie; the code completes it', async () => {
    const { user, secret } = await userWithTwoFactor(t);
    const res = await login(t, { email: user.email, password: PASSWORD });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body.data).sort(), ['expiresAt', 'requiresTwoFactor', 'tempToken']);
    assert.equal(res.body.success, true);
    assert.equal(res.body.data.requiresTwoFactor, true);
    assert.equal(res.headers.getSetCookie().length, 0, 'no cookie for a challenge');
    const tempToken = res.body.data.tempToken;
    // The temporary token is not a session.
    assertRefused(await t.request('GET', `${AUTH}/me`, { token: tempToken }), 401, 'TOKEN_INVALID');

    const verified = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken, code: await nextCode(t, secret) },
    });
    assert.equal(verified.status, 200, verified.text);
    assert.equal(verified.body.success, true);
    assert.equal(verified.body.data.user.id, user.id);
    assert.equal(verified.body.data.user.twoFactorEnabled, true);
    assert.equal(verified.body.data.requiresOrgSelection, false);
    const [cookie] = parseSetCookies(verified);
    assert.equal(cookie!.name, 'portal_token');
    assert.equal(cookie!.value, verified.body.data.token);
    assert.equal(cookie!.attributes.httponly, true);
    assert.equal((await t.request('GET', `${AUTH}/me`, { token: verified.body.data.token })).status, 200);

    // A challenge is used once.
    const reused = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken, code: await nextCode(t, secret) },
    });
    assertRefused(reused, 401, 'TOKEN_INVALID');
  });

  test('remember survives the challenge: the session after login-verify lasts 7 days', async () => {
    const { user, secret } = await userWithTwoFactor(t);
    const res = await login(t, { email: user.email, password: PASSWORD, remember: true });
    const verified = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken: res.body.data.tempToken, code: await nextCode(t, secret) },
    });
    assert.equal(verified.status, 200, verified.text);
    assert.equal(parseSetCookies(verified)[0]!.attributes['max-age'], String(7 * 86400));
  });

  test('a wrong code is a 401 without code and leaves the challenge usable', async () => {
    const { user, secret } = await userWithTwoFactor(t);
    const tempToken = await challenge(t, user);
    const wrong = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken, code: '123456' },
    });
    assertRefused(wrong, 401, undefined);
    assert.equal(wrong.headers.getSetCookie().length, 0);
    const right = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken, code: await nextCode(t, secret) },
    });
    assert.equal(right.status, 200, right.text);
  });

  test('the temporary token lasts 5 minutes', async () => {
    const { user, secret } = await userWithTwoFactor(t);
    const tempToken = await challenge(t, user);
    await advance(t, 5 * 60 + 1);
    const late = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken, code: totpCode(t, secret) },
    });
    assertRefused(late, 401, 'SESSION_EXPIRED');
    assertRefused(
      await t.request('POST', `${AUTH}/2fa/login-verify`, {
        body: { tempToken: 'tfa_unknown', code: '123456' },
      }),
      401,
      'TOKEN_INVALID',
    );
  });

  test('a TOTP time-step is accepted once', async () => {
    const { user, secret } = await userWithTwoFactor(t);
    const code = await nextCode(t, secret);
    const first = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken: await challenge(t, user), code },
    });
    assert.equal(first.status, 200, first.text);
    const tempToken = await challenge(t, user);
    const replay = await t.request('POST', `${AUTH}/2fa/login-verify`, { body: { tempToken, code } });
    assertRefused(replay, 401, undefined);
    // And on step-up verification too.
    const replayVerify = await t.request('POST', `${AUTH}/2fa/verify`, {
      token: first.body.data.token,
      body: { code },
    });
    assertRefused(replayVerify, 400, undefined);
    const next = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken, code: await nextCode(t, secret) },
    });
    assert.equal(next.status, 200, next.text);
  });

  test('a recovery code is accepted once, wherever a TOTP code is', async () => {
    const { user, recoveryCodes } = await userWithTwoFactor(t);
    const [first, second] = recoveryCodes;
    const signedIn = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken: await challenge(t, user), code: first },
    });
    assert.equal(signedIn.status, 200, signedIn.text);
    const again = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken: await challenge(t, user), code: first },
    });
    assertRefused(again, 401, undefined);
    // Typed back in upper case without the dash, a recovery code still counts, once, for step-up too.
    const token = signedIn.body.data.token;
    const typed = second!.toUpperCase().replace('-', '');
    assert.equal(
      (await t.request('POST', `${AUTH}/2fa/verify`, { token, body: { code: typed } })).status,
      200,
    );
    assertRefused(
      await t.request('POST', `${AUTH}/2fa/verify`, { token, body: { code: second } }),
      400,
      undefined,
    );
    const [left] = await t.ctx.db.query<{ count: number }>(
      'SELECT count(*)::int AS count FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL',
      [user.id],
    );
    assert.equal(left!.count, 8);
  });
});

describe('step-up, roles and disabling two-factor', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true }, extend: sensitiveRoutes });
  });
  after(() => t.close());

  test('a sensitive action needs verification within 10 minutes: 403 MFA_STEP_UP_REQUIRED, then OK after verify', async () => {
    const { user, secret } = await userWithTwoFactor(t);
    const verified = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken: await challenge(t, user), code: await nextCode(t, secret) },
    });
    const token = verified.body.data.token;
    // Signing in with the second factor is itself a fresh verification.
    assert.equal((await t.request('POST', '/v2/portal/test/sensitive', { token })).status, 200);
    await advance(t, 10 * 60);
    assertRefused(
      await t.request('POST', '/v2/portal/test/sensitive', { token }),
      403,
      'MFA_STEP_UP_REQUIRED',
    );

    const wrong = await t.request('POST', `${AUTH}/2fa/verify`, { token, body: { code: '000000' } });
    assertRefused(wrong, 400, undefined);
    assertRefused(
      await t.request('POST', '/v2/portal/test/sensitive', { token }),
      403,
      'MFA_STEP_UP_REQUIRED',
    );

    const ok = await t.request('POST', `${AUTH}/2fa/verify`, {
      token,
      body: { code: await nextCode(t, secret) },
    });
    assert.equal(ok.status, 200, ok.text);
    const until = new Date(ok.body.data.verifiedUntil).getTime() - t.ctx.clock.nowMs();
    assert.ok(Math.abs(until - 600_000) < 5_000, `verified for ${until} ms`);
    assert.equal((await t.request('POST', '/v2/portal/test/sensitive', { token })).status, 200);
    await advance(t, 10 * 60);
    assertRefused(
      await t.request('POST', '/v2/portal/test/sensitive', { token }),
      403,
      'MFA_STEP_UP_REQUIRED',
    );
  });

  test('a user without 2FA is not asked to step up; /2fa/verify tells them 2FA is off', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    assert.equal((await t.request('POST', '/v2/portal/test/sensitive', { token })).status, 200);
    assertRefused(
      await t.request('POST', `${AUTH}/2fa/verify`, { token, body: { code: '123456' } }),
      400,
      undefined,
    );
  });

  test('requireRole: member may read, only owner and admin may manage (403 FORBIDDEN)', async () => {
    const member = await signIn(t, await createUser(t, { role: 'member' }));
    const admin = await signIn(t, await createUser(t, { role: 'admin' }));
    assertRefused(
      await t.request('GET', '/v2/portal/test/managers-only', { token: member }),
      403,
      'FORBIDDEN',
    );
    assertRefused(await t.request('POST', '/v2/portal/test/sensitive', { token: member }), 403, 'FORBIDDEN');
    assert.equal(
      (await t.request('GET', '/v2/portal/test/anyone', { token: member })).body.data.role,
      'member',
    );
    assert.equal((await t.request('GET', '/v2/portal/test/managers-only', { token: admin })).status, 200);
    assertRefused(await t.request('GET', '/v2/portal/test/anyone'), 401, 'AUTH_REQUIRED');
  });

  test('disabling 2FA needs step-up and a code; afterwards login gives a session directly', async () => {
    const { user, token, secret } = await userWithTwoFactor(t);
    // Enabling counted as a verification; let it go stale.
    await advance(t, 10 * 60);
    const stale = await t.request('POST', `${AUTH}/2fa/disable`, {
      token,
      body: { code: totpCode(t, secret) },
    });
    assertRefused(stale, 403, 'MFA_STEP_UP_REQUIRED');
    assert.equal(await t.ctx.twoFactor.isEnabled(user.id), true, 'nothing changed');

    await t.request('POST', `${AUTH}/2fa/verify`, { token, body: { code: await nextCode(t, secret) } });
    const wrong = await t.request('POST', `${AUTH}/2fa/disable`, { token, body: { code: '000000' } });
    assertRefused(wrong, 400, undefined);
    assert.equal(await t.ctx.twoFactor.isEnabled(user.id), true, 'nothing changed');

    const off = await t.request('POST', `${AUTH}/2fa/disable`, {
      token,
      body: { code: await nextCode(t, secret) },
    });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.data.twoFactorEnabled, false);
    const res = await login(t, { email: user.email, password: PASSWORD });
    assert.ok(res.body.data.token, res.text);
    const codes = await t.ctx.db.query('SELECT 1 FROM recovery_codes WHERE user_id = $1', [user.id]);
    assert.equal(codes.length, 0);
  });
});

describe('two-factor verification limit', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true }, extend: sensitiveRoutes });
  });
  after(() => t.close());

  test('10 verifications per 15 minutes per user; the 11th is refused without looking at the code', async () => {
    const { user, token, secret } = await userWithTwoFactor(t);
    // Let the verification from enabling go stale and its attempt leave the (sliding) 15-minute window, then
    // start at the beginning of a window.
    await advance(t, 15 * 60);
    await alignClock(t, 15 * 60);
    for (let i = 0; i < 10; i++) {
      const res = await t.request('POST', `${AUTH}/2fa/verify`, { token, body: { code: '000000' } });
      assert.equal(res.status, 400, `attempt ${i + 1}: ${res.text}`);
    }
    const blocked = await t.request('POST', `${AUTH}/2fa/verify`, {
      token,
      body: { code: totpCode(t, secret) },
    });
    assertRefused(blocked, 429, undefined);
    assert.equal(blocked.headers.get('ratelimit-limit'), '10');
    assert.equal(blocked.headers.get('ratelimit-remaining'), '0');
    const reset = Number(blocked.headers.get('ratelimit-reset'));
    assert.ok(reset > 0 && reset <= 900, `reset ${reset}`);
    // The right code was not consumed and the session not verified.
    assertRefused(
      await t.request('POST', '/v2/portal/test/sensitive', { token }),
      403,
      'MFA_STEP_UP_REQUIRED',
    );
    // The login challenge shares the user's budget.
    const tempToken = await challenge(t, user);
    assertRefused(
      await t.request('POST', `${AUTH}/2fa/login-verify`, { body: { tempToken, code: totpCode(t, secret) } }),
      429,
      undefined,
    );
    await advance(t, reset);
    const ok = await t.request('POST', `${AUTH}/2fa/verify`, { token, body: { code: totpCode(t, secret) } });
    assert.equal(ok.status, 200, ok.text);
  });
});
