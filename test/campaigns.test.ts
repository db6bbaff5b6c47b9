// Campaigns over a real socket (CONTRACT section 8): create, edit, launch, pause, resume, cancel and delete
// with every refusal; the engine's pacing, quiet hours, plan limits and exactly-once; statistics and the
// 2026-06-10 version gate. The test clock decides time: `runFor` moves it in steps and runs what falls due.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeA, isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { campaignKit } from './helpers/campaigns.ts';
import { freshNumber, runFor, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

/** Noon in Washington, DC on a weekday: inside the default quiet hours there. */
const NOON_EASTERN = new Date('2026-11-24T17:00:00.000Z');

describe('campaigns', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const { api, list, campaign, get, messagesOf } = campaignKit(() => t);

  test('launch sends each recipient one message, merge variables filled, a phone in two lists once', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const a = await list(acme, 3);
    const b = await list(acme, 1);
    // The first contact of list a is also in list b: one message.
    await api(acme, 'POST', `/contact-lists/${b.listId}/members`, { contactIds: [a.contacts[0]!.id] });
    const c = await campaign(acme, { contactListIds: [a.listId, b.listId] });
    assert.equal(c.status, 'draft');

    const launched = await api(acme, 'POST', `/campaigns/${c.id}/launch`);
    assert.equal(launched.status, 200, launched.text);
    assert.equal(launched.body.data.status, 'sending');
    assert.equal(launched.body.data.recipientCount, 4);

    await runFor(t, 10);
    const messages = await messagesOf(c.id);
    assert.equal(messages.length, 4);
    assert.equal(new Set(messages.map((m) => m.to_number)).size, 4);
    assert.ok(messages.every((m) => m.status === 'sent'));
    assert.ok(messages.some((m) => m.body === 'Hi Ann0'));
    const done = await get(acme, c.id);
    assert.equal(done.status, 'completed');
    assert.equal(done.message_count, 4);
    assert.equal(done.messages_sent, 4);
    assert.equal(done.deliveryStats.awaiting, 4);
    assert.equal(done.deliveryStats.attempted, 4);
    assert.equal(done.deliveryStats.provisional, true);
    assert.equal(done.deliveryStats.deliveryRate, 0);
  });

  test('an MMS campaign: media URLs on every message, each counted as 3 segments', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const l = await list(acme, 2);
    const c = await campaign(acme, {
      contactListIds: [l.listId],
      message: 'Spring sale',
      mediaUrls: ['https://cdn.example.com/sale.png'],
    });
    assert.deepEqual((await get(acme, c.id)).mediaUrls, ['https://cdn.example.com/sale.png']);
    await api(acme, 'POST', `/campaigns/${c.id}/launch`);
    await runFor(t, 3);
    const rows = await t.ctx.db.query<{ media_urls: string[]; media_count: number; segments: number }>(
      'SELECT media_urls, media_count, segments FROM messages WHERE campaign_id = $1',
      [c.id],
    );
    assert.equal(rows.length, 2);
    for (const row of rows)
      assert.deepEqual(row, {
        media_urls: ['https://cdn.example.com/sale.png'],
        media_count: 1,
        segments: 3,
      });
    assert.equal((await api(acme, 'GET', `/campaigns/${c.id}/analytics`)).body.data.segments, 6);
    const bad = await api(acme, 'POST', '/campaigns', {
      name: 'x',
      message: 'hi',
      contactListIds: [l.listId],
      mediaUrls: ['ftp://example.com/a.png'],
    });
    assert.equal(bad.status, 400);
  });

  test('refusals: unknown list 400, unsupported merge variable 422, wrong state 409, other organization 404', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const other = await sender(t, {}, { type: 'toll_free' });
    const { listId } = await list(acme, 1);

    const unknown = await api(acme, 'POST', '/campaigns', {
      name: 'x',
      message: 'hi',
      contactListIds: ['cl_nope'],
    });
    assert.equal(unknown.status, 400);
    assert.ok(isShapeB(unknown.body));

    const merge = await api(acme, 'POST', '/campaigns', {
      name: 'x',
      message: 'Hi {{nickname}}',
      contactListIds: [listId],
    });
    assert.equal(merge.status, 422);
    assert.equal(merge.body.code, 'UNSUPPORTED_MERGE_VARS');

    const badZone = await api(acme, 'POST', '/campaigns', {
      name: 'x',
      message: 'hi',
      contactListIds: [listId],
      timezone: 'Mars/Olympus',
    });
    assert.equal(badZone.status, 400);

    const notOurs = await api(acme, 'POST', '/campaigns', {
      name: 'x',
      message: 'hi',
      contactListIds: [listId],
      senders: [other.number],
    });
    assert.equal(notOurs.status, 400);

    const c = await campaign(acme, { contactListIds: [listId] });
    const patchMerge = await api(acme, 'PATCH', `/campaigns/${c.id}`, { message: '{{nickname}}' });
    assert.equal(patchMerge.status, 422);
    assert.equal(patchMerge.body.code, 'UNSUPPORTED_MERGE_VARS');

    assert.equal((await api(other, 'GET', `/campaigns/${c.id}`)).status, 404);
    assert.equal((await api(other, 'POST', `/campaigns/${c.id}/launch`)).status, 404);
    assert.equal((await api(other, 'DELETE', `/campaigns/${c.id}`)).status, 404);

    const pauseDraft = await api(acme, 'POST', `/campaigns/${c.id}/pause`);
    assert.equal(pauseDraft.status, 409);
    assert.equal(pauseDraft.body.code, 'CAMPAIGN_STATE');
    assert.match(pauseDraft.body.error, /draft/);

    assert.equal((await api(acme, 'POST', `/campaigns/${c.id}/launch`)).status, 200);
    const patchSending = await api(acme, 'PATCH', `/campaigns/${c.id}`, { name: 'new' });
    assert.equal(patchSending.status, 409);
    assert.equal(patchSending.body.code, 'CAMPAIGN_STATE');
    const deleteSending = await api(acme, 'DELETE', `/campaigns/${c.id}`);
    assert.equal(deleteSending.status, 409);
    const relaunch = await api(acme, 'POST', `/campaigns/${c.id}/launch`);
    assert.equal(relaunch.status, 409);
    assert.equal((await get(acme, c.id)).name, 'Promo');

    // A draft can be deleted; a portal twin answers in Shape A.
    const draft = await campaign(acme, { contactListIds: [listId] });
    assert.equal((await api(acme, 'DELETE', `/campaigns/${draft.id}`)).status, 200);
    assert.equal((await api(acme, 'GET', `/campaigns/${draft.id}`)).status, 404);
  });

  /** The dispatch slots booked for a campaign's messages (the job's run_at is the moment of hand-over). */
  const slotsOf = (campaignId: string) =>
    t.ctx.db.query<{ from_number: string; run_at: Date }>(
      `SELECT m.from_number, j.run_at FROM messages m JOIN jobs j ON j.dedupe_key = 'dispatch:' || m.id
        WHERE m.campaign_id = $1 ORDER BY j.run_at`,
      [campaignId],
    );

  test('pacing: toll-free 3/s, Canadian under 1/s per number, and the plan speed over several numbers', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    // Toll-free on enterprise (100/s): the number's 3/s is the bound.
    const tollFree = await sender(t, {}, { type: 'toll_free' });
    const a = await list(tollFree, 12);
    const c1 = await campaign(tollFree, { contactListIds: [a.listId] });
    await api(tollFree, 'POST', `/campaigns/${c1.id}/launch`);
    await runFor(t, 8, 0.5);
    const tf = (await slotsOf(c1.id)).map((s) => s.run_at.getTime());
    assert.equal(tf.length, 12);
    for (let i = 1; i < tf.length; i++)
      assert.ok(tf[i]! - tf[i - 1]! >= 333, `toll-free gap ${tf[i]! - tf[i - 1]!}`);
    assert.ok(tf[tf.length - 1]! - tf[0]! <= 11 * 334 + 50, 'and no slower than the number allows');

    // Canadian local: just under 1/s.
    const canadian = await sender(t, {}, { type: 'ca_local' });
    const b = await list(
      canadian,
      4,
      () => ({}),
      () => freshNumber('416'),
    );
    const c2 = await campaign(canadian, { contactListIds: [b.listId] });
    await api(canadian, 'POST', `/campaigns/${c2.id}/launch`);
    await runFor(t, 8, 0.5);
    const ca = (await slotsOf(c2.id)).map((s) => s.run_at.getTime());
    assert.equal(ca.length, 4);
    for (let i = 1; i < ca.length; i++)
      assert.ok(ca[i]! - ca[i - 1]! >= 1111, `Canadian gap ${ca[i]! - ca[i - 1]!}`);

    // Pro (5/s) with four toll-free numbers (12/s together): the plan is the bound, each number still ≤ 3/s.
    const pro = await sender(t, { plan: 'pro' }, { type: 'toll_free' });
    const extra: string[] = [];
    for (let i = 0; i < 3; i++) {
      const number = freshNumber('800');
      assert.equal(
        (await t.admin('POST', `/organizations/${pro.id}/numbers`, { number, type: 'toll_free' })).status,
        201,
      );
      extra.push(number);
    }
    const p = await list(pro, 40);
    const c3 = await campaign(pro, { contactListIds: [p.listId], senders: [pro.number, ...extra] });
    const launchedAt = t.ctx.clock.now().getTime();
    await api(pro, 'POST', `/campaigns/${c3.id}/launch`);
    await runFor(t, 12, 0.5);
    const slots = await slotsOf(c3.id);
    assert.equal(slots.length, 40);
    const times = slots.map((s) => s.run_at.getTime());
    // The plan's allowance is never passed: by any moment, at most one message per 200 ms since the launch
    // (a message may leave later than its plan slot, when its number is busy, but never earlier).
    for (const [k, at] of times.entries())
      assert.ok(at - launchedAt >= k * 200 - 1, `message ${k} at +${at - launchedAt} ms`);
    const span = (times[times.length - 1]! - launchedAt) / 1000;
    // The test clock is real time plus its moves, so a loaded machine stretches the span a little (4.50/s seen
    // on CI): "close" is at least 4 a second against the plan's 5.
    assert.ok(39 / span >= 4, `and close to the plan's speed: ${(39 / span).toFixed(2)}/s`);
    const byNumber = new Map<string, number[]>();
    for (const slot of slots)
      byNumber.set(slot.from_number, [...(byNumber.get(slot.from_number) ?? []), slot.run_at.getTime()]);
    assert.equal(byNumber.size, 4, 'every sender of the pool is used');
    for (const list of byNumber.values()) {
      for (let i = 1; i < list.length; i++) assert.ok(list[i]! - list[i - 1]! >= 333);
    }
    assert.equal((await get(pro, c3.id)).status, 'completed');

    // 10DLC at the basic trust tier (240 a minute): 4/s.
    const tenDlc = await sender(t, {}, { type: 'local' });
    const d = await list(tenDlc, 6);
    const c4 = await campaign(tenDlc, { contactListIds: [d.listId] });
    await api(tenDlc, 'POST', `/campaigns/${c4.id}/launch`);
    await runFor(t, 4, 0.5);
    const local = (await slotsOf(c4.id)).map((s) => s.run_at.getTime());
    assert.equal(local.length, 6);
    for (let i = 1; i < local.length; i++)
      assert.ok(local[i]! - local[i - 1]! >= 250, `10DLC gap ${local[i]! - local[i - 1]!}`);
    assert.ok(local[local.length - 1]! - local[0]! <= 5 * 250 + 50);
  });

  test('the new-account limit (2,000 segments in 72 hours) holds a campaign until the 72 hours end', async () => {
    t.ctx.clock.set(new Date(NOON_EASTERN.getTime() + 7 * 86_400_000));
    const fresh = await sender(t, {}, { type: 'toll_free' });
    const senders = [fresh.number];
    for (let i = 0; i < 9; i++) {
      const number = freshNumber('800');
      await t.admin('POST', `/organizations/${fresh.id}/numbers`, { number, type: 'toll_free' });
      senders.push(number);
    }
    // 1,600 GSM-7 characters: 11 segments each, so 181 messages fit in 2,000 and the 182nd does not.
    const l = await list(fresh, 185);
    const c = await campaign(fresh, {
      contactListIds: [l.listId],
      senders,
      message: 'x'.repeat(1600),
      quietHours: null,
    });
    assert.equal((await api(fresh, 'POST', `/campaigns/${c.id}/launch`)).status, 200);
    await runFor(t, 15);
    assert.equal((await messagesOf(c.id)).length, 181);
    const held = await get(fresh, c.id);
    assert.equal(held.status, 'sending');
    const [org] = await t.ctx.db.query<{ created_at: Date }>(
      'SELECT created_at FROM organizations WHERE id = $1',
      [fresh.id],
    );
    assert.equal(held.waitingUntil, new Date(org!.created_at.getTime() + 72 * 3600_000).toISOString());
    t.ctx.clock.set(new Date(org!.created_at.getTime() + 72 * 3600_000 + 1000));
    await t.ctx.jobs.drain();
    await runFor(t, 5);
    assert.equal((await messagesOf(c.id)).length, 185);
    assert.equal((await get(fresh, c.id)).status, 'completed');
  });

  test('sticky senders: a recipient keeps the number it got first in the next campaign', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const second = freshNumber('800');
    await t.admin('POST', `/organizations/${acme.id}/numbers`, { number: second, type: 'toll_free' });
    const l = await list(acme, 10);
    const first = await campaign(acme, { contactListIds: [l.listId], senders: [acme.number, second] });
    await api(acme, 'POST', `/campaigns/${first.id}/launch`);
    await runFor(t, 6);
    const firstSenders = new Map((await messagesOf(first.id)).map((m) => [m.to_number, m.from_number]));
    assert.equal(firstSenders.size, 10);
    assert.equal(new Set(firstSenders.values()).size, 2);
    // The pool in another order: each recipient still gets its own number.
    const again = await campaign(acme, { contactListIds: [l.listId], senders: [second, acme.number] });
    await api(acme, 'POST', `/campaigns/${again.id}/launch`);
    await runFor(t, 6);
    for (const m of await messagesOf(again.id)) assert.equal(m.from_number, firstSenders.get(m.to_number));
  });

  test('quiet hours: each recipient in its own time zone; one whose window opens tomorrow waits for it', async () => {
    // 22:30 in Washington (03:30 UTC): Eastern recipients wait for 08:00 tomorrow; Los Angeles (19:30) is open;
    // a contact whose own zone is Tokyo (12:30 tomorrow there) is open too.
    const evening = new Date('2026-11-25T03:30:00.000Z');
    t.ctx.clock.set(evening);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const eastern = await list(acme, 2);
    const western = await list(
      acme,
      1,
      () => ({}),
      () => freshNumber('213'),
    );
    const tokyo = await list(acme, 1, () => ({ timezone: 'Asia/Tokyo' }));
    const c = await campaign(acme, { contactListIds: [eastern.listId, western.listId, tokyo.listId] });
    await api(acme, 'POST', `/campaigns/${c.id}/launch`);
    await runFor(t, 5);
    const early = await messagesOf(c.id);
    assert.deepEqual(
      early.map((m) => m.to_number).sort(),
      [western.contacts[0]!.phone, tokyo.contacts[0]!.phone].sort(),
    );
    const recipients = (await api(acme, 'GET', `/campaigns/${c.id}/recipients?limit=100`)).body.data as {
      phone: string;
      status: string;
      notBefore: string | null;
    }[];
    const waiting = recipients.filter((r) => r.status === 'pending');
    assert.equal(waiting.length, 2);
    // 08:00 EST on 25 November is 13:00 UTC.
    for (const r of waiting) assert.equal(r.notBefore, '2026-11-25T13:00:00.000Z');
    assert.equal((await get(acme, c.id)).status, 'sending');

    // Just before the window opens nothing more is made; at 08:00 Eastern both go.
    t.ctx.clock.set(new Date('2026-11-25T12:59:00.000Z'));
    await t.ctx.jobs.drain();
    assert.equal((await messagesOf(c.id)).length, 2);
    t.ctx.clock.set(new Date('2026-11-25T13:00:00.000Z'));
    await t.ctx.jobs.drain();
    await runFor(t, 5);
    assert.equal((await messagesOf(c.id)).length, 4);
    assert.equal((await get(acme, c.id)).status, 'completed');

    // quietHours null turns them off; a campaign-level zone applies to numbers that say nothing (toll-free).
    // (A day on: the clock never runs back past the number's booked slots.)
    t.ctx.clock.set(new Date(evening.getTime() + 86_400_000));
    const off = await campaign(acme, { contactListIds: [eastern.listId], quietHours: null });
    assert.equal((await get(acme, off.id)).quietHours, null);
    await api(acme, 'POST', `/campaigns/${off.id}/launch`);
    await runFor(t, 3);
    assert.equal((await messagesOf(off.id)).length, 2);
  });

  test("plan limits at launch: the send's own status, code and reason, and nothing launches", async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const cases: [Record<string, unknown>, number, string, string | undefined][] = [
      [{ subscriptionState: 'trial', trialMessageLimit: 2 }, 429, 'TRIAL_LIMIT_REACHED', 'lifetime'],
      [{ monthlyAllowanceSegments: 1 }, 429, 'PAID_LIMIT_REACHED', 'monthly_absolute'],
      [
        { monthlyAllowanceSegments: 2, subscriptionState: 'past_due' },
        402,
        'CAPABILITY_RESTRICTED_BY_STATE',
        undefined,
      ],
      [{ monthlyAllowanceSegments: 2, cardVerified: false }, 403, 'CARD_NOT_VERIFIED', undefined],
    ];
    for (const [fields, status, code, reason] of cases) {
      const org = await sender(t, fields, { type: 'toll_free' });
      const l = await list(org, 4);
      const c = await campaign(org, { contactListIds: [l.listId] });
      const res = await api(org, 'POST', `/campaigns/${c.id}/launch`);
      assert.equal(res.status, status, `${JSON.stringify(fields)}: ${res.text}`);
      assert.equal(res.body.code, code);
      assert.equal(res.body.reason, reason);
      const after = await get(org, c.id);
      assert.equal(after.status, 'draft');
      assert.equal(after.recipientCount, 0);
      const rows = await t.ctx.db.query('SELECT 1 FROM campaign_recipients WHERE campaign_id = $1', [c.id]);
      assert.equal(rows.length, 0);
    }
  });

  test('the launch check counts exactly when the quick bound is not enough: long merge fields, short texts', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    // 4 recipients, an allowance of 4 segments (a ceiling of 12). Each text is one segment, but a company of 30
    // characters could make it up to 4 code units a character long (the bound says over 100 segments): the
    // launch renders and counts every text, and goes ahead.
    const org = await sender(t, { monthlyAllowanceSegments: 4 }, { type: 'toll_free' });
    const l = await list(org, 4, (i) => ({ company: `${'Longwinded Holdings '.slice(0, 10 + i * 5)}Ltd` }));
    const fits = await campaign(org, {
      contactListIds: [l.listId],
      message: 'News from {{company}}: our spring sale starts today, see you there',
    });
    const launched = await api(org, 'POST', `/campaigns/${fits.id}/launch`);
    assert.equal(launched.status, 200, launched.text);
    assert.equal(launched.body.data.recipientCount, 4);
    await runFor(t, 5);
    const made = await messagesOf(fits.id);
    assert.equal(made.length, 4);
    assert.ok(made.every((message) => message.body.length <= 160));

    // The same text for 5 recipients: 5 exact segments pass the allowance of 4 (on an unverified card: 403).
    const tight = await sender(
      t,
      { monthlyAllowanceSegments: 4, cardVerified: false },
      { type: 'toll_free' },
    );
    const five = await list(tight, 5, () => ({ company: 'Longwinded Holdings Ltd' }));
    const over = await campaign(tight, {
      contactListIds: [five.listId],
      message: 'News from {{company}}: our spring sale starts today, see you there',
    });
    const refused = await api(tight, 'POST', `/campaigns/${over.id}/launch`);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.code, 'CARD_NOT_VERIFIED');
    assert.equal((await get(tight, over.id)).status, 'draft');
  });

  test('a daily limit spreads the campaign to the next day; a refusal while sending pauses with pausedReason', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const daily = await sender(t, { dailyLimitSegments: 2 }, { type: 'toll_free' });
    const l = await list(daily, 3);
    const c = await campaign(daily, { contactListIds: [l.listId] });
    await api(daily, 'POST', `/campaigns/${c.id}/launch`);
    await runFor(t, 5);
    assert.equal((await messagesOf(c.id)).length, 2);
    const held = await get(daily, c.id);
    assert.equal(held.status, 'sending');
    assert.equal(held.waitingUntil, '2026-11-25T00:00:00.000Z');
    // The next UTC day it goes on (00:00 UTC is 19:00 in Washington: inside the window).
    t.ctx.clock.set(new Date('2026-11-25T00:00:01.000Z'));
    await t.ctx.jobs.drain();
    await runFor(t, 5);
    assert.equal((await messagesOf(c.id)).length, 3);
    assert.equal((await get(daily, c.id)).status, 'completed');

    // A trial sends at most 50 in 10 minutes: the 51st pauses the campaign; nothing is dropped or repeated.
    t.ctx.clock.set(NOON_EASTERN);
    const trial = await sender(
      t,
      { subscriptionState: 'trial', trialMessageLimit: 1000, plan: 'enterprise' },
      {
        type: 'toll_free',
      },
    );
    const many = await list(trial, 55);
    const burst = await campaign(trial, { contactListIds: [many.listId] });
    assert.equal((await api(trial, 'POST', `/campaigns/${burst.id}/launch`)).status, 200);
    await runFor(t, 25, 0.5);
    const paused = await get(trial, burst.id);
    assert.equal(paused.status, 'paused');
    assert.equal(paused.pausedReason, 'TRIAL_LIMIT_REACHED');
    assert.equal((await messagesOf(burst.id)).length, 50);
    const events = await t.ctx.db.query<{ type: string; data: { pausedReason: string } }>(
      "SELECT type, data FROM events WHERE type LIKE 'campaign.%' AND data->>'id' = $1 ORDER BY created_at, id",
      [burst.id],
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['campaign.started', 'campaign.paused'],
    );
    assert.equal(events[1]!.data.pausedReason, 'TRIAL_LIMIT_REACHED');
    // Ten minutes on, resume: the other five go, once each.
    t.ctx.clock.advance(601);
    assert.equal((await api(trial, 'POST', `/campaigns/${burst.id}/resume`)).status, 200);
    await runFor(t, 10);
    const all = await messagesOf(burst.id);
    assert.equal(all.length, 55);
    assert.equal(new Set(all.map((m) => m.to_number)).size, 55);
    assert.equal((await get(trial, burst.id)).status, 'completed');
  });

  test('pause and resume never skip or repeat a recipient; cancel cancels what is queued, sent stands', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const l = await list(acme, 40);
    const c = await campaign(acme, { contactListIds: [l.listId] });
    await api(acme, 'POST', `/campaigns/${c.id}/launch`);
    await runFor(t, 2, 0.5);
    const paused = await api(acme, 'POST', `/campaigns/${c.id}/pause`);
    assert.equal(paused.status, 200);
    assert.equal(paused.body.data.status, 'paused');
    assert.equal(paused.body.data.pausedReason, null);
    const atPause = (await messagesOf(c.id)).length;
    assert.ok(atPause > 0 && atPause < 40, `made before the pause: ${atPause}`);
    await runFor(t, 20);
    assert.equal((await messagesOf(c.id)).length, atPause, 'nothing new is made while paused');
    assert.equal((await api(acme, 'POST', `/campaigns/${c.id}/pause`)).status, 409);
    // Resume twice over (the second is refused): one run, and every recipient exactly once.
    assert.equal((await api(acme, 'POST', `/campaigns/${c.id}/resume`)).status, 200);
    assert.equal((await api(acme, 'POST', `/campaigns/${c.id}/resume`)).status, 409);
    await runFor(t, 20, 0.5);
    const all = await messagesOf(c.id);
    assert.equal(all.length, 40);
    assert.equal(new Set(all.map((m) => m.to_number)).size, 40);
    assert.equal((await get(acme, c.id)).status, 'completed');

    // Cancel mid-way: queued messages are cancelled, sent ones stand, no more are made.
    const second = await campaign(acme, { contactListIds: [l.listId] });
    await api(acme, 'POST', `/campaigns/${second.id}/launch`);
    await runFor(t, 1, 0.5);
    const cancelled = await api(acme, 'POST', `/campaigns/${second.id}/cancel`);
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.data.status, 'cancelled');
    await runFor(t, 10);
    const states = await messagesOf(second.id);
    assert.ok(states.some((m) => m.status === 'sent'));
    assert.ok(states.some((m) => m.status === 'cancelled'));
    assert.ok(states.every((m) => m.status === 'sent' || m.status === 'cancelled'));
    assert.ok(states.length < 40);
    const analytics = (await api(acme, 'GET', `/campaigns/${second.id}/analytics`)).body.data;
    assert.equal(analytics.cancelled, states.filter((m) => m.status === 'cancelled').length);
    assert.equal(analytics.queued, 0);
    assert.equal((await api(acme, 'POST', `/campaigns/${second.id}/cancel`)).status, 409);
  });

  test('a scheduled campaign starts at its time; a change while scheduled moves it', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const l = await list(acme, 2);
    const at = new Date(NOON_EASTERN.getTime() + 3600_000).toISOString();
    const c = await campaign(acme, { contactListIds: [l.listId], scheduledAt: at });
    const launched = await api(acme, 'POST', `/campaigns/${c.id}/launch`);
    assert.equal(launched.body.data.status, 'scheduled');
    const later = new Date(NOON_EASTERN.getTime() + 7200_000).toISOString();
    const moved = await api(acme, 'PATCH', `/campaigns/${c.id}`, { scheduledAt: later });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.data.scheduledAt, later);
    t.ctx.clock.set(new Date(NOON_EASTERN.getTime() + 3601_000));
    await t.ctx.jobs.drain();
    assert.equal((await get(acme, c.id)).status, 'scheduled');
    t.ctx.clock.set(new Date(NOON_EASTERN.getTime() + 7201_000));
    await t.ctx.jobs.drain();
    await runFor(t, 3);
    assert.equal((await get(acme, c.id)).status, 'completed');
    assert.equal((await messagesOf(c.id)).length, 2);
  });

  test('statistics: every delivery state, awaiting becomes no receipt after 72 hours, the 2026-06-10 gate', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    // Suffixes of the simulated carrier: 0666 refused (failed), 0669 silent (never a receipt).
    const phones = [
      '+12025550666',
      '+12025551669',
      '+12025552669',
      freshNumber(),
      freshNumber(),
      freshNumber(),
    ];
    const l = await list(
      acme,
      phones.length,
      () => ({}),
      (i) => phones[i]!,
    );
    const optedOut = await list(acme, 1);
    await api(acme, 'POST', `/contacts/${optedOut.contacts[0]!.id}/opt-out`);
    const c = await campaign(acme, { contactListIds: [l.listId, optedOut.listId] });
    await api(acme, 'POST', `/campaigns/${c.id}/launch`);
    await runFor(t, 5);
    // The test clock is real time plus its moves, so on a loaded machine a paced message can fall due a step
    // later (a CI run once found one of six still queued here); a message never sent still fails below.
    for (let step = 0; step < 10 && (await messagesOf(c.id)).some((m) => m.status === 'queued'); step++) {
      await runFor(t, 1);
    }
    const messages = await messagesOf(c.id);
    const byPhone = new Map(messages.map((m) => [m.to_number, m]));
    const [d, f, u] = [phones[3]!, phones[4]!, phones[5]!].map((phone) => byPhone.get(phone)!.id);
    for (const [id, status] of [
      [d, 'delivered'],
      [f, 'failed'],
      [u, 'undelivered'],
    ] as const) {
      assert.equal((await t.admin('POST', '/test/carrier/receipts', { messageId: id, status })).status, 200);
    }
    const detail = await get(acme, c.id);
    assert.deepEqual(detail.deliveryStats, {
      attempted: 6,
      delivered: 1,
      failed: 2,
      undelivered: 1,
      failedTotal: 3,
      awaiting: 2,
      noReceipt: 0,
      deliveryRate: 0.1667,
      failureRate: 0.5,
      provisional: true,
    });
    assert.equal(detail.messages_sent, 6);
    assert.equal(detail.messages_delivered, 1);
    assert.equal(detail.messages_failed, 3);
    assert.equal(detail.message_count, 6);
    assert.equal(detail.recipientCount, 7);

    const row = (await api(acme, 'GET', '/campaigns?limit=100')).body.data.find(
      (x: { id: string }) => x.id === c.id,
    );
    assert.equal(row.delivery_stats.failed_total, 3);
    assert.equal(row.delivery_stats.no_receipt, 0);
    assert.equal(row.deliveryStats, undefined);

    // 72 hours on, the two silent ones are "no receipt": no longer attempted, no longer provisional.
    t.ctx.clock.advance(72 * 3600 + 1);
    const later = (await get(acme, c.id)).deliveryStats;
    assert.equal(later.awaiting, 0);
    assert.equal(later.noReceipt, 2);
    assert.equal(later.attempted, 4);
    assert.equal(later.provisional, false);
    assert.equal(later.deliveryRate, 0.25);
    const analytics = (await api(acme, 'GET', `/campaigns/${c.id}/analytics`)).body.data;
    assert.equal(analytics.skipped, 1);
    assert.equal(analytics.noReceipt, 2);
    assert.equal(analytics.segments, 6);

    // Pinned to 2026-06-10: no statistics, and deliveryRate is messages_delivered / messages_sent.
    const old = await api(acme, 'GET', `/campaigns/${c.id}`, undefined, { 'API-Version': '2026-06-10' });
    assert.equal(old.status, 200);
    assert.equal(old.body.data.deliveryStats, undefined);
    assert.equal(old.body.data.deliveryRate, 0.1667);
    const oldList = await api(acme, 'GET', '/campaigns', undefined, { 'API-Version': '2026-06-10' });
    assert.ok(oldList.body.data.every((x: Record<string, unknown>) => x.delivery_stats === undefined));
    const oldAnalytics = await api(acme, 'GET', `/campaigns/${c.id}/analytics`, undefined, {
      'API-Version': '2026-06-10',
    });
    assert.equal(oldAnalytics.body.data.attempted, undefined);
    assert.equal(oldAnalytics.body.data.deliveryRate, 0.1667);
  });

  test('a statement moving many messages of a campaign locks one of its counter rows, so batches cannot deadlock', {
    skip: !process.env.DATABASE_URL && 'needs PostgreSQL (DATABASE_URL): PGlite is one connection',
  }, async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const l = await list(acme, 30);
    const c = await campaign(acme, { contactListIds: [l.listId] });
    await api(acme, 'POST', `/campaigns/${c.id}/launch`);
    await runFor(t, 3);
    const counters = () =>
      t.ctx.db.query<{ queued: number; sent: number; cancelled: number; shards: number }>(
        `SELECT sum(queued)::int AS queued, sum(sent)::int AS sent, sum(cancelled)::int AS cancelled,
                  count(*)::int AS shards
             FROM campaign_counts WHERE campaign_id = $1`,
        [c.id],
      );
    const [before] = await counters();
    assert.ok(before!.shards > 1, 'the dispatches counted into several shards');
    assert.ok(before!.queued >= 8, `messages still queued: ${before!.queued}`);

    // A batch's statement (as the dispatch's or the receipts') over every queued message: while its
    // transaction is open, another connection finds all but one of the campaign's counter rows free.
    // Locking one row per shard each message fell in, two batches could take them in opposite orders.
    await t.ctx.db.transaction(async (tx) => {
      await tx.query(
        `UPDATE messages SET status = 'cancelled' WHERE campaign_id = $1 AND status = 'queued'`,
        [c.id],
      );
      const free = await t.ctx.db.query(
        'SELECT shard FROM campaign_counts WHERE campaign_id = $1 FOR UPDATE SKIP LOCKED',
        [c.id],
      );
      const [now] = await t.ctx.db.query<{ shards: number }>(
        'SELECT count(*)::int AS shards FROM campaign_counts WHERE campaign_id = $1',
        [c.id],
      );
      // (The transaction's own row is not even visible to the other connection if the statement made it.)
      assert.ok(now!.shards - free.length <= 1, `${now!.shards - free.length} counter rows locked`);
    });
    // And the sums stay exact.
    const [after] = await counters();
    const [actual] = await t.ctx.db.query<{ queued: number; sent: number; cancelled: number }>(
      `SELECT count(*) FILTER (WHERE status = 'queued')::int AS queued,
                count(*) FILTER (WHERE status = 'sent')::int AS sent,
                count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled
           FROM messages WHERE campaign_id = $1`,
      [c.id],
    );
    assert.deepEqual({ queued: after!.queued, sent: after!.sent, cancelled: after!.cancelled }, actual);
    assert.equal(after!.queued, 0);
    assert.equal(after!.cancelled, before!.queued);
    await api(acme, 'POST', `/campaigns/${c.id}/cancel`);
  });

  test('opt-outs: a STOP before the message is sent cancels it; STOPs within 72 hours count as optOuts', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const l = await list(acme, 12);
    const c = await campaign(acme, { contactListIds: [l.listId] });
    await api(acme, 'POST', `/campaigns/${c.id}/launch`);
    // The run made the messages; the last is still queued for its slot when its recipient texts STOP.
    await t.ctx.jobs.drain();
    const last = l.contacts[l.contacts.length - 1]!.phone;
    await t.admin('POST', '/test/carrier/inbound', { from: last, to: acme.number, text: 'STOP' });
    // Another recipient texts STOP after its message went out.
    await runFor(t, 6);
    const first = l.contacts[0]!.phone;
    await t.admin('POST', '/test/carrier/inbound', { from: first, to: acme.number, text: 'STOP' });
    await t.ctx.jobs.drain();
    const byPhone = new Map((await messagesOf(c.id)).map((m) => [m.to_number, m.status]));
    assert.equal(byPhone.get(last), 'cancelled');
    assert.equal(byPhone.get(first), 'sent');
    const analytics = (await api(acme, 'GET', `/campaigns/${c.id}/analytics`)).body.data;
    assert.equal(analytics.optOuts, 1);
    assert.equal(analytics.cancelled, 1);

    // Opted out after the launch but before its message was made: skipped, no message, nothing counted.
    const m = await list(acme, 3);
    const later = await campaign(acme, { contactListIds: [m.listId] });
    await api(acme, 'POST', `/campaigns/${later.id}/launch`);
    assert.equal((await api(acme, 'POST', `/contacts/${m.contacts[1]!.id}/opt-out`)).status, 200);
    await runFor(t, 5);
    assert.deepEqual(
      (await messagesOf(later.id)).map((x) => x.to_number).sort(),
      [m.contacts[0]!.phone, m.contacts[2]!.phone].sort(),
    );
    const laterAnalytics = (await api(acme, 'GET', `/campaigns/${later.id}/analytics`)).body.data;
    assert.equal(laterAnalytics.skipped, 1);
    assert.equal(laterAnalytics.cancelled, 0);
    assert.equal((await get(acme, later.id)).status, 'completed');
  });

  test('the portal twin: a member runs campaigns with a session, refusals in Shape A; events are available', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const l = await list(acme, 2);
    const user = await createUser(t, { role: 'member', organizationIds: [acme.id] });
    const token = await signIn(t, user);
    const portal = (method: string, path: string, body?: unknown) =>
      t.request(method, `/v2/portal${path}`, { token, body });
    const created = await portal('POST', '/campaigns', {
      name: 'Portal',
      message: 'Hi',
      contactListIds: [l.listId],
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.success, true);
    const id = created.body.data.id;
    const refused = await portal('POST', `/campaigns/${id}/resume`);
    assert.equal(refused.status, 409);
    assert.ok(isShapeA(refused.body));
    assert.equal(refused.body.code, 'CAMPAIGN_STATE');
    assert.equal((await portal('POST', `/campaigns/${id}/launch`)).status, 200);
    await runFor(t, 3);
    const listed = await portal('GET', '/campaigns');
    assert.equal(listed.status, 200);
    const row = listed.body.data.find((c: { id: string }) => c.id === id);
    assert.equal(row.status, 'completed');
    assert.equal(row.delivery_stats.attempted, 2);
    assert.equal(listed.body.pagination.total, 1);
    const recipients = await portal('GET', `/campaigns/${id}/recipients`);
    assert.equal(recipients.body.data.length, 2);
    assert.ok(
      recipients.body.data.every(
        (r: { status: string; messageId: string }) => r.status === 'sent' && r.messageId,
      ),
    );

    const catalog = await t.request('GET', '/api/webhooks/events', { token });
    assert.equal(catalog.status, 200, catalog.text);
    for (const type of ['campaign.started', 'campaign.paused', 'campaign.completed', 'campaign.cancelled']) {
      const entry = catalog.body.data.find((e: { type: string }) => e.type === type);
      assert.equal(entry?.status, 'available', type);
    }
    const events = await t.ctx.db.query<{ type: string }>(
      "SELECT type FROM events WHERE data->>'id' = $1 ORDER BY created_at, id",
      [id],
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['campaign.started', 'campaign.completed'],
    );
  });
});
