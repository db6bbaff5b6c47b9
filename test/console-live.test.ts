// The console's live pages in Chromium (issue 37, docs/console.md "Live"): while messages and calls happen
// through the API (the simulated carrier and PBX, an AI agent on the line), the dashboard's figures and charts,
// the live calls page (its rows and their ticking timers) and an agent's transcript change without a reload,
// moved by the server-sent event stream. A queue's wallboard shows a caller waiting, then abandoned. axe finds no serious violation on
// these pages; they are photographed into docs/console/.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CONSOLE_DIST } from '../src/platform/http/console.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, type Sender, sender } from './helpers/messaging.ts';
import { createUser, type TestUser } from './helpers/portal.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = path.join(import.meta.dirname, '..', 'docs', 'console');
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WAIT = { timeout: 20_000 };

// As test/console.test.ts: the browser sees only HTTP, which the API tests cover on both engines.
const skip = !existsSync(CHROMIUM)
  ? `Chromium not installed at ${CHROMIUM}`
  : process.env.DATABASE_URL
    ? 'the browser tests run on the embedded database only (npm test without DATABASE_URL)'
    : false;

describe('the console’s live pages in Chromium', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let office: Sender;
  let user: TestUser;
  let queueId = '';
  let queueNumber = '';
  const pageErrors: string[] = [];
  const api = (method: string, apiPath: string, body?: unknown) =>
    t.request(method, `/api/v2${apiPath}`, { apiKey: office.key, body });
  const pbx = (callId: string, body: Record<string, unknown>) =>
    t.admin('POST', `/test/pbx/calls/${callId}`, body);

  before(async () => {
    assert.ok(existsSync(path.join(CONSOLE_DIST, 'index.html')), 'the console is built');
    t = await startTestApp();
    office = await sender(t, { name: 'Bright Smile Dental' });
    // The office's number is answered by an AI agent: its calls last until the test ends them.
    const agent = await api('POST', '/agents', {
      name: 'Receptionist',
      firstMessage: 'Bright Smile Dental, how can I help?',
      maxDurationSeconds: 300,
    });
    assert.equal(agent.status, 201, agent.text);
    const numberId = (await api('GET', '/numbers')).body.data[0].id;
    const routed = await api('PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'agent', target: agent.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
    const desk = await api('POST', '/extensions', { extension: '201', name: 'Front desk' });
    const queue = await api('POST', '/queues', {
      name: 'Front desk line',
      extensionIds: [desk.body.data.id],
    });
    assert.equal(queue.status, 201, queue.text);
    queueId = queue.body.data.id;
    // A second number whose callers wait in that queue.
    queueNumber = freshNumber();
    const added = await t.admin('POST', `/organizations/${office.id}/numbers`, {
      number: queueNumber,
      type: 'local',
    });
    assert.equal(added.status, 201, added.text);
    const flow = await api('POST', '/call-flows', { name: 'Queue', steps: [{ type: 'queue', queueId }] });
    assert.equal(flow.status, 201, flow.text);
    const queueLine = (await api('GET', '/numbers')).body.data.find(
      (row: { number: string }) => row.number === queueNumber,
    );
    const toQueue = await api('PATCH', `/numbers/${queueLine.id}`, {
      voiceRoute: { type: 'flow', target: flow.body.data.id },
    });
    assert.equal(toQueue.status, 200, toQueue.text);
    user = await createUser(t, { organizationIds: [office.id], role: 'member' });

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    const context = await browser.newContext({ baseURL: t.url, viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(WAIT.timeout);
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto('/login');
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    // A reload would lose this: its presence at the end says nothing was reloaded.
    await page.evaluate(() => {
      (window as unknown as { unreloaded: boolean }).unreloaded = true;
    });
  });

  after(async () => {
    await browser?.close();
    await t?.close();
  });

  async function accessible(name: string) {
    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
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

  /** Follows a link of the main navigation: the app changes page without loading a document. */
  async function navigate(label: string, heading: string) {
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: label, exact: true })
      .click();
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }

  const chart = (title: string) => page.locator('figure.hourly-chart', { hasText: title });

  test('the dashboard’s figures and charts move as messages and calls happen', async () => {
    const received = page.locator('.cards article', { hasText: 'Messages received' }).locator('.figure');
    await received.filter({ hasText: /^0$/ }).waitFor();
    await chart('Messages per hour').getByText('None in these 24 hours.').waitFor();
    await chart('Calls per hour').getByText('None in these 24 hours.').waitFor();

    for (const text of ['Is the shop open?', 'And on Sunday?']) {
      const inbound = await t.admin('POST', '/test/carrier/inbound', {
        from: freshNumber(),
        to: office.number,
        text,
      });
      assert.equal(inbound.status, 201, inbound.text);
    }
    await received.filter({ hasText: /^2$/ }).waitFor();
    await chart('Messages per hour')
      .getByText(/^2 in 24 hours \(0 sent, 2 received\)/)
      .waitFor();

    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550123', to: office.number });
    assert.equal(arrived.status, 201, arrived.text);
    await chart('Calls per hour')
      .getByText(/^1 in 24 hours \(1 answered, 0 not answered\)/)
      .waitFor();
    await page
      .locator('.cards article', { hasText: 'Calls' })
      .locator('.figure')
      .filter({ hasText: /^1$/ })
      .waitFor();
    await pbx(arrived.body.data.id, { event: 'completed' });

    // A week: 168 hours, the same calls and messages.
    await page.getByLabel('Last 7 days').check();
    await chart('Messages per hour')
      .getByText(/^2 in 168 hours/)
      .waitFor();
    await chart('Calls per hour')
      .getByText(/^1 in 168 hours/)
      .waitFor();
    // The chart's figures are also a table, for whoever cannot see the columns.
    await chart('Calls per hour').getByText('Calls per hour as a table').click();
    assert.equal(await chart('Calls per hour').locator('tbody tr').count(), 168);
    await chart('Calls per hour').getByText('Calls per hour as a table').click();
    await page.getByLabel('Last 24 hours').check();
    await accessible('dashboard');
    await photograph('dashboard-charts');
  });

  test('live calls: a call appears, its timer ticks, the agent’s transcript grows turn by turn, then it goes', async () => {
    await navigate('Live calls', 'Live calls');
    await page.getByText('No one is on the phone right now.').waitFor();
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550188', to: office.number });
    assert.equal(arrived.status, 201, arrived.text);
    const callId = arrived.body.data.id;
    const row = page
      .getByRole('table', { name: 'Calls now' })
      .getByRole('row')
      .filter({ hasText: '+14155550188' });
    await row.waitFor();
    const duration = row.getByTestId('call-duration');
    const first = await duration.textContent();
    assert.match(first ?? '', /^(Talking|Ringing) \d+ s$/);
    // The timer ticks in the browser, with nothing asked of the server.
    await page.waitForFunction(
      ([text]) => document.querySelector('[data-testid="call-duration"]')?.textContent !== text,
      [first],
    );

    const transcript = page.getByTestId('live-transcript');
    await transcript.getByText('Bright Smile Dental, how can I help?').waitFor();
    assert.equal(await transcript.locator('li').count(), 1, 'the agent has spoken once; the caller not yet');
    await pbx(callId, { event: 'utterance', text: 'Are you open on Saturdays?' });
    await transcript.getByText('Are you open on Saturdays?').waitFor();
    // The agent's answer follows as its own turn.
    await page.waitForFunction(
      () => document.querySelectorAll('[data-testid="live-transcript"] li').length >= 3,
    );
    const turns = await transcript.locator('li strong').allTextContents();
    assert.deepEqual(turns.slice(0, 3), ['Agent:', 'Caller:', 'Agent:']);
    const record = (await api('GET', `/agent-calls?callId=${callId}`)).body.data[0];
    assert.deepEqual(
      await transcript.locator('li').allTextContents(),
      record.transcript.map(
        (turn: { role: string; text: string }) =>
          `${turn.role === 'agent' ? 'Agent' : 'Caller'}: ${turn.text}`,
      ),
      'the page shows the transcript the API holds',
    );
    await accessible('live calls');
    await photograph('live-calls');

    await pbx(callId, { event: 'completed' });
    await page.getByText('No one is on the phone right now.').waitFor();
    assert.equal(
      await page.evaluate(() => (window as unknown as { unreloaded?: boolean }).unreloaded),
      true,
      'the dashboard and the live calls page changed without a reload',
    );
  });

  test('a queue’s wallboard: waiting, members, and how today’s waits ended', async () => {
    await page.goto(`/queues/${queueId}/wallboard`);
    await page.getByRole('heading', { level: 1, name: 'Wallboard: Front desk line' }).waitFor();
    await page.getByTestId('wallboard-waiting').filter({ hasText: /^0$/ }).waitFor();
    await page.getByTestId('wallboard-answered').filter({ hasText: /^0$/ }).waitFor();
    await page.getByTestId('wallboard-longest').filter({ hasText: '—' }).waitFor();
    await page.getByText('201 · Front desk').waitFor();

    // A caller joins the queue (the member's phone rings for them): the wallboard shows it without a reload.
    const caller = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550166', to: queueNumber });
    assert.equal(caller.status, 201, caller.text);
    await page.getByTestId('wallboard-waiting').filter({ hasText: /^1$/ }).waitFor();
    await page
      .getByTestId('wallboard-longest')
      .filter({ hasText: /^\d+ s$/ })
      .waitFor();
    await accessible('queue wallboard');
    await photograph('queue-wallboard');
    // They hang up before anyone answers: abandoned today.
    await pbx(caller.body.data.id, { event: 'completed' });
    await page.getByTestId('wallboard-waiting').filter({ hasText: /^0$/ }).waitFor();
    await page.getByTestId('wallboard-abandoned').filter({ hasText: /^1$/ }).waitFor();
  });

  test('no page error', () => {
    assert.deepEqual(pageErrors, []);
  });
});
