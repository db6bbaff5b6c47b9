// The web console end to end in a real browser: Debian's Chromium driven by playwright-core against a real
// server on loopback (its jobs running, as in production), under the server's Content-Security-Policy. One
// person's day: turn on 2FA and sign in with it, send a message and see it delivered, import a CSV with a bad
// row, launch a campaign and watch its statistics change, play a voicemail, create an API key (asked for a
// fresh code) and see it once, add a webhook and see its delivery, invite a colleague and revoke it, accept an
// invitation to another organization, ride out an expired token, switch organization and sign out. Every main page is checked by axe (no serious or critical violations) and
// photographed at desktop and phone width into docs/console/.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CONSOLE_DIST } from '../src/platform/http/console.ts';
import { createOrganization, startTestApp, type TestApp } from './helpers/app.ts';
import { launchChromium } from './helpers/browser.ts';
import { freshNumber } from './helpers/messaging.ts';
import { advance, createUser, signIn, type TestUser, totpCode } from './helpers/portal.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const chromiumInstalled = existsSync(CHROMIUM);
const SHOTS = path.join(import.meta.dirname, '..', 'docs', 'console');
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WAIT = { timeout: 20_000 };

// The console speaks only HTTP to the server, so which database is behind it changes nothing the browser can
// see; the API tests run on both engines. The browser test runs once, on the README's command (embedded PGlite),
// which keeps CI inside its time budget.
const skip = !chromiumInstalled
  ? `Chromium not installed at ${CHROMIUM}`
  : process.env.DATABASE_URL
    ? 'the browser test runs on the embedded database only (npm test without DATABASE_URL)'
    : false;

