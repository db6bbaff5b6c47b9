// Turning two-factor on asks for the password (docs/auth.md, "Decisions beyond the contract"): a stolen
// session of a user without 2FA must not be able to turn it on with the thief's authenticator and lock the
// owner out, nor use the route to guess the password past the sign-in failure limit.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeA, type Response, startTestApp, type TestApp } from './helpers/app.ts';
import { createUser, login, PASSWORD, signIn, totpCode } from './helpers/portal.ts';

const AUTH = '/v2/portal/auth';

function assertRefused(res: Response, status: number, code: string | undefined) {
  assert.equal(res.status, status, res.text);
  assert.ok(isShapeA(res.body), `not Shape A: ${res.text}`);
  assert.equal(res.body.code, code, res.text);
}

describe('enabling two-factor needs the password', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('enable needs the password: missing or wrong is a 400, nothing changes, and no code is spent', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    const setup = await t.request('POST', `${AUTH}/2fa/setup`, { token });
    const { secret } = setup.body.data;
    const code = totpCode(t, secret);
    assertRefused(await t.request('POST', `${AUTH}/2fa/enable`, { token, body: { code } }), 400, undefined);
    assertRefused(
      await t.request('POST', `${AUTH}/2fa/enable`, { token, body: { code, password: '' } }),
      400,
      undefined,
    );
    const wrong = await t.request('POST', `${AUTH}/2fa/enable`, {
      token,
      body: { code, password: 'not the password' },
    });
    assertRefused(wrong, 400, undefined);
    assert.equal(await t.ctx.twoFactor.isEnabled(user.id), false, 'still off');
    const [row] = await t.ctx.db.query<{ last_used_step: string | null }>(
      'SELECT last_used_step FROM user_two_factor WHERE user_id = $1',
      [user.id],
    );
    assert.equal(row!.last_used_step, null, 'the code was not looked at');
    // The same code still works with the password.
    const enabled = await t.request('POST', `${AUTH}/2fa/enable`, {
      token,
      body: { code, password: PASSWORD },
    });
    assert.equal(enabled.status, 200, enabled.text);
    assert.equal(await t.ctx.twoFactor.isEnabled(user.id), true);
  });

  test('a stolen session cannot turn 2FA on by guessing: wrong passwords count against the sign-in limit', async () => {
    const user = await createUser(t);
    const stolen = await signIn(t, user);
    const { secret } = (await t.request('POST', `${AUTH}/2fa/setup`, { token: stolen })).body.data;
    for (let i = 0; i < 3; i++) {
      const res = await t.request('POST', `${AUTH}/2fa/enable`, {
        token: stolen,
        body: { code: totpCode(t, secret), password: `guess-${i}` },
      });
      assertRefused(res, 400, undefined);
    }
    // The fourth guess is refused before the password is checked, even the right one...
    const blocked = await t.request('POST', `${AUTH}/2fa/enable`, {
      token: stolen,
      body: { code: totpCode(t, secret), password: PASSWORD },
    });
    assertRefused(blocked, 429, undefined);
    assert.equal(blocked.headers.get('ratelimit-limit'), '3');
    assert.equal(await t.ctx.twoFactor.isEnabled(user.id), false);
    // ...and they are the e-mail's sign-in failures: login is blocked for 30 minutes too.
    const login429 = await login(t, { email: user.email, password: PASSWORD });
    assertRefused(login429, 429, undefined);
  });
});
