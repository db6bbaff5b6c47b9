// Chromium for the console's browser tests (issue 37): Debian's Chromium driven by playwright-core with the
// flags this machine needs (see test/console.test.ts), signed-in pages by the portal cookie, axe (no serious or
// critical violation) and screenshots into docs/console/.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { TestApp } from './app.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = path.join(import.meta.dirname, '..', '..', 'docs', 'console');
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** Why a browser test is skipped here, or false. */
export const browserSkip = !existsSync(CHROMIUM)
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

/** Reads `read` until `ok` says yes or `ms` pass; the last value read. */
export async function until<T>(
  read: () => T | Promise<T>,
  ok: (value: T) => boolean,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await sleep(100);
    value = await read();
  }
  return value;
}
