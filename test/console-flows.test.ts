// The console's call flows, ring groups and queues (issue 33) end to end in a real browser: Debian's Chromium
// driven by playwright-core against a real server on loopback, under its Content-Security-Policy, as
// test/console.test.ts does. An owner builds a flow from the after-hours template (the editor asks for what the
// template leaves open, and checks HH:MM as it is typed), saves it and sees it listed; the server's refusals (a
// time zone its tz database does not know, an extension deleted meanwhile) appear at the field they name; a ring
// group is created and changed; a flow from the sales/support template dials it; a queue is created with
// onTimeout steps and its page shows the live state (the real endpoint's answer, and a contract-shaped one
// changing when an event on the live stream makes the page read it again). A member reads a flow but cannot change it. axe on each page.
// The editor's model without a browser: test/console-flow-model.test.ts.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CONSOLE_DIST } from '../src/platform/http/console.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn, type TestUser } from './helpers/portal.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = path.join(import.meta.dirname, '..', 'docs', 'console');
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WAIT = { timeout: 20_000 };
const skip = !existsSync(CHROMIUM)
  ? `Chromium not installed at ${CHROMIUM}`
  : process.env.DATABASE_URL
    ? 'the browser test runs on the embedded database only (npm test without DATABASE_URL)'
    : false;

