// The console's phone in Chromium (issue 37): the dock on every page for an organization with voice. A member
// without an extension is told they have none and who can assign one; a refused microphone is explained in
// words the member can act on. Both checked by axe with the phone open, and photographed into docs/console/.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CONSOLE_DIST } from '../src/platform/http/console.ts';
import { createOrganization, startTestApp, type TestApp } from './helpers/app.ts';
import { createUser, signIn } from './helpers/portal.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = path.join(import.meta.dirname, '..', 'docs', 'console');
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const skip = !existsSync(CHROMIUM)
  ? `Chromium not installed at ${CHROMIUM}`
  : process.env.DATABASE_URL
    ? 'the browser tests run on the embedded database only'
    : false;

/** Chromium as the console tests launch it on this machine, plus `extra` flags (fake media, permissions). */
export function launchChromium(extra: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--autoplay-policy=no-user-gesture-required',
      ...extra,
    ],
  });
}

/** Runs axe on the page as it is; fails on any serious or critical violation. */
export async function assertAccessible(page: Page, name: string): Promise<void> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (...args: unknown[]) => Promise<any> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v: { impact: string }) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v: { id: string; nodes: { target: string[] }[] }) =>
          `${v.id}: ${v.nodes.map((n) => n.target).join(' ')}`,
      );
  });
  assert.deepEqual(violations, [], name);
}

export async function photograph(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}-desktop.png`) });
}

/** A page of `browser` signed in with `token` (the portal cookie), on `href`. */
export async function signedInPage(browser: Browser, t: TestApp, token: string, href = '/'): Promise<Page> {
  const context = await browser.newContext({ baseURL: t.url, viewport: { width: 1280, height: 800 } });
  await context.addCookies([{ name: 'portal_token', value: token, url: t.url }]);
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  await page.goto(href);
  return page;
}

describe('the console phone without a call', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  let organizationId: string;
  let ownerToken: string;
  const pageErrors: string[] = [];

  before(async () => {
    assert.ok(existsSync(path.join(CONSOLE_DIST, 'index.html')), 'the console is built');
    t = await startTestApp();
    // The phone connects to PUBLIC_URL's /sip: this server's own address.
    (t.ctx.config as { publicUrl: string }).publicUrl = t.url;
    organizationId = (
      await createOrganization(t, {
        name: 'Acme Dental',
        plan: 'enterprise',
        subscriptionState: 'paid',
        cardVerified: true,
      })
    ).id;
    const owner = await createUser(t, { role: 'owner', organizationIds: [organizationId] });
    ownerToken = await signIn(t, owner);
    // Fake devices, but no fake consent: every microphone prompt is refused.
    browser = await launchChromium(['--use-fake-device-for-media-stream', '--deny-permission-prompts']);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  async function memberPage(withExtension: boolean) {
    const member = await createUser(t, { role: 'member', organizationIds: [organizationId] });
    if (withExtension) {
      const created = await t.request('POST', '/v2/portal/extensions', {
        token: ownerToken,
        body: { extension: '301', name: 'Front desk', userId: member.id },
      });
      assert.equal(created.status, 201, created.text);
    }
    const page = await signedInPage(browser, t, await signIn(t, member), '/calls');
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.getByRole('heading', { level: 1, name: 'Calls' }).waitFor();
    return page;
  }

  test('a member without an extension is told so, and who can assign one', async () => {
    const page = await memberPage(false);
    const dock = page.getByRole('complementary', { name: 'Phone' });
    await dock.getByRole('button', { name: /^Phone/ }).click();
    const note = dock.getByTestId('phone-no-extension');
    await note.waitFor();
    assert.match((await note.textContent()) ?? '', /You have no extension yet/);
    assert.match(
      (await note.textContent()) ?? '',
      /An owner or admin of Acme Dental assigns extensions: ask Test User \(owner\)/,
    );
    assert.equal(await dock.getByRole('button', { name: 'Allow the microphone' }).count(), 0);
    assert.equal(await dock.getByLabel('Call').count(), 0, 'no dialer without an extension');
    await assertAccessible(page, 'phone without an extension');
    await photograph(page, 'phone-no-extension');
    await page.context().close();
  });

  test('a refused microphone shows what to do', async () => {
    const page = await memberPage(true);
    const dock = page.getByRole('complementary', { name: 'Phone' });
    await dock.getByRole('button', { name: /^Phone · 301/ }).click();
    // Asked ahead of the first call (the browser may already say it is blocked: then the note says so at once).
    await dock.getByRole('button', { name: 'Allow the microphone' }).click();
    const alert = dock.getByTestId('microphone-problem');
    await alert.waitFor();
    assert.match(
      (await alert.textContent()) ?? '',
      /Microphone access is blocked\. Allow the microphone for this site/,
    );
    assert.equal(await alert.getAttribute('role'), 'alert');
    await assertAccessible(page, 'phone with the microphone refused');
    await photograph(page, 'phone-microphone-refused');
    await page.context().close();
    assert.deepEqual(pageErrors, []);
  });
});
