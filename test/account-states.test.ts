// The account-state policy (issue 31 finding 4; CONTRACT section 7): one table of standing × action in
// src/modules/organizations/account-policy.ts, shown in docs/account-states.md. These tests hold the document
// to the table, and walk every cell of the table through the HTTP API: each action is done as a client would,
// by an organization in each standing, and the answer must be what the table says.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  ACCOUNT_ACTIONS,
  ACCOUNT_POLICY,
  ACCOUNT_STANDINGS,
  type AccountAction,
  type AccountStanding,
  type AccountVerdict,
} from '../src/modules/organizations/index.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, type Sender, sender } from './helpers/messaging.ts';

/** How a verdict is written in the document's table. */
function written(verdict: AccountVerdict): string {
  if (verdict === 'allow') return 'yes';
  if (verdict === 'card') return 'with a verified card (else 403 `CARD_NOT_VERIFIED`)';
  return `${verdict.status} \`${verdict.code}\``;
}

test('docs/account-states.md shows exactly the policy table', () => {
  const document = readFileSync(new URL('../docs/account-states.md', import.meta.url), 'utf8');
  const rows = new Map<string, string[]>();
  for (const line of document.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const action = /^`([a-z_]+)`$/.exec(cells[1] ?? '')?.[1];
    if (action) rows.set(action, cells.slice(2, 2 + ACCOUNT_STANDINGS.length));
  }
  assert.deepEqual([...rows.keys()], [...ACCOUNT_ACTIONS], 'one row per action, in order');
  const header = document.split('\n').find((line) => line.startsWith('| Action'));
  assert.deepEqual(
    header
      ?.split('|')
      .slice(2, 2 + ACCOUNT_STANDINGS.length)
      .map((cell) => cell.trim().replaceAll('`', '')),
    [...ACCOUNT_STANDINGS],
  );
  for (const action of ACCOUNT_ACTIONS) {
    assert.deepEqual(
      rows.get(action),
      ACCOUNT_STANDINGS.map((standing) => written(ACCOUNT_POLICY[action][standing])),
      action,
    );
  }
});