describe('call flows, ring groups and queues in the console (Chromium)', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let acme: Sender;
  let owner: TestUser;
  let member: TestUser;
  const ext: Record<string, string> = {};
  let flowId = '';
  const cspViolations: string[] = [];
  const pageErrors: string[] = [];

  const api = (method: string, apiPath: string, body?: unknown) =>
    t.request(method, `/api/v2${apiPath}`, { apiKey: acme.key, body });
  const at = (fieldPath: string) => page.locator(`[data-path="${fieldPath}"]`);
  const problemAt = (fieldPath: string) => page.locator(`[data-problem-for="${fieldPath}"]`);

  before(async () => {
    assert.ok(
      existsSync(path.join(CONSOLE_DIST, 'index.html')),
      'the console is built (npm ci runs its build)',
    );
    t = await startTestApp();
    acme = await sender(t, { name: 'Acme Dental' });
    for (const [number, name] of [
      ['101', 'Front desk'],
      ['102', 'Billing'],
      ['103', 'Sales desk'],
      ['104', 'Support desk'],
    ] as const) {
      const made = await api('POST', '/extensions', { extension: number, name });
      assert.equal(made.status, 201, made.text);
      ext[number] = made.body.data.id;
    }
    owner = await createUser(t, { organizationIds: [acme.id], role: 'owner' });
    member = await createUser(t, { organizationIds: [acme.id], role: 'member' });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    page = await signedIn(owner);
  });

  after(async () => {
    await browser?.close();
    await t?.close();
  });

  async function signedIn(user: TestUser): Promise<Page> {
    const context = await browser.newContext({ baseURL: t.url, viewport: { width: 1280, height: 900 } });
    const opened = await context.newPage();
    opened.setDefaultTimeout(WAIT.timeout);
    opened.on('console', (message) => {
      if (message.type() === 'error' && /Content.Security.Policy/i.test(message.text())) {
        cspViolations.push(message.text());
      }
    });
    opened.on('pageerror', (error) => pageErrors.push(error.message));
    await opened.goto('/login');
    await opened.getByLabel('E-mail').fill(user.email);
    await opened.getByLabel('Password').fill(user.password);
    await opened.getByRole('button', { name: 'Sign in' }).click();
    await opened.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    return opened;
  }

  async function accessible(name: string, on: Page = page) {
    await on.evaluate(axeSource);
    const violations = await on.evaluate(async () => {
      const axe = (globalThis as unknown as { axe: { run: (...args: unknown[]) => Promise<any> } }).axe;
      const result = await axe.run(document, { resultTypes: ['violations'] });
      return result.violations
        .filter((v: { impact: string }) => v.impact === 'serious' || v.impact === 'critical')
        .map((v: { id: string; nodes: { target: string[] }[] }) => ({
          id: v.id,
          targets: v.nodes.map((n) => n.target.join(' ')).slice(0, 5),
        }));
    });
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 2)}`);
  }

  async function photograph(name: string) {
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, `${name}-desktop.png`), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: path.join(SHOTS, `${name}-phone.png`) });
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  async function choose(fieldPath: string, label: string) {
    await at(fieldPath).locator('option', { hasText: label }).waitFor({ state: 'attached' });
    await at(fieldPath).selectOption({ label });
  }

  test('builds a flow from the after-hours template, fills what it leaves open, saves it and sees it listed', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Call flows' }).click();
    await page.getByRole('heading', { level: 1, name: 'Call flows' }).waitFor();
    await page.getByText('No call flows yet.').waitFor();
    await page.getByRole('link', { name: 'New call flow' }).click();
    await page.getByRole('heading', { level: 1, name: 'New call flow' }).waitFor();
    await page.getByRole('button', { name: 'Use this template (After-hours menu)' }).click();
    assert.equal(await page.getByLabel('Name', { exact: true }).inputValue(), 'After-hours menu');
    const dialOne = 'steps.0.whenOpen.0.branches.1.0.targets.0.target';
    const voicemail = 'steps.0.whenClosed.1.extensionId';

    // Saved as it is, the template is refused by the editor itself: the extensions are the person's to pick.
    await page.getByRole('button', { name: 'Create flow' }).click();
    await problemAt(dialOne).filter({ hasText: 'Extension is required' }).waitFor();
    await problemAt(voicemail).filter({ hasText: 'is required: choose an extension' }).waitFor();
    assert.equal(await at(dialOne).getAttribute('aria-invalid'), 'true');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-path')), dialOne);

    await page.getByLabel('Name', { exact: true }).fill('Front desk hours');
    await at('steps.0.timezone').fill('America/New_York');
    // HH:MM is checked as it is typed.
    await at('steps.0.open.0.from').fill('8:3');
    await problemAt('steps.0.open.0.from').filter({ hasText: 'must be a time HH:MM' }).waitFor();
    await at('steps.0.open.0.from').fill('08:30');
    await problemAt('steps.0.open.0.from').waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Add holiday' }).click();
    await at('steps.0.holidays.0').fill('2026-12-24');
    await choose(dialOne, '101 · Front desk');
    await choose('steps.0.whenOpen.0.branches.2.0.targets.0.target', '102 · Billing');
    await choose(voicemail, '101 · Front desk');
    await at('steps.0.whenOpen.0.prompt.text').fill('For appointments press 1. For billing press 2.');
    await accessible('call flow editor');
    await page.getByRole('button', { name: 'Create flow' }).click();

    await page.waitForURL(/\/call-flows\/flow_[a-z0-9]+$/);
    flowId = page.url().split('/').pop()!;
    // The menu repeats by starting the flow again: created first, then given its own id (version 2).
    await page.getByTestId('flow-version').filter({ hasText: 'Version 2' }).waitFor();
    const stored = (await api('GET', `/call-flows/${flowId}`)).body.data;
    assert.equal(stored.name, 'Front desk hours');
    assert.deepEqual(stored.steps, [
      {
        type: 'hours',
        timezone: 'America/New_York',
        open: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '08:30', to: '17:00' }],
        holidays: ['2026-12-24'],
        whenOpen: [
          {
            type: 'gather',
            input: ['dtmf'],
            numDigits: 1,
            timeoutSeconds: 5,
            prompt: { type: 'say', text: 'For appointments press 1. For billing press 2.' },
            branches: {
              '1': [{ type: 'dial', targets: [{ type: 'extension', target: ext['101'] }] }],
              '2': [{ type: 'dial', targets: [{ type: 'extension', target: ext['102'] }] }],
            },
            otherwise: [
              { type: 'say', text: 'Sorry, I did not get that.' },
              { type: 'redirect', flowId },
            ],
          },
        ],
        whenClosed: [
          { type: 'say', text: 'We are closed. Please leave a message after the tone.' },
          { type: 'voicemail', extensionId: ext['101'] },
        ],
      },
    ]);
    // The redirect names this very flow, shown as such.
    assert.equal(
      await at('steps.0.whenOpen.0.otherwise.1.flowId').locator('option:checked').textContent(),
      'This flow (start it again)',
    );

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Call flows' }).click();
    const row = page.getByRole('row').filter({ hasText: 'Front desk hours' });
    await row.getByRole('cell', { name: '2', exact: true }).first().waitFor();
    await accessible('call flows');
    await photograph('call-flows');
  });

  test("the server's refusal appears at the field it names, and a fixed flow saves as the next version", async () => {
    await page.goto(`/call-flows/${flowId}`);
    await page.getByRole('heading', { level: 1, name: 'Front desk hours' }).waitFor();
    // A name the editor lets through (it has the shape of one), which the server's tz database does not know.
    await at('steps.0.timezone').fill('Mars/Olympus_Mons');
    await page.getByRole('button', { name: 'Save a new version' }).click();
    const refusal = problemAt('steps.0.timezone');
    await refusal.filter({ hasText: 'Time zone is not an IANA time zone name' }).waitFor();
    assert.equal(await at('steps.0.timezone').getAttribute('aria-invalid'), 'true');
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute('data-path')),
      'steps.0.timezone',
    );
    await page
      .getByRole('alert')
      .filter({ hasText: 'steps.0.timezone is not an IANA time zone name' })
      .waitFor();
    assert.equal(
      (await api('GET', `/call-flows/${flowId}`)).body.data.version,
      2,
      'a refusal stores nothing',
    );

    // Deep in the tree: an extension deleted after the editor listed it.
    await at('steps.0.timezone').fill('Europe/Paris');
    await refusal.waitFor({ state: 'detached' });
    assert.equal((await api('DELETE', `/extensions/${ext['102']}`)).status, 200);
    await page.getByRole('button', { name: 'Save a new version' }).click();
    const deep = 'steps.0.whenOpen.0.branches.2.0.targets.0.target';
    await problemAt(deep)
      .filter({ hasText: `names no extension ${ext['102']} in this organization` })
      .waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-path')), deep);
    await accessible('a refused flow');
    await photograph('call-flow-refused');

    await choose(deep, '103 · Sales desk');
    await page.getByRole('button', { name: 'Save a new version' }).click();
    await page.getByTestId('flow-version').filter({ hasText: 'Version 3' }).waitFor();
    const stored = (await api('GET', `/call-flows/${flowId}`)).body.data;
    assert.equal(stored.steps[0].timezone, 'Europe/Paris');
    assert.equal(stored.steps[0].whenOpen[0].branches['2'][0].targets[0].target, ext['103']);
  });

  test('creates a ring group, changes it, and a sales/support flow dials it', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Ring groups' }).click();
    await page.getByRole('heading', { level: 1, name: 'Ring groups' }).waitFor();
    await page.getByText('New ring group').click();
    const form = page.getByRole('form', { name: 'New ring group' });
    await form.getByLabel('Name').fill('Sales');
    await form.getByLabel('Strategy').selectOption('sequential');
    await form.getByLabel('Ring time (seconds)').fill('400');
    await form.getByText('Ring time must be 5 to 300 seconds').waitFor();
    await form.getByLabel('Ring time (seconds)').fill('15');
    for (const label of ['103 · Sales desk', '101 · Front desk']) {
      await form.getByLabel('Extension to add').selectOption({ label });
      await form.getByRole('button', { name: 'Add member' }).click();
    }
    await form.getByRole('button', { name: 'Up (101 · Front desk)' }).click();
    await form.getByRole('button', { name: 'Create ring group' }).click();
    const row = page.getByRole('row').filter({ hasText: 'Sales' });
    await row.getByText('101 · Front desk, 103 · Sales desk').waitFor();
    const [group] = (await api('GET', '/ring-groups')).body.data;
    assert.deepEqual(
      { extensionIds: group.extensionIds, strategy: group.strategy, ringSeconds: group.ringSeconds },
      { extensionIds: [ext['101'], ext['103']], strategy: 'sequential', ringSeconds: 15 },
    );

    await row.getByRole('button', { name: 'Edit Sales' }).click();
    const edit = page.getByRole('form', { name: 'Edit Sales' });
    await edit.getByLabel('Ring time (seconds)').fill('25');
    await edit.getByRole('button', { name: 'Save' }).click();
    await row.getByText('25 s').waitFor();
    assert.equal((await api('GET', `/ring-groups/${group.id}`)).body.data.ringSeconds, 25);
    await accessible('ring groups');
    await photograph('ring-groups');

    const support = await api('POST', '/ring-groups', { name: 'Support', extensionIds: [ext['104']] });
    assert.equal(support.status, 201, support.text);
    await page.goto('/call-flows/new');
    await page.getByRole('button', { name: 'Use this template (Sales/support menu)' }).click();
    await choose('steps.0.branches.1.0.targets.0.target', 'Sales');
    await choose('steps.0.branches.2.0.targets.0.target', 'Support');
    // A greeting added at the end and moved to the top; the focus goes into it, then follows it.
    await page.getByLabel('Type of a new step in the flow', { exact: true }).selectOption('say');
    await page.getByRole('button', { name: 'Add step to the flow', exact: true }).click();
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute('data-path')),
      'steps.1.text',
    );
    await page.keyboard.type('Thank you for calling Acme.');
    await page.getByRole('button', { name: 'Up (step 2 of the flow)' }).click();
    await at('steps.0.text').and(page.locator('textarea')).waitFor();
    assert.equal(await at('steps.0.text').inputValue(), 'Thank you for calling Acme.');
    assert.equal(
      await page.evaluate(() => document.activeElement?.textContent),
      'Down (step 1 of the flow)',
      'the focus follows the step it moved (Up is disabled at the top)',
    );
    await page.getByRole('button', { name: 'Create flow' }).click();
    await page.waitForURL(/\/call-flows\/flow_[a-z0-9]+$/);
    const id = page.url().split('/').pop()!;
    const menu = (await api('GET', `/call-flows/${id}`)).body.data;
    assert.equal(menu.name, 'Sales/support menu');
    assert.deepEqual(menu.steps[0], { type: 'say', text: 'Thank you for calling Acme.' });
    assert.deepEqual(menu.steps[1].branches, {
      '1': [{ type: 'dial', targets: [{ type: 'ring_group', target: group.id }] }],
      '2': [{ type: 'dial', targets: [{ type: 'ring_group', target: support.body.data.id }] }],
    });
    assert.deepEqual(menu.steps[1].otherwise[1], { type: 'redirect', flowId: id });
  });

  test('creates a queue with steps after the longest wait; its page shows the live state and follows it', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Queues' }).click();
    await page.getByRole('link', { name: 'New queue' }).click();
    await page.getByRole('heading', { level: 1, name: 'New queue' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Help desk');
    for (const label of ['101 · Front desk', '103 · Sales desk']) {
      await page.getByLabel('Extension to add').selectOption({ label });
      await page.getByRole('button', { name: 'Add member' }).click();
    }
    await page.getByLabel('Longest wait (seconds)').fill('5');
    await problemAt('maxWaitSeconds').filter({ hasText: 'must be from 10 to 7200' }).waitFor();
    await page.getByLabel('Longest wait (seconds)').fill('300');
    await page.getByLabel('Tell waiting callers their place in line').check();
    await page.getByLabel('Type of a new step in after the longest wait').selectOption('voicemail');
    await page.getByRole('button', { name: 'Add step to after the longest wait' }).click();
    await choose('onTimeout.0.extensionId', '103 · Sales desk');
    await page.getByRole('button', { name: 'Create queue' }).click();
    await page.waitForURL(/\/queues\/q_[a-z0-9]+$/);
    const queueId = page.url().split('/').pop()!;
    const queue = (await api('GET', `/queues/${queueId}`)).body.data;
    assert.deepEqual(
      [queue.extensionIds, queue.maxWaitSeconds, queue.announcePosition, queue.onTimeout],
      [[ext['101'], ext['103']], 300, true, [{ type: 'voicemail', extensionId: ext['103'] }]],
    );

    // The real endpoint: the queue runtime answers it, or (before it is on this server) a 404 shown as such.
    const live = page.getByTestId('queue-live');
    const real = await t.request('GET', `/v2/portal/queues/${queueId}/live`, {
      token: await signIn(t, owner),
    });
    if (real.status === 404) {
      await live.getByText('The live state of this queue is not available on this server yet.').waitFor();
    } else {
      assert.equal(real.status, 200, real.text);
      await live.getByText('No one is waiting.').waitFor();
      await live.getByRole('row').filter({ hasText: '101 · Front desk' }).waitFor();
    }
    await accessible('queue');

    // The contract's shape (CONTRACT section 13), changing between two of the page's reads.
    const now = Date.now();
    let body = {
      waiting: [
        {
          callId: 'call_second',
          from: '+14155550102',
          since: new Date(now - 30_000).toISOString(),
          position: 2,
        },
        {
          callId: 'call_first',
          from: '+14155550101',
          since: new Date(now - 125_000).toISOString(),
          position: 1,
        },
      ],
      members: [
        { extensionId: ext['101'], state: 'on_call' },
        { extensionId: ext['103'], state: 'available' },
      ],
    };
    let reads = 0;
    await page.route(`**/v2/portal/queues/${queueId}/live?*`, (route) => {
      reads += 1;
      return route.fulfill({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({ success: true, data: body }),
      });
    });
    await page.reload();
    const waitingRows = live.getByRole('table', { name: 'Callers waiting' }).locator('tbody tr');
    await waitingRows.first().filter({ hasText: '+14155550101' }).waitFor();
    assert.deepEqual(await waitingRows.locator('td:nth-child(2)').allTextContents(), [
      '+14155550101',
      '+14155550102',
    ]);
    assert.match(
      (await waitingRows.first().locator('td:nth-child(3)').textContent()) ?? '',
      /^2 min 0[5-9] s$/,
    );
    await live.getByRole('row').filter({ hasText: '101 · Front desk' }).getByText('on call').waitFor();
    await live.getByRole('row').filter({ hasText: '103 · Sales desk' }).getByText('available').waitFor();
    await photograph('queue');

    // The first caller is answered: a call event on the live stream makes the page read again, and it shows it.
    body = {
      waiting: [{ ...body.waiting[0]!, position: 1 }],
      members: [
        { extensionId: ext['101'], state: 'on_call' },
        { extensionId: ext['103'], state: 'on_call' },
      ],
    };
    const before = reads;
    const event = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550190', to: acme.number });
    assert.equal(event.status, 201, event.text);
    await live
      .getByRole('row')
      .filter({ hasText: '103 · Sales desk' })
      .getByText('on call')
      .waitFor({ timeout: 10_000 });
    assert.ok(reads > before, 'read again without a reload');
    assert.deepEqual(await waitingRows.locator('td:nth-child(2)').allTextContents(), ['+14155550102']);
    await page.unroute(`**/v2/portal/queues/${queueId}/live?*`);
  });

  test('a member reads a flow and cannot change it', async () => {
    const reader = await signedIn(member);
    await reader.goto('/call-flows');
    await reader.getByRole('link', { name: 'Front desk hours' }).waitFor();
    assert.equal(await reader.getByRole('link', { name: 'New call flow' }).count(), 0);
    await reader.getByRole('link', { name: 'Front desk hours' }).click();
    await reader.getByText('You can read this flow; owners and admins change it.').waitFor();
    assert.equal(await reader.locator('[data-path="steps.0.timezone"]').inputValue(), 'Europe/Paris');
    assert.equal(await reader.locator('[data-path="steps.0.timezone"]').isDisabled(), true);
    assert.equal(await reader.getByRole('button', { name: /Save|Add step|Remove/ }).count(), 0);
    await accessible('a flow read by a member', reader);
    await reader.context().close();
    assert.deepEqual(cspViolations, [], 'nothing the pages did was blocked by their Content-Security-Policy');
    assert.deepEqual(pageErrors, [], `no uncaught errors in the pages: ${pageErrors.join('; ')}`);
  });
});
