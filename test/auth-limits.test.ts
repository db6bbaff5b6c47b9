// Sliding windows for the sign-in and two-factor limits (spec "Limits", docs/auth.md): attempts spent just
// before a clock-aligned window boundary still count just after it, so no boundary gives a second budget.
// First the mechanism (platform/rate-limit.ts) on the in-memory counters and, with TEST_REDIS_URL, on Redis
// shared by two limiters; then the three limits over HTTP. The clock is moved, never slept on.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Clock } from '../src/platform/clock.ts';
import {
  type CounterStore,
  MemoryCounterStore,
  RateLimiter,
  type RateLimitRule,
  RedisCounterStore,
} from '../src/platform/rate-limit.ts';
import { isShapeA, type Response, startTestApp, type TestApp } from './helpers/app.ts';
import {
  advance,
  createUser,
  enableTwoFactor,
  justBeforeBoundary,
  login,
  PASSWORD,
  signIn,
  totpCode,
  uniqueEmail,
} from './helpers/portal.ts';

const AUTH = '/v2/portal/auth';
const WINDOW = 30 * 60;

function assertTooMany(res: Response, limit: number) {
  assert.equal(res.status, 429, res.text);
  assert.ok(isShapeA(res.body), res.text);
  assert.equal(res.body.code, undefined, res.text);
  assert.equal(res.headers.get('ratelimit-limit'), String(limit));
  assert.equal(res.headers.get('ratelimit-remaining'), '0');
}

/** A test clock at `secondsBefore` seconds before a boundary of a fixed window of `windowSeconds`. */
function clockBeforeBoundary(windowSeconds: number, secondsBefore: number): Clock {
  const clock = new Clock(true);
  const windowMs = windowSeconds * 1000;
  clock.set(new Date((Math.floor(Date.now() / windowMs) + 2) * windowMs - secondsBefore * 1000));
  return clock;
}

/**
 * The mechanism's properties, for any counter store: `stores` makes two handles on one set of counters (two
 * instances); without it the suite is skipped.
 */
