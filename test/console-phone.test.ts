// The console's phone in Chromium (issue 37), without a call: the dock on every page for an organization with
// voice. A member without an extension is told they have none and who can assign one; a refused microphone is
// explained in words the member can act on. Both checked by axe with the phone open, photographed into
// docs/console/. Calls between browsers: test/console-phone-calls.test.ts.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { CONSOLE_DIST } from '../src/platform/http/console.ts';
import { createOrganization, startTestApp, type TestApp } from './helpers/app.ts';
import {
  assertAccessible,
  launchChromium,
  photograph,
  signedInPage,
  browserSkip as skip,
} from './helpers/browser.ts';
import { createUser, signIn } from './helpers/portal.ts';

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
