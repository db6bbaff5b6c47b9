// Portal sign-in helpers for tests: users made through the operator API, logins from distinct client
// addresses (the app trusts X-Forwarded-For in these tests, so each login has its own per-IP budget unless a
// test means to share one), a tiny cookie jar, and a real TOTP generator reading the server's clock.
import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { createOrganization, type Response, type TestApp } from './app.ts';

export const PASSWORD = 'correct horse battery';

export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}@example.com`;
}

export function randomIp(): string {
  const b = randomBytes(3);
  return `10.${b[0]}.${b[1]}.${b[2]}`;
}

export interface TestUser {
  id: string;
  email: string;
  password: string;
  organizationId: string;
}

/** A user who belongs to `organizations` (a new one when none is given) with `role` in each. */
export async function createUser(
  t: TestApp,
  options: { role?: 'owner' | 'admin' | 'member'; organizationIds?: string[]; email?: string } = {},
): Promise<TestUser> {
  const organizationIds = options.organizationIds ?? [(await createOrganization(t)).id];
  const email = options.email ?? uniqueEmail();
  const res = await t.admin('POST', '/users', {
    email,
    password: PASSWORD,
    name: 'Test User',
    memberships: organizationIds.map((organizationId) => ({ organizationId, role: options.role ?? 'owner' })),
  });
  if (res.status !== 201) throw new Error(`createUser failed: ${res.status} ${res.text}`);
  return { id: res.body.data.id, email, password: PASSWORD, organizationId: organizationIds[0]! };
}

export function login(
  t: TestApp,
  body: { email: string; password: string; remember?: boolean },
  ip: string = randomIp(),
): Promise<Response> {
  return t.request('POST', '/v2/portal/auth/login', { body, headers: { 'x-forwarded-for': ip } });
}

/** Signs in and returns the token; fails the test if sign-in did not give a session. */
export async function signIn(t: TestApp, user: { email: string; password: string }, remember = false) {
  const res = await login(t, { email: user.email, password: user.password, remember });
  if (res.status !== 200 || !res.body.data.token) throw new Error(`signIn failed: ${res.status} ${res.text}`);
  return res.body.data.token as string;
}

export interface SetCookie {
  name: string;
  value: string;
  attributes: Record<string, string | true>;
}

export function parseSetCookies(res: Response): SetCookie[] {
  return res.headers.getSetCookie().map((line) => {
    const [pair, ...rest] = line.split(';').map((part) => part.trim());
    const eq = pair!.indexOf('=');
    const attributes: Record<string, string | true> = {};
    for (const attribute of rest) {
      const i = attribute.indexOf('=');
      if (i === -1) attributes[attribute.toLowerCase()] = true;
      else attributes[attribute.slice(0, i).toLowerCase()] = attribute.slice(i + 1);
    }
    return { name: pair!.slice(0, eq), value: pair!.slice(eq + 1), attributes };
  });
}

/**
 * A browser's cookie store, as far as these tests need one. Its requests say they come from the server's own
 * pages (Sec-Fetch-Site: same-origin), as a browser running the console does; `header()` alone leaves it out.
 */
export class CookieJar {
  readonly cookies = new Map<string, string>();

  take(res: Response): void {
    for (const cookie of parseSetCookies(res)) {
      const maxAge = cookie.attributes['max-age'];
      const expires = cookie.attributes.expires;
      const gone =
        maxAge === '0' ||
        cookie.value === '' ||
        (typeof expires === 'string' && new Date(expires).getTime() <= Date.now());
      if (gone) this.cookies.delete(cookie.name);
      else this.cookies.set(cookie.name, cookie.value);
    }
  }

  header(): Record<string, string> {
    if (this.cookies.size === 0) return {};
    return { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') };
  }

  async request(
    t: TestApp,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const res = await t.request(method, path, {
      body,
      headers: { 'sec-fetch-site': 'same-origin', ...this.header(), ...headers },
    });
    this.take(res);
    return res;
  }
}

/** The TOTP code of `secret` at the server's current time. */
export function totpCode(t: TestApp, secret: string, offsetSeconds = 0): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: t.ctx.clock.nowMs() + offsetSeconds * 1000,
  });
}

/** Moves the server clock (operator API) and fails the test if it could not. */
export async function advance(t: TestApp, seconds: number): Promise<void> {
  const res = await t.admin('POST', '/test/clock', { advanceSeconds: seconds });
  if (res.status !== 200) throw new Error(`clock move failed: ${res.status} ${res.text}`);
}

/**
 * Turns 2FA on for a signed-in user (enabling asks for the password too: `password`, the one every test user
 * is created with unless given); returns the secret and recovery codes.
 */
export async function enableTwoFactor(t: TestApp, token: string, password: string = PASSWORD) {
  const setup = await t.request('POST', '/v2/portal/auth/2fa/setup', { token });
  if (setup.status !== 200) throw new Error(`2fa setup failed: ${setup.status} ${setup.text}`);
  const secret = setup.body.data.secret as string;
  const enable = await t.request('POST', '/v2/portal/auth/2fa/enable', {
    token,
    body: { code: totpCode(t, secret), password },
  });
  if (enable.status !== 200) throw new Error(`2fa enable failed: ${enable.status} ${enable.text}`);
  // The step just used cannot be used again; later codes come from the next step.
  await advance(t, 30);
  return { secret, recoveryCodes: enable.body.data.recoveryCodes as string[] };
}

/**
 * Moves the server clock to just after the start of a rate-limit window of `windowSeconds` (fixed windows are
 * aligned to the clock), so a test's attempts cannot straddle two windows. Sliding windows (sign-in and
 * two-factor) have no boundary to straddle; there it only starts the test on a whole window.
 */
export async function alignClock(t: TestApp, windowSeconds: number): Promise<void> {
  const windowMs = windowSeconds * 1000;
  const next = Math.ceil(t.ctx.clock.nowMs() / windowMs) * windowMs + 1000;
  const res = await t.admin('POST', '/test/clock', { now: new Date(next).toISOString() });
  if (res.status !== 200) throw new Error(`clock move failed: ${res.status} ${res.text}`);
}

/**
 * Moves the server clock forward to `secondsBefore` seconds before the next start of a clock-aligned window
 * of `windowSeconds` (at least a minute ahead): where a fixed window would end and give a new budget.
 */
export async function justBeforeBoundary(
  t: TestApp,
  windowSeconds: number,
  secondsBefore: number,
): Promise<number> {
  const windowMs = windowSeconds * 1000;
  const boundary = Math.ceil((t.ctx.clock.nowMs() + secondsBefore * 1000 + 60_000) / windowMs) * windowMs;
  const res = await t.admin('POST', '/test/clock', {
    now: new Date(boundary - secondsBefore * 1000).toISOString(),
  });
  if (res.status !== 200) throw new Error(`clock move failed: ${res.status} ${res.text}`);
  return boundary;
}