function slidingWindowTests(name: string, stores: (() => [CounterStore, CounterStore]) | undefined) {
  describe(`sliding windows on ${name}`, { skip: !stores && 'set TEST_REDIS_URL to run' }, () => {
    const rule = (): RateLimitRule => ({
      name: `test-sliding-${randomBytes(4).toString('hex')}`,
      limit: 3,
      windowSeconds: WINDOW,
      sliding: true,
    });
    let first: CounterStore;
    let second: CounterStore;
    before(async () => {
      [first, second] = stores!();
      await first.ready();
      await second.ready();
    });
    after(async () => {
      await first?.close();
      await second?.close();
    });

    test('a limit spent just before a fixed-window boundary still counts just after it', async () => {
      const clock = clockBeforeBoundary(WINDOW, 5);
      const limiter = new RateLimiter(first, clock);
      const r = rule();
      for (let i = 0; i < 3; i++) assert.equal((await limiter.consume(r, 'x')).allowed, true);
      clock.advance(10); // 5 seconds into the next fixed window
      const refused = await limiter.consume(r, 'x');
      assert.equal(refused.allowed, false);
      assert.equal(refused.remaining, 0);
      // It lifts when the three leave the window: within 30 minutes of them, not at the boundary.
      assert.ok(
        refused.resetSeconds > WINDOW - 120 && refused.resetSeconds <= WINDOW,
        `${refused.resetSeconds}`,
      );
      assert.equal((await limiter.peek(r, 'x')).allowed, false);
      // A fixed window would have given a new budget here: the same rule without `sliding` does.
      const fixed = { ...r, name: `${r.name}-fixed`, sliding: false };
      clock.advance(-10);
      for (let i = 0; i < 3; i++) await limiter.consume(fixed, 'x');
      clock.advance(10);
      assert.equal((await limiter.consume(fixed, 'x')).allowed, true);

      // Refused attempts are not counted, so waiting what RateLimit-Reset said is enough.
      clock.advance(refused.resetSeconds - 1);
      assert.equal((await limiter.consume(r, 'x')).allowed, false);
      clock.advance(1);
      const again = await limiter.consume(r, 'x');
      assert.equal(again.allowed, true);
      assert.equal(again.remaining, 2);
    });

    test('attempts spread over the window: one frees a place only when it is a window old', async () => {
      // 18 minutes before a boundary is also the start of a sub-window (30 minutes / 20 = 90 seconds).
      const clock = clockBeforeBoundary(WINDOW, 18 * 60);
      const limiter = new RateLimiter(first, clock);
      const r = rule();
      await limiter.consume(r, 'x'); // t = 0
      clock.advance(9 * 60);
      await limiter.consume(r, 'x'); // t = 9 min
      clock.advance(9 * 60);
      const third = await limiter.consume(r, 'x'); // t = 18 min, on the fixed boundary
      assert.equal(third.allowed, true);
      assert.equal(third.remaining, 0);
      assert.equal(third.resetSeconds, 12 * 60, 'the first attempt leaves in 12 minutes');
      const refused = await limiter.consume(r, 'x');
      assert.equal(refused.allowed, false);
      assert.equal(refused.resetSeconds, 12 * 60);
      clock.advance(12 * 60);
      assert.equal((await limiter.consume(r, 'x')).allowed, true);
      assert.equal((await limiter.consume(r, 'x')).allowed, false, 'the 9- and 18-minute ones still count');
    });

    test('reservations in parallel, from two instances: no more than the limit are allowed', async () => {
      const clock = clockBeforeBoundary(WINDOW, 5);
      const limiters = [new RateLimiter(first, clock), new RateLimiter(second, clock)];
      const r = rule();
      const reservations = await Promise.all(
        Array.from({ length: 12 }, (_, i) => limiters[i % 2]!.reserve(r, 'x')),
      );
      assert.equal(reservations.filter((one) => one.state.allowed).length, 3);
      // Refused ones were given back; the held ones still count after the boundary, on either instance.
      clock.advance(10);
      assert.equal((await limiters[1]!.peek(r, 'x')).remaining, 0);
      assert.equal((await limiters[0]!.consume(r, 'x')).allowed, false);
    });

    test('a release goes back to the sub-window the reservation was taken in', async () => {
      const clock = clockBeforeBoundary(WINDOW, 20 * 60);
      const limiter = new RateLimiter(first, clock);
      const r = rule();
      const early = await limiter.reserve(r, 'x');
      clock.advance(5 * 60); // a later sub-window
      await early.release();
      await early.release(); // only the first release gives back
      for (let i = 0; i < 3; i++) assert.equal((await limiter.consume(r, 'x')).allowed, true);
      assert.equal((await limiter.consume(r, 'x')).allowed, false);
      // When the early sub-window leaves the window, the three later ones must all still count: a refund
      // taken from the later sub-window would hand out a fourth place here.
      clock.advance(WINDOW - 5 * 60 + 1);
      assert.equal((await limiter.consume(r, 'x')).allowed, false);
    });
  });
}

slidingWindowTests('the in-process counters', () => {
  const shared = new MemoryCounterStore();
  return [shared, sharedView(shared)];
});

const redisUrl = process.env.TEST_REDIS_URL;
slidingWindowTests(
  'Redis, two connections',
  redisUrl ? () => [new RedisCounterStore(redisUrl), new RedisCounterStore(redisUrl)] : undefined,
);

/** A second handle on the same in-process counters whose close leaves them to the first. */
function sharedView(store: MemoryCounterStore): CounterStore {
  return {
    increment: (key, by, ttlMs) => store.increment(key, by, ttlMs),
    get: (key) => store.get(key),
    getMany: (keys) => store.getMany(keys),
    ready: async () => {},
    close: async () => {},
  };
}