describe('every standing × action through the HTTP API', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });

  /** What the API answered for one action: `yes`, or the refusal's status and code. */
  type Outcome = string;
  const outcomeOf = (res: { status: number; body: { code?: string } }, ok: number[]): Outcome =>
    ok.includes(res.status) ? 'yes' : `${res.status} ${res.body?.code}`;
  /** The answer the table calls for, for an organization without a verified card. */
  const expected = (verdict: AccountVerdict): Outcome =>
    verdict === 'allow'
      ? 'yes'
      : verdict === 'card'
        ? '403 CARD_NOT_VERIFIED'
        : `${verdict.status} ${verdict.code}`;

  /** Does each action once as an organization in `standing` (card not verified) and says what happened. */
  async function walk(standing: AccountStanding): Promise<Record<AccountAction, Outcome>> {
    // Set up while in good standing: no number yet, two extensions, a key; then move to the standing.
    const who = await sender(t, { cardVerified: false, monthlyAllowanceSegments: 1 }, { number: null });
    const extensions: string[] = [];
    for (const extension of ['101', '102']) {
      const created = await api(who, 'POST', '/extensions', { extension, name: `Desk ${extension}` });
      assert.equal(created.status, 201, created.text);
      extensions.push(created.body.data.id);
    }
    const agent = await api(who, 'POST', '/agents', { name: 'Receptionist', firstMessage: 'Hello.' });
    assert.equal(agent.status, 201, agent.text);
    const offered = (await api(who, 'GET', '/numbers/available?areaCode=415')).body.data as {
      number: string;
    }[];
    const state =
      standing === 'suspended'
        ? { subscriptionState: 'paid', suspended: true }
        : { subscriptionState: standing, suspended: false };
    assert.equal((await t.admin('PATCH', `/organizations/${who.id}`, state)).status, 200);

    const outcome = {} as Record<AccountAction, Outcome>;
    outcome.use_account = outcomeOf(await api(who, 'GET', '/me'), [200]);
    outcome.buy_first_number = outcomeOf(
      await api(who, 'POST', '/numbers', { number: offered[0]!.number }),
      [201],
    );
    // Whatever that answered, the organization now holds a number (the operator adds one if the buy was refused).
    let number = offered[0]!.number;
    if (outcome.buy_first_number !== 'yes') {
      number = freshNumber();
      assert.equal(
        (await t.admin('POST', `/organizations/${who.id}/numbers`, { number, type: 'local' })).status,
        201,
      );
    }
    outcome.buy_another_number = outcomeOf(
      await api(who, 'POST', '/numbers', { number: offered[1]!.number }),
      [201],
    );
    // The allowance is one segment: the first send is within it, the second goes beyond.
    const text = { to: '+14155550123', from: number, message: 'Hello' };
    outcome.send_within_allowance = outcomeOf(await api(who, 'POST', '/messages/send', text), [202]);
    // (Suspended: the guard refuses both sends before any count, as the table says.)
    outcome.send_beyond_allowance = outcomeOf(await api(who, 'POST', '/messages/send', text), [202]);
    outcome.place_outbound_call = outcomeOf(
      await api(who, 'POST', '/calls', { from: number, to: '+14155550124' }),
      [202],
    );
    // An AI agent's call is an outbound call too (issue 31: past due, it still went out).
    const agentCall = outcomeOf(
      await api(who, 'POST', `/agents/${agent.body.data.id}/calls`, { to: '+14155550126', from: number }),
      [202],
    );
    assert.equal(agentCall, outcome.place_outbound_call, 'an agent call is refused exactly as POST /calls');
    outcome.place_internal_call = outcomeOf(
      await api(who, 'POST', '/calls', { from: '101', to: '102' }),
      [202],
    );
    // The number rings extension 101 (set in the database: a suspended organization cannot PATCH it).
    await t.ctx.db.query(
      `UPDATE phone_numbers SET voice_route_type = 'extension', voice_route_target = $2 WHERE number = $1`,
      [number, extensions[0]],
    );
    // An inbound call always gets a record; a refused one ends `failed` at once.
    const inbound = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550125', to: number });
    assert.ok([200, 201, 202].includes(inbound.status), inbound.text);
    const call = inbound.body.data;
    outcome.receive_call = call.status === 'failed' ? `refused ${call.hangupCause}` : 'yes';
    return outcome;
  }

  for (const standing of ACCOUNT_STANDINGS) {
    test(`${standing}: each action answers as the table says`, async () => {
      const outcome = await walk(standing);
      const want = Object.fromEntries(
        ACCOUNT_ACTIONS.map((action) => {
          const verdict = ACCOUNT_POLICY[action][standing];
          if (action === 'receive_call')
            return [action, verdict === 'allow' ? 'yes' : 'refused account_suspended'];
          return [action, expected(verdict)];
        }),
      );
      assert.deepEqual(outcome, want);
    });
  }

  test('the contract in words: past due cannot buy a number nor place a call (402 BILLING_REQUIRED)', () => {
    assert.deepEqual(ACCOUNT_POLICY.buy_first_number.past_due, { status: 402, code: 'BILLING_REQUIRED' });
    assert.deepEqual(ACCOUNT_POLICY.place_outbound_call.past_due, { status: 402, code: 'BILLING_REQUIRED' });
    assert.deepEqual(ACCOUNT_POLICY.buy_another_number.trial, { status: 402, code: 'BILLING_REQUIRED' });
    for (const action of ACCOUNT_ACTIONS) {
      assert.deepEqual(ACCOUNT_POLICY[action].suspended, { status: 403, code: 'ACCOUNT_SUSPENDED' });
    }
  });
});
