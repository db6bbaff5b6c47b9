// The console's phone in Chromium (issue 37): the dock on every page for an organization with voice. A member
// without an extension is told they have none and who can assign one; a refused microphone is explained in
// words the member can act on. Then two Chromium browsers, each with a fake microphone playing its own tone
// (440 Hz and 1000 Hz), signed in as two members: one dials the other's extension, the other sees who calls
// and answers, each page's remote audio receives packets (and the relay counts packets each way), hold and
// resume, one hangs up and both pages and the call record agree; a call the API places with `record` has both
// tones in its recording. Checked by axe with the phone open, photographed into docs/console/.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Browser, chromium, type Page } from 'playwright-core';
import { decodeWav, encodeWav, tone } from '../src/modules/voice/audio.ts';
import { CONSOLE_DIST } from '../src/platform/http/console.ts';
import { createOrganization, startTestApp, type TestApp } from './helpers/app.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { type SipExtension, sipOffice } from './helpers/sip-office.ts';
import { strength } from './helpers/tones.ts';

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

async function until<T>(read: () => T | Promise<T>, ok: (value: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await sleep(100);
    value = await read();
  }
  return value;
}

describe('a call between two browsers', { skip }, () => {
  let office: Awaited<ReturnType<typeof sipOffice>>;
  let alice: { page: Page; extension: SipExtension };
  let bob: { page: Page; extension: SipExtension };
  const browsers: Browser[] = [];
  const pageErrors: string[] = [];

  /** A member with extension `digits` named `name`, signed in, in a browser whose microphone plays `hz`. */
  async function member(digits: string, name: string, hz: number) {
    const user = await createUser(office.t, { role: 'member', organizationIds: [office.office.id] });
    const extension = await office.create(digits, { name, userId: user.id });
    const wav = path.join(mkdtempSync(path.join(tmpdir(), 'phone-')), `${hz}.wav`);
    writeFileSync(wav, encodeWav(tone(10, hz)));
    const browser = await launchChromium([
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}`,
    ]);
    browsers.push(browser);
    const page = await signedInPage(browser, office.t, await signIn(office.t, user), '/calls');
    page.on('pageerror', (error) => pageErrors.push(`${name}: ${error.message}`));
    await page.locator('[data-phone-status="ready"]').waitFor({ state: 'attached' });
    await page.getByRole('button', { name: new RegExp(`^Phone · ${digits}`) }).click();
    return { page, extension };
  }

  const dock = (page: Page) => page.getByRole('complementary', { name: 'Phone' });
  const received = async (page: Page) =>
    Number(await page.getByTestId('call-audio').getAttribute('data-received'));
  const latestCall = async () =>
    (await office.t.request('GET', '/api/v2/calls?limit=1', { apiKey: office.office.key })).body.data[0];

  before(async () => {
    office = await sipOffice();
    (office.t.ctx.config as { publicUrl: string }).publicUrl = office.t.url;
    alice = await member('201', 'Alice', 440);
    bob = await member('202', 'Bob', 1000);
  });
  after(async () => {
    for (const browser of browsers) await browser.close();
    office.t.ctx.sipListener.stop();
    await office.t.close();
  });

  test('Alice calls Bob’s extension; Bob sees who and answers; audio both ways; hold, resume; Bob hangs up', async () => {
    await dock(alice.page).getByLabel('Call', { exact: true }).fill('202');
    await dock(alice.page).getByRole('button', { name: 'Call', exact: true }).click();

    const ringing = bob.page.getByRole('alertdialog', { name: 'Incoming call' });
    await ringing.waitFor();
    assert.match(
      (await ringing.textContent()) ?? '',
      /Alice\s*201/,
      'caller id: the extension’s name and number',
    );
    await assertAccessible(bob.page, 'an incoming call');
    await photograph(bob.page, 'phone-incoming');
    await ringing.getByRole('button', { name: 'Answer' }).click();

    for (const side of [alice, bob]) await side.page.locator('[data-call-state="active"]').waitFor();
    const live = await latestCall();
    assert.equal(live.status, 'in_progress');
    // The relay passes packets each way, and each page's remote audio track receives the other's.
    const relayed = await until(
      () => office.t.ctx.sipListener.pbx.mediaOf(live.id),
      (counts) => (counts?.fromCaller ?? 0) >= 100 && (counts?.fromCallee ?? 0) >= 100,
    );
    assert.ok(relayed && relayed.fromCaller >= 100 && relayed.fromCallee >= 100, JSON.stringify(relayed));
    for (const side of [alice, bob]) {
      const count = await until(
        () => received(side.page),
        (value) => value >= 100,
      );
      assert.ok(count >= 100, `a page received ${count} packets`);
    }
    await alice.page.getByTestId('call-timer').waitFor();
    await assertAccessible(alice.page, 'a call');
    await photograph(alice.page, 'phone-in-call');

    // Hold: the page says so, and SIP.js stops sending Alice's microphone (its sender track is disabled), so
    // what Bob hears falls to silence; resumed, her tone is back. (The relay keeps passing packets both ways:
    // a held browser still sends RTP, of silence, and our answer to its sendonly hides the hold from Bob.)
    const level = async (page: Page) =>
      Number(await page.getByTestId('call-audio').getAttribute('data-level'));
    assert.ok(
      (await until(
        () => level(bob.page),
        (value) => value > 0.05,
      )) > 0.05,
      'Bob hears Alice’s tone',
    );
    await dock(alice.page).getByRole('button', { name: 'Hold' }).click();
    await alice.page.locator('[data-call-state="held"]').waitFor();
    assert.equal(
      await dock(alice.page).getByRole('button', { name: 'Resume' }).getAttribute('aria-pressed'),
      'true',
    );
    const quiet = await until(
      () => level(bob.page),
      (value) => value < 0.01,
    );
    assert.ok(quiet < 0.01, `Bob hears silence while Alice holds (level ${quiet})`);
    await photograph(alice.page, 'phone-on-hold');
    await dock(alice.page).getByRole('button', { name: 'Resume' }).click();
    await alice.page.locator('[data-call-state="active"]').waitFor();
    const back = await until(
      () => level(bob.page),
      (value) => value > 0.05,
    );
    assert.ok(back > 0.05, `Bob hears Alice again after resume (level ${back})`);
    const resumedFrom = await received(alice.page);
    const flowing = await until(
      () => received(alice.page),
      (value) => value >= resumedFrom + 50,
    );
    assert.ok(flowing >= resumedFrom + 50, 'Alice receives Bob after resume');

    await dock(bob.page).getByRole('button', { name: 'Hang up' }).click();
    for (const side of [alice, bob]) {
      await side.page.locator('[data-call-state]').waitFor({ state: 'detached' });
      await side.page.locator('[data-phone-status="ready"]').waitFor({ state: 'attached' });
    }
    const ended = await until(
      () => office.t.request('GET', `/api/v2/calls/${live.id}`, { apiKey: office.office.key }),
      (res) => res.body.data.status === 'completed',
    );
    const call = ended.body.data;
    assert.equal(call.status, 'completed');
    assert.equal(call.direction, 'internal');
    assert.equal(call.from, '201');
    assert.equal(call.to, '202');
    assert.equal(call.hangupCause, 'normal_clearing');
    assert.ok(call.answeredAt && call.durationSeconds >= 2, JSON.stringify(call));
  });

  test('a call the API places and records: both browsers answer, and the recording holds both tones', async () => {
    const placed = await office.t.request('POST', '/api/v2/calls', {
      apiKey: office.office.key,
      body: { from: '201', to: '202', extensionId: alice.extension.id, record: true },
    });
    assert.equal(placed.status, 202, placed.text);
    await alice.page
      .getByRole('alertdialog', { name: 'Incoming call' })
      .getByRole('button', { name: 'Answer' })
      .click();
    await bob.page
      .getByRole('alertdialog', { name: 'Incoming call' })
      .getByRole('button', { name: 'Answer' })
      .click();
    for (const side of [alice, bob]) await side.page.locator('[data-call-state="active"]').waitFor();
    const relayed = await until(
      () => office.t.ctx.sipListener.pbx.mediaOf(placed.body.data.id),
      (counts) => (counts?.fromCaller ?? 0) >= 150 && (counts?.fromCallee ?? 0) >= 150,
    );
    assert.ok(relayed && relayed.fromCaller >= 150 && relayed.fromCallee >= 150, JSON.stringify(relayed));
    const hangup = await office.t.request('POST', `/api/v2/calls/${placed.body.data.id}/hangup`, {
      apiKey: office.office.key,
    });
    assert.equal(hangup.status, 200, hangup.text);
    for (const side of [alice, bob])
      await side.page.locator('[data-call-state]').waitFor({ state: 'detached' });
    const done = await until(
      () => office.t.request('GET', `/api/v2/calls/${placed.body.data.id}`, { apiKey: office.office.key }),
      (res) => Boolean(res.body.data.recordingId),
    );
    assert.equal(done.body.data.status, 'completed');
    const audio = await fetch(`${office.t.url}/api/v2/recordings/${done.body.data.recordingId}/audio`, {
      headers: { 'x-api-key': office.office.key },
    });
    assert.equal(audio.status, 200);
    const wav = decodeWav(Buffer.from(await audio.arrayBuffer()));
    const silent = strength(wav.samples, 700);
    assert.ok(strength(wav.samples, 440) > 50 * silent, 'Alice’s microphone is in the recording');
    assert.ok(strength(wav.samples, 1000) > 50 * silent, 'Bob’s microphone is in the recording');
    assert.deepEqual(pageErrors, []);
  });
});