describe('sign-in limits across a window boundary', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('3 password failures just before a boundary and more just after: only 3 are checked in 30 minutes', async () => {
    const user = await createUser(t);
    await justBeforeBoundary(t, 30 * 60, 20);
    for (let i = 0; i < 3; i++) {
      assert.equal((await login(t, { email: user.email, password: `before-${i}` })).status, 401);
    }
    await advance(t, 30); // 10 seconds into the next fixed window
    for (let i = 0; i < 3; i++) {
      assertTooMany(await login(t, { email: user.email, password: `after-${i}` }), 3);
    }
    const blocked = await login(t, { email: user.email, password: PASSWORD });
    assertTooMany(blocked, 3);
    const reset = Number(blocked.headers.get('ratelimit-reset'));
    assert.ok(reset > 25 * 60 && reset <= 30 * 60, `reset ${reset}`);
    // Half an hour after the failures, the right password works again.
    await advance(t, reset);
    assert.equal((await login(t, { email: user.email, password: PASSWORD })).status, 200);
  });

  test('a wrong current password on /password counts in the same sliding window', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    await justBeforeBoundary(t, 30 * 60, 20);
    for (let i = 0; i < 2; i++) {
      const res = await t.request('POST', `${AUTH}/password`, {
        token,
        body: { currentPassword: `wrong-${i}`, newPassword: 'a brand new password' },
      });
      assert.equal(res.status, 400, res.text);
    }
    await advance(t, 30);
    assert.equal((await login(t, { email: user.email, password: 'wrong-again' })).status, 401);
    assertTooMany(await login(t, { email: user.email, password: PASSWORD }), 3);
  });

  test('20 sign-ins from an address just before a boundary: the 21st just after is refused', async () => {
    const ip = `198.18.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;
    await justBeforeBoundary(t, 15 * 60, 20);
    for (let i = 0; i < 20; i++) {
      const res = await login(t, { email: uniqueEmail('probe'), password: 'guess' }, ip);
      assert.equal(res.status, 401, `attempt ${i + 1}: ${res.text}`);
    }
    await advance(t, 30);
    const blocked = await login(t, { email: uniqueEmail('probe'), password: 'guess' }, ip);
    assertTooMany(blocked, 20);
    const reset = Number(blocked.headers.get('ratelimit-reset'));
    assert.ok(reset > 10 * 60 && reset <= 15 * 60, `reset ${reset}`);
    await advance(t, reset);
    assert.equal((await login(t, { email: uniqueEmail('probe'), password: 'guess' }, ip)).status, 401);
  });
});

describe('two-factor limit across a window boundary', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  test('10 codes just before a boundary: none more just after, on any two-factor route', async () => {
    const user = await createUser(t);
    const token = await signIn(t, user);
    const { secret } = await enableTwoFactor(t, token);
    // The attempt that enabled 2FA leaves the window first.
    await advance(t, 15 * 60);
    await justBeforeBoundary(t, 15 * 60, 20);
    for (let i = 0; i < 10; i++) {
      const res = await t.request('POST', `${AUTH}/2fa/verify`, { token, body: { code: '000000' } });
      assert.equal(res.status, 400, `attempt ${i + 1}: ${res.text}`);
    }
    await advance(t, 30);
    assertTooMany(
      await t.request('POST', `${AUTH}/2fa/verify`, { token, body: { code: totpCode(t, secret) } }),
      10,
    );
    const challenge = await login(t, { email: user.email, password: PASSWORD });
    assert.equal(challenge.body.data.requiresTwoFactor, true, challenge.text);
    const verify = await t.request('POST', `${AUTH}/2fa/login-verify`, {
      body: { tempToken: challenge.body.data.tempToken, code: totpCode(t, secret) },
    });
    assertTooMany(verify, 10);
    const reset = Number(verify.headers.get('ratelimit-reset'));
    assert.ok(reset > 10 * 60 && reset <= 15 * 60, `reset ${reset}`);
    await advance(t, reset);
    const ok = await t.request('POST', `${AUTH}/2fa/verify`, { token, body: { code: totpCode(t, secret) } });
    assert.equal(ok.status, 200, ok.text);
  });
});