describe('the web console in Chromium', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let receiver: Receiver;
  let user: TestUser;
  let main: { id: string; name: string };
  let other: { id: string; name: string };
  let number: string;
  let totpSecret = '';
  const cspViolations: string[] = [];
  const pageErrors: string[] = [];

  before(async () => {
    assert.ok(
      existsSync(path.join(CONSOLE_DIST, 'index.html')),
      'the console is built (npm ci runs its build)',
    );
    t = await startTestApp();
    t.ctx.jobs.start();
    receiver = await startReceiver(() => t.ctx.clock.nowMs());
    main = await createOrganization(t, {
      name: 'Acme Dental',
      plan: 'enterprise',
      subscriptionState: 'paid',
      cardVerified: true,
    });
    other = await createOrganization(t, { name: 'Second Office' });
    number = freshNumber();
    const added = await t.admin('POST', `/organizations/${main.id}/numbers`, { number, type: 'local' });
    assert.equal(added.status, 201, added.text);
    user = await createUser(t, { organizationIds: [main.id, other.id] });

    browser = await launchChromium();
    context = await browser.newContext({ baseURL: t.url, viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.setDefaultTimeout(WAIT.timeout);
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content.Security.Policy/i.test(message.text())) {
        cspViolations.push(message.text());
      }
    });
    page.on('pageerror', (error) => pageErrors.push(error.message));
  });

  after(async () => {
    await browser?.close();
    await receiver?.close();
    await t?.close();
  });

  /** Runs axe on the page as it is; fails on any serious or critical violation. */
  async function accessible(name: string) {
    await page.evaluate(axeSource);
    const { passes, violations } = await page.evaluate(async () => {
      const axe = (globalThis as unknown as { axe: { run: (...args: unknown[]) => Promise<any> } }).axe;
      const result = await axe.run(document, { resultTypes: ['violations'] });
      const serious = result.violations
        .filter((v: { impact: string }) => v.impact === 'serious' || v.impact === 'critical')
        .map((v: { id: string; help: string; nodes: { target: string[] }[] }) => ({
          id: v.id,
          help: v.help,
          targets: v.nodes.map((n) => n.target.join(' ')).slice(0, 5),
        }));
      return { passes: result.passes.length as number, violations: serious };
    });
    assert.ok(passes > 10, `axe checked ${name} (${passes} rules passed)`);
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 2)}`);
  }

  async function photograph(name: string) {
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, `${name}-desktop.png`) });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: path.join(SHOTS, `${name}-phone.png`) });
    await page.setViewportSize({ width: 1280, height: 800 });
  }

  async function open(href: string, heading: string) {
    await page.goto(href);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }

  test('serves the console at / and sends a signed-out visitor to /login', async () => {
    await page.goto('/campaigns');
    await page.waitForURL(/\/login\?next=%2Fcampaigns/);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await accessible('sign-in');
    await photograph('sign-in');
  });

  test('a wrong password shows the server message; then sign in, turn on 2FA with the QR code and its key', async () => {
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /invalid|incorrect|wrong/i })
      .waitFor();

    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/campaigns$/);
    await page.getByRole('heading', { level: 1, name: 'Campaigns' }).waitFor();

    await open('/settings', 'Settings');
    await page.getByRole('button', { name: 'Set up two-factor authentication' }).click();
    await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
    totpSecret = (await page.getByTestId('totp-secret').textContent()) ?? '';
    assert.match(totpSecret, /^[A-Z2-7]{32}$/);
    await page.getByLabel('Code from the app').fill(totpCode(t, totpSecret));
    await page.getByLabel('Your password').fill(user.password);
    await page.getByRole('button', { name: 'Turn on' }).click();
    const codes = page.getByTestId('recovery-codes').getByRole('listitem');
    await codes.first().waitFor();
    assert.ok((await codes.count()) >= 8);
    await page.getByRole('button', { name: 'I have stored them' }).click();
    await page.getByText('Two-factor authentication is on.').waitFor();
  });

  test('signs out, and signs in again through the two-factor challenge', async () => {
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL(/\/login/);
    await advance(t, 60); // the code that turned 2FA on is spent; the next step's code is new
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByLabel('Code from your authenticator app, or a recovery code')
      .fill(totpCode(t, totpSecret));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    const version = (await t.request('GET', '/api/version')).body.data.version;
    await page.getByTestId('api-version').filter({ hasText: version }).waitFor();
    await accessible('dashboard');
    await photograph('dashboard');
  });

  test('sends a message with a live segment count and sees it delivered', async () => {
    await open('/messages', 'Messages');
    await page.getByLabel('To', { exact: true }).fill('+14155550142');
    await page.getByLabel('Message', { exact: true }).fill('Hello from the console ✓');
    await page
      .getByTestId('segment-counter')
      .filter({ hasText: '24 characters · 1 segment · UCS-2' })
      .waitFor();
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const queued = await page
      .getByRole('status')
      .filter({ hasText: 'Queued as' })
      .locator('code')
      .textContent();
    assert.match(queued ?? '', /^msg_/);
    const row = page.getByRole('row').filter({ hasText: 'Hello from the console' });
    await row.getByText(/queued|sent/).waitFor();
    // The carrier's receipt arrives once the dispatch job has sent it; the history polls and shows it.
    await waitFor(
      async () =>
        (await t.request('GET', `/api/v2/messages/${queued}`, { apiKey: await keyOf() })).body.data.status ===
        'sent',
    );
    assert.equal(
      (await t.admin('POST', '/test/carrier/receipts', { messageId: queued, status: 'delivered' })).status,
      200,
    );
    await row.getByText('delivered').waitFor();
    await accessible('messages');
    await photograph('messages');
  });

  test('schedules a message for later, sees it scheduled, and cancels it', async () => {
    await open('/messages', 'Messages');
    await page.getByLabel('To', { exact: true }).fill('+14155550143');
    await page.getByLabel('Message', { exact: true }).fill('See you tomorrow');
    // Two hours ahead on the app's clock, written as the browser's local time (what datetime-local holds).
    const at = t.ctx.clock.nowMs() + 2 * 60 * 60 * 1000;
    // A string, not a function: the test's transpiler would wrap a function's inner helpers for the page.
    const local = await page.evaluate<string>(
      `(() => { const d = new Date(${at}); const p = (n) => String(n).padStart(2, '0');
        return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes()); })()`,
    );
    await page.getByLabel('Send at (optional)').fill(local);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const scheduled = await page
      .getByRole('status')
      .filter({ hasText: 'Scheduled as' })
      .locator('code')
      .textContent();
    assert.match(scheduled ?? '', /^msg_/);
    const stored = (await t.request('GET', `/api/v2/messages/${scheduled}`, { apiKey: await keyOf() })).body
      .data;
    assert.equal(stored.status, 'scheduled');
    assert.equal(new Date(stored.sendAt).getTime(), Math.floor(at / 60_000) * 60_000);
    const row = page.getByRole('row').filter({ hasText: 'See you tomorrow' });
    await row.getByText('scheduled', { exact: true }).waitFor();
    page.once('dialog', (dialog) => dialog.accept());
    await row.getByRole('button', { name: 'Cancel' }).click();
    await row.getByText('cancelled', { exact: true }).waitFor();
    assert.equal(
      (await t.request('GET', `/api/v2/messages/${scheduled}`, { apiKey: await keyOf() })).body.data.status,
      'cancelled',
    );
    assert.equal(await row.getByRole('button', { name: 'Cancel' }).count(), 0);
  });

  test('a text that arrives while the history is open appears in it without a reload', async () => {
    await open('/messages', 'Messages');
    // Nothing in the list is changing (delivered, cancelled), so the list is not polling: only the live event
    // stream can bring the new row. A mark on the window shows the page was not reloaded.
    await page.getByRole('row').filter({ hasText: 'See you tomorrow' }).getByText('cancelled').waitFor();
    await page.evaluate('window.__stillTheSamePage = true');
    const from = freshNumber('415');
    const sent = await t.admin('POST', '/test/carrier/inbound', {
      from,
      to: number,
      text: 'Are you open today?',
    });
    assert.equal(sent.status, 201, sent.text);
    await page.getByRole('row').filter({ hasText: 'Are you open today?' }).waitFor();
    assert.equal(await page.evaluate('window.__stillTheSamePage'), true);
  });

  test('imports a CSV with a bad row and shows the report of rejected rows', async () => {
    await open('/contacts', 'Contacts');
    await page.getByText('Import a CSV').click();
    const csv =
      'phone,first_name,last_name\n+14155550171,Ada,Lovelace\nnot a phone,Bad,Row\n+14155550172,Alan,Turing\n';
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const report = page.getByRole('status', { name: 'Import report' });
    await report
      .getByText('2 imported')
      .waitFor()
      .catch(async () => {
        throw new Error(`import report: ${await report.textContent()}`);
      });
    await report.getByText('1 rejected').waitFor();
    const rejected = report.getByRole('row').filter({ hasText: /^3/ });
    await rejected.waitFor();
    await page.getByRole('link', { name: '+14155550171' }).waitFor();
    await accessible('contacts');
    await photograph('contacts');
  });

  test('launches a campaign and watches its delivery statistics change', async () => {
    // A list of the two imported contacts, made through the console.
    await open('/lists', 'Contact lists');
    await page.getByText('New list').click();
    await page.getByLabel('Name', { exact: true }).fill('Patients');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page
      .getByRole('row')
      .filter({ hasText: 'Patients' })
      .getByRole('button', { name: 'Members' })
      .click();
    const picker = page.getByLabel('Contacts (choose one or more)');
    await picker.locator('option').nth(1).waitFor({ state: 'attached' });
    const values = await picker
      .locator('option')
      .evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
    await picker.selectOption(values);
    await page.getByRole('button', { name: 'Add to list' }).click();
    await page.getByRole('row').filter({ hasText: 'Patients' }).getByText('2', { exact: true }).waitFor();

    await open('/campaigns', 'Campaigns');
    await page.getByText('New campaign').click();
    await page.getByLabel('Name', { exact: true }).fill('Winter check-up');
    await page
      .getByLabel('Message', { exact: true })
      .fill('Hi {{first_name|there}}, time for your check-up! Book: https://clinic.example.com/book');
    await page.getByLabel('Contact lists').selectOption({ label: 'Patients (2)' });
    await page.getByLabel('Send only between').uncheck();
    await page.getByLabel('Track links').check();
    await page.getByRole('button', { name: 'Create draft' }).click();
    await page.getByRole('heading', { level: 1, name: 'Winter check-up' }).waitFor();
    await page.getByRole('button', { name: 'Launch' }).click();
    // Launched: no receipts yet, so nothing is delivered (no rate while nothing was attempted, then 0 %).
    await page
      .getByTestId('delivery-rate')
      .filter({ hasText: /^(—|0 %)$/ })
      .waitFor();
    await waitFor(async () => (await campaignMessages()).filter((m) => m.status === 'sent').length === 2);
    const [first, second] = await campaignMessages();
    // One recipient taps the tracked link (a phone's browser, not a preview): the page shows the click.
    const [sent] = await t.ctx.db.query<{ body: string }>('SELECT body FROM messages WHERE id = $1', [
      first!.id,
    ]);
    const code = /\/l\/([A-Za-z0-9_-]{16})/.exec(sent!.body)?.[1];
    assert.ok(code, sent!.body);
    const tap = await t.request('GET', `/l/${code}`, {
      headers: { 'user-agent': 'Mozilla/5.0 (iPhone) Mobile Safari' },
    });
    assert.equal(tap.headers.get('location'), 'https://clinic.example.com/book');
    await page.getByTestId('unique-clicks').filter({ hasText: /^1$/ }).waitFor();
    await page.getByTestId('click-rate').filter({ hasText: '50 %' }).waitFor();
    await page
      .getByRole('table', { name: 'Link clicks' })
      .getByRole('row')
      .filter({ hasText: first!.to_number })
      .waitFor();
    await t.admin('POST', '/test/carrier/receipts', { messageId: first!.id, status: 'delivered' });
    await t.admin('POST', '/test/carrier/receipts', { messageId: second!.id, status: 'undelivered' });
    await page.getByTestId('delivery-rate').filter({ hasText: '50 %' }).waitFor();
    await page.getByRole('row').filter({ hasText: first!.to_number }).getByText('delivered').waitFor();
    await accessible('campaign');
    await photograph('campaign');

    // The one that did not arrive is followed up: a draft to that recipient alone, naming its parent.
    await page.getByRole('button', { name: 'Follow up failures' }).click();
    await page.getByRole('heading', { level: 1, name: 'Winter check-up (follow-up)' }).waitFor();
    await page.getByText('A follow-up of').waitFor();
    const [followUp] = await t.ctx.db.query<{ recipient_count: number; parent_campaign_id: string }>(
      "SELECT recipient_count, parent_campaign_id FROM campaigns WHERE name = 'Winter check-up (follow-up)'",
    );
    assert.equal(followUp?.recipient_count, 1);
    assert.ok(followUp?.parent_campaign_id);
  });

  test('answers a simulated call to voicemail and plays it, with its transcription', async () => {
    const extension = await t.request('POST', '/api/v2/extensions', {
      apiKey: await keyOf(),
      body: { extension: '101', name: 'Front desk' },
    });
    assert.equal(extension.status, 201, extension.text);
    const [line] = (await t.request('GET', '/api/v2/numbers', { apiKey: await keyOf() })).body.data;
    await t.request('PATCH', `/api/v2/numbers/${line.id}`, {
      apiKey: await keyOf(),
      body: { voiceRoute: { type: 'voicemail', target: extension.body.data.id } },
    });
    const call = await t.admin('POST', '/test/pbx/inbound', {
      from: '+14155550199',
      to: number,
      outcome: 'no_answer',
      voicemailText: 'Please call me back about my appointment.',
    });
    assert.equal(call.status, 201, call.text);

    await open('/voicemail', 'Voicemail');
    const row = page.getByRole('row').filter({ hasText: '+14155550199' });
    const player = row.getByLabel('Voicemail from +14155550199');
    await player.waitFor();
    const played = await player.evaluate(async (element) => {
      const audio = element as HTMLAudioElement;
      audio.muted = true;
      await audio.play();
      await new Promise((resolve) => setTimeout(resolve, 400));
      return { duration: audio.duration, time: audio.currentTime, error: audio.error?.message ?? null };
    });
    assert.equal(played.error, null);
    assert.ok(played.duration > 1, `a voicemail of some seconds: ${JSON.stringify(played)}`);
    assert.ok(played.time > 0, `it plays: ${JSON.stringify(played)}`);
    await row.getByText(/call me back|Transcrib|no words|failed/i).waitFor();
    await accessible('voicemail');
    await photograph('voicemail');
  });

  test('the inbox: a text appears in the list and in the open thread without a reload, a reply goes from it, the keyboard moves through the list', async () => {
    await open('/inbox', 'Inbox');
    const list = page.getByRole('list', { name: 'Conversations' });
    await list.getByRole('link').filter({ hasText: 'Are you open today?' }).waitFor();
    await page.evaluate('window.__stillTheSamePage = true');
    const from = freshNumber('415');
    const first = await t.admin('POST', '/test/carrier/inbound', {
      from,
      to: number,
      text: 'Do you have a slot on Friday?',
    });
    assert.equal(first.status, 201, first.text);
    // The live event stream brings it: the list is not polling.
    const item = list.getByRole('link').filter({ hasText: 'Do you have a slot on Friday?' });
    await item.getByText('1 unread').waitFor();
    const threads = (await t.request('GET', '/api/v2/conversations', { apiKey: await keyOf() })).body.data;
    const thread = threads.find((c: { phone: string }) => c.phone === from);
    const earlier = threads.find((c: { lastMessage: { body: string } | null }) =>
      c.lastMessage?.body.includes('Are you open today?'),
    );
    assert.ok(thread && earlier, 'both threads exist through the API');
    // The list is the API's, in its order (newest activity first).
    const shown = () =>
      page.evaluate<string[]>(
        "Array.from(document.querySelectorAll('[data-inbox-item]'), (a) => a.getAttribute('data-inbox-item'))",
      );
    const ids = threads.map((c: { id: string }) => c.id);
    await waitFor(async () => JSON.stringify(await shown()) === JSON.stringify(ids));

    // j and k (and the arrows) move through the list, Enter opens the focused thread.
    const focused = () =>
      page.evaluate<string | null>("document.activeElement?.getAttribute('data-inbox-item')");
    await page.keyboard.press('j');
    assert.equal(await focused(), ids[0]);
    await page.keyboard.press('j');
    assert.equal(await focused(), ids[1]);
    await page.keyboard.press('ArrowUp');
    assert.equal(await focused(), ids[0]);
    await page.keyboard.press('k');
    assert.equal(await focused(), ids[0], 'the top stays the top');
    for (let step = 0; step < ids.indexOf(thread.id); step++) await page.keyboard.press('ArrowDown');
    assert.equal(await focused(), thread.id);
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/inbox/${thread.id}$`));
    const timeline = page.getByRole('list', { name: 'Timeline' });
    await timeline.getByText('Do you have a slot on Friday?').waitFor();
    // Opening it marked it read.
    await item.getByText('1 unread').waitFor({ state: 'detached' });
    assert.equal(
      (await t.request('GET', `/api/v2/conversations/${thread.id}`, { apiKey: await keyOf() })).body.data
        .unreadCount,
      0,
    );

    const second = await t.admin('POST', '/test/carrier/inbound', { from, to: number, text: 'Around 3 pm?' });
    assert.equal(second.status, 201, second.text);
    await timeline.getByText('Around 3 pm?').waitFor();
    assert.equal(await page.evaluate('window.__stillTheSamePage'), true);

    // r goes to the reply box; the segment count is the server's.
    await page.keyboard.press('r');
    const reply = 'Friday at 3 pm is yours, see you then.';
    await page.keyboard.type(reply);
    assert.equal(await page.getByLabel('Reply', { exact: true }).inputValue(), reply);
    await page
      .getByTestId('reply-segment-counter')
      .filter({ hasText: `${reply.length} characters · 1 segment · GSM-7` })
      .waitFor();
    await page.getByRole('button', { name: 'Send reply' }).click();
    await timeline.locator('.outbound').filter({ hasText: reply }).waitFor();
    assert.equal(await page.getByLabel('Reply', { exact: true }).inputValue(), '', 'the box is emptied');
    const items = (
      await t.request('GET', `/api/v2/conversations/${thread.id}/timeline`, { apiKey: await keyOf() })
    ).body.data;
    assert.ok(
      items.some((i: { direction: string; body: string }) => i.direction === 'outbound' && i.body === reply),
      'the reply is in the thread through the API',
    );
    await accessible('inbox');
    await photograph('inbox');

    // Escape goes back to the list, on the thread just left.
    await page.getByRole('heading', { level: 2 }).first().click();
    await page.keyboard.press('Escape');
    await page.waitForURL(/\/inbox$/);
    await page.waitForFunction(
      `document.activeElement?.getAttribute('data-inbox-item') === ${JSON.stringify(thread.id)}`,
    );

    // Assigned to me from the thread: through the API, and under the "Me" filter; closed, then reopened.
    const conversation = async () =>
      (await t.request('GET', `/api/v2/conversations/${thread.id}`, { apiKey: await keyOf() })).body.data;
    assert.equal((await conversation()).assignedTo, null);
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/inbox/${thread.id}$`));
    const assignedTo = page.getByRole('combobox', { name: 'Assigned to' });
    await assignedTo.last().selectOption(user.id);
    await waitFor(async () => (await conversation()).assignedTo === user.id);
    await assignedTo.first().selectOption('me');
    await waitFor(async () => JSON.stringify(await shown()) === JSON.stringify([thread.id]));
    await assignedTo.first().selectOption('anyone');
    await page.getByRole('button', { name: 'Close', exact: true }).click();
    await page.getByRole('button', { name: 'Reopen', exact: true }).waitFor();
    assert.equal((await conversation()).status, 'closed');
    await page.getByRole('button', { name: 'Reopen', exact: true }).click();
    await page.getByRole('button', { name: 'Close', exact: true }).waitFor();
    assert.equal((await conversation()).status, 'open');

    // After a STOP, a reply is refused with the server's words.
    const stop = await t.admin('POST', '/test/carrier/inbound', { from, to: number, text: 'STOP' });
    assert.equal(stop.status, 201, stop.text);
    await timeline.getByText('STOP', { exact: true }).waitFor();
    await page.getByLabel('Reply', { exact: true }).fill('One more thing');
    await page.getByRole('button', { name: 'Send reply' }).click();
    await page.getByRole('alert').filter({ hasText: 'has opted out of messages' }).waitFor();
  });

  test('creates an API key after a fresh two-factor code and shows it exactly once', async () => {
    await advance(t, 11 * 60); // the sign-in's verification is no longer fresh
    await open('/api-keys', 'API keys');
    await page.getByText('New API key').click();
    await page.getByLabel('Name', { exact: true }).fill('Reporting');
    await page.getByLabel('messages:read').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: "Confirm it's you" });
    await dialog.waitFor();
    await dialog.getByLabel('Two-factor code').fill(totpCode(t, totpSecret));
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    const key = (await page.getByTestId('new-api-key').textContent()) ?? '';
    assert.match(key, /^sk_test_/);
    const me = await t.request('GET', '/api/v2/me', { apiKey: key });
    assert.equal(me.status, 200, 'the key shown works');
    assert.deepEqual(me.body.data.key.scopes, ['messages:read']);
    await accessible('api-keys');
    await photograph('api-keys');
    await page.reload();
    await page.getByRole('row').filter({ hasText: 'Reporting' }).waitFor();
    assert.equal(await page.getByText(key).count(), 0, 'never shown again');
  });

  test('adds a webhook endpoint, sends a test event and sees the delivery', async () => {
    await open('/webhooks', 'Webhooks');
    await page.getByText('Add an endpoint').click();
    await page.getByLabel('URL').fill(`${receiver.url}/hooks`);
    await page.getByRole('checkbox', { name: 'message.delivered' }).check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = (await page.getByTestId('webhook-secret').textContent()) ?? '';
    assert.match(secret, /^whsec_/);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByRole('link', { name: `${receiver.url}/hooks` }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    await waitFor(async () => receiver.received.some((r) => r.body.includes('webhook.test')));
    await page
      .getByRole('row')
      .filter({ hasText: 'webhook.test' })
      .getByText('succeeded')
      .waitFor()
      .catch(async (error) => {
        await page.screenshot({ path: '/tmp/webhook-fail.png', fullPage: true });
        throw error;
      });
    await accessible('webhook');
    await photograph('webhook');
  });

  test("invites a member by e-mail, revokes the invitation, and changes a member's role", async () => {
    const colleague = await createUser(t, { organizationIds: [main.id], role: 'member' });
    await open('/members', 'Members');
    await page.getByText('Invite someone').click();
    await page.getByLabel('E-mail').fill('new.colleague@example.com');
    await page.getByLabel('Role', { exact: true }).selectOption('member');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByRole('status').filter({ hasText: 'was sent an invitation' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'new.colleague@example.com' });
    await row.getByText('invited', { exact: true }).waitFor();
    await page
      .getByRole('row')
      .filter({ hasText: colleague.email })
      .getByLabel(`Role of ${colleague.email}`)
      .selectOption('admin');
    await waitFor(async () => {
      const [member] = await t.ctx.db.query<{ role: string }>(
        'SELECT role FROM memberships WHERE user_id = $1 AND organization_id = $2',
        [colleague.id, main.id],
      );
      return member?.role === 'admin';
    });
    await accessible('members');
    await photograph('members');
    page.once('dialog', (dialog) => dialog.accept());
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.waitFor({ state: 'detached' });
    const [invitation] = await t.ctx.db.query<{ status: string }>(
      `SELECT status FROM invitations WHERE email = 'new.colleague@example.com' AND organization_id = $1`,
      [main.id],
    );
    assert.equal(invitation?.status, 'revoked');
  });

  test('sees an invitation to another organization on every page and accepts it', async () => {
    const clinic = await createOrganization(t, { name: 'Partner Clinic' });
    const clinicOwner = await createUser(t, { organizationIds: [clinic.id], role: 'owner' });
    const invited = await t.request('POST', '/v2/portal/members', {
      token: await signIn(t, clinicOwner),
      body: { email: user.email, role: 'admin' },
    });
    assert.equal(invited.status, 201, invited.text);
    await page.goto('/');
    await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'An organization invited you' }).waitFor();
    assert.equal(
      await page.getByLabel('Organization').locator('option', { hasText: 'Partner Clinic' }).count(),
      0,
      'not a member before accepting',
    );
    await page.getByRole('link', { name: 'Answer invitations' }).click();
    await page.getByRole('heading', { level: 1, name: 'Invitations' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'Partner Clinic' });
    await row.getByText('admin').waitFor();
    await accessible('invitations');
    await photograph('invitations');
    await row.getByRole('button', { name: 'Accept' }).click();
    await page.getByRole('status').filter({ hasText: 'You are now a member of Partner Clinic' }).waitFor();
    await page.getByLabel('Organization').locator('option', { hasText: 'Partner Clinic' }).waitFor({
      state: 'attached',
    });
    const [membership] = await t.ctx.db.query<{ role: string }>(
      'SELECT role FROM memberships WHERE user_id = $1 AND organization_id = $2',
      [user.id, clinic.id],
    );
    assert.equal(membership?.role, 'admin');
  });

  test('exports messages as CSV and downloads the file', async () => {
    await open('/exports', 'Exports');
    await page.getByLabel('What').selectOption('messages');
    await page.getByLabel('Format').selectOption('csv');
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    const link = page
      .getByRole('row')
      .filter({ hasText: 'messages · CSV' })
      .getByRole('link', { name: 'Download' });
    await link.waitFor();
    const href = await link.getAttribute('href');
    const file = await page.request.get(href!);
    assert.equal(file.status(), 200);
    const text = await file.text();
    assert.match(text, /^id,direction,status,/);
    assert.ok(text.includes('Hello from the console'), 'the message sent earlier is in the file');
    await accessible('exports');
    await photograph('exports');
  });

  test('an expired token is refreshed once without the user noticing', async () => {
    await advance(t, 9 * 60 * 60); // past the 8-hour token; the session lives on
    await open('/agents', 'AI agents');
    await page.getByText('No agents yet.').waitFor();
    assert.ok(!page.url().includes('/login'));
    await accessible('agents');
    await photograph('agents');
    await open('/numbers', 'Numbers');
    await page.getByRole('row').filter({ hasText: number }).waitFor();
    await accessible('numbers');
    await open('/settings', 'Settings');
    await accessible('settings');
    await photograph('settings');
  });

  test("the dashboard shows today's figures as the API counts them", async () => {
    await page.goto('/');
    await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    const since = await page.evaluate(() => {
      const now = new Date();
      return new Date(now.getFullYear(), now.getMonth(), now.getDate()).toISOString();
    });
    const stats = (
      await t.request('GET', `/api/v2/messages/stats?since=${encodeURIComponent(since)}`, {
        apiKey: await keyOf(),
      })
    ).body.data;
    assert.ok(stats.outbound.total >= 3, 'the message and the campaign were counted');
    const figure = (label: string) => page.locator('article').filter({ hasText: label }).locator('.figure');
    await figure('Messages sent')
      .filter({ hasText: String(stats.outbound.total) })
      .waitFor();
    await figure('Delivery rate')
      .filter({ hasText: `${Math.round(stats.deliveryRate * 100)} %` })
      .waitFor();
    await figure('Calls')
      .filter({ hasText: /^[1-9]/ })
      .waitFor();
  });

  test('switches organization and signs out', async () => {
    await page.goto('/');
    await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    await page.getByLabel('Organization').selectOption({ label: other.name });
    await page.getByText(`${other.name} (owner)`).waitFor();
    assert.equal(await page.getByLabel('Organization').inputValue(), other.id);
    await open('/messages', 'Messages');
    await page.getByText('No messages yet.').waitFor(); // the other organization's history is its own

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL(/\/login/);
    await page.goto('/messages');
    await page.waitForURL(/\/login/);
    assert.deepEqual(cspViolations, [], 'nothing the page did was blocked by its Content-Security-Policy');
    assert.deepEqual(pageErrors, [], `no uncaught errors in the page: ${pageErrors.join('; ')}`);
  });

  // ---------------------------------------------------------------------------------------------------------
  let key: string | undefined;
  async function keyOf(): Promise<string> {
    key ??= (await t.ctx.apiKeys.create(main.id, { name: 'test', scopes: ['*'] as never })).secret;
    return key;
  }
  async function campaignMessages(): Promise<{ id: string; status: string; to_number: string }[]> {
    const rows = await t.ctx.db.query<{ id: string; status: string; to_number: string }>(
      `SELECT id, status, to_number FROM messages WHERE organization_id = $1 AND campaign_id IS NOT NULL
        ORDER BY created_at, id`,
      [main.id],
    );
    return rows;
  }
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = WAIT.timeout): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
