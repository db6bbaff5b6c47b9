// Link tracking over a real socket (CONTRACT section 14, issue 36): a campaign with trackLinks sends each
// recipient its own short links, counted at their short length; `GET /l/{code}` redirects (302) to exactly the
// stored URL and counts a person's click once per recipient in the analytics, the clicks list and a signed
// `link.clicked` webhook; HEAD and link unfurlers are redirected uncounted; unknown codes are 404; a single send
// can ask for tracking too; the link matcher stays linear on adversarial text.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findLinks, LINK_CLICKS_PER_CODE_RULE } from '../src/modules/links/index.ts';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { campaignKit } from './helpers/campaigns.ts';
import { runFor, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { type Receiver, startReceiver, verifyWithBoth } from './helpers/receiver.ts';

const NOON_EASTERN = new Date('2026-11-24T17:00:00.000Z');
const PUBLIC_URL = 'https://go.example.test';
const SHORT = /https:\/\/go\.example\.test\/l\/([A-Za-z0-9_-]{16})/g;
const PHONE_UA =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';
const IMESSAGE_PREVIEW_UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0';
const LONG_URL = `https://shop.example.com/spring/${'a'.repeat(150)}?utm_source=sms&utm_campaign=spring`;

const codesOf = (body: string) => [...body.matchAll(SHORT)].map((match) => match[1]!);

describe('link tracking', () => {
  let t: TestApp;
  let receiver: Receiver;
  before(async () => {
    t = await startTestApp({ config: { publicUrl: `${PUBLIC_URL}/` } });
    receiver = await startReceiver(() => t.ctx.clock.nowMs());
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });
  const { api, list, campaign, messagesOf } = campaignKit(() => t);
  const follow = (code: string, userAgent?: string, method = 'GET', accept?: string) =>
    t.request(method, `/l/${code}`, {
      headers: { ...(userAgent && { 'user-agent': userAgent }), ...(accept && { accept }) },
    });

  test('a tracked campaign: short links per recipient, counted short; clicks, unique clicks, rate, list, webhook', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const owner = await createUser(t, { role: 'owner', organizationIds: [acme.id] });
    const token = await signIn(t, owner);
    const hook = await t.request('POST', '/api/webhooks', {
      token,
      body: { url: `${receiver.url}/hooks`, events: ['link.clicked'] },
    });
    assert.equal(hook.status, 201, hook.text);
    const secret = hook.body.data.secret as string;

    const recipients = await list(acme, 3);
    const message = `Hi {{first_name}}, sale: ${LONG_URL}. Map (https://maps.example.com/store?id=7).`;
    // The original text is two GSM-7 segments; with two short links it is one.
    assert.ok(message.length > 160);
    const c = await campaign(acme, { contactListIds: [recipients.listId], message, trackLinks: true });
    assert.equal((await api(acme, 'GET', `/campaigns/${c.id}`)).body.data.trackLinks, true);
    const launched = await api(acme, 'POST', `/campaigns/${c.id}/launch`);
    assert.equal(launched.status, 200, launched.text);
    await runFor(t, 10);

    const messages = await messagesOf(c.id);
    assert.equal(messages.length, 3);
    const segments = await t.ctx.db.query<{ segments: number }>(
      'SELECT segments FROM messages WHERE campaign_id = $1',
      [c.id],
    );
    assert.ok(
      segments.every((row) => row.segments === 1),
      JSON.stringify(segments),
    );
    const codes = messages.map((m) => codesOf(m.body));
    for (const [index, m] of messages.entries()) {
      assert.equal(codes[index]!.length, 2, m.body);
      assert.ok(!m.body.includes('shop.example.com') && m.body.endsWith(').'), m.body);
    }
    // Every code is its own: per link, per recipient.
    assert.equal(new Set(codes.flat()).size, 6);
    const analyticsBefore = (await api(acme, 'GET', `/campaigns/${c.id}/analytics`)).body.data;
    assert.equal(analyticsBefore.segments, 3);
    assert.deepEqual(
      [analyticsBefore.clicks, analyticsBefore.uniqueClicks, analyticsBefore.clickRate],
      [0, 0, 0],
    );

    // A person's click: 302 to exactly the original URL, not cached.
    const first = await follow(codes[0]![0]!, PHONE_UA);
    assert.equal(first.status, 302);
    assert.equal(first.headers.get('location'), LONG_URL);
    assert.match(first.headers.get('cache-control') ?? '', /no-store/);
    // The trailing ")" and "." of the sentence stayed out of the second link.
    const map = await follow(codes[0]![1]!, PHONE_UA);
    assert.equal(map.headers.get('location'), 'https://maps.example.com/store?id=7');
    const other = await follow(codes[1]![0]!, PHONE_UA);
    assert.equal(other.status, 302);

    // Previews and prefetches are redirected but not counted.
    const head = await follow(codes[2]![0]!, PHONE_UA, 'HEAD');
    assert.equal(head.status, 302);
    assert.equal(head.headers.get('location'), LONG_URL);
    for (const bot of [
      IMESSAGE_PREVIEW_UA,
      'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
      'WhatsApp/2.23.20.0',
    ]) {
      const preview = await follow(codes[2]![0]!, bot);
      assert.equal(preview.status, 302, bot);
      assert.equal(preview.headers.get('location'), LONG_URL);
    }

    const prefetch = await t.request('GET', `/l/${codes[2]![0]!}`, {
      headers: { 'user-agent': PHONE_UA, 'sec-purpose': 'prefetch;prerender' },
    });
    assert.equal(prefetch.status, 302);

    const analytics = (await api(acme, 'GET', `/campaigns/${c.id}/analytics`)).body.data;
    assert.equal(analytics.clicks, 3);
    assert.equal(analytics.uniqueClicks, 2);
    assert.equal(analytics.clickRate, 0.6667);

    const page1 = await api(acme, 'GET', `/campaigns/${c.id}/clicks?limit=2`);
    assert.equal(page1.status, 200, page1.text);
    assert.equal(page1.body.data.length, 2);
    assert.equal(page1.body.pagination.total, 3);
    const page2 = await api(acme, 'GET', `/campaigns/${c.id}/clicks?limit=2&page=2`);
    assert.equal(page2.body.data.length, 1);
    const all = [...page1.body.data, ...page2.body.data];
    assert.deepEqual(
      all.map((click: { recipientPhone: string }) => click.recipientPhone).sort(),
      [messages[0]!.to_number, messages[0]!.to_number, messages[1]!.to_number].sort(),
    );
    assert.ok(
      all.every((click: { userAgent: string; at: string }) => click.userAgent === PHONE_UA && click.at),
    );
    // The portal twin answers the same list.
    const portal = await t.request('GET', `/v2/portal/campaigns/${c.id}/clicks`, { token });
    assert.equal(portal.status, 200, portal.text);
    assert.equal(portal.body.data.length, 3);

    // Another organization sees no such campaign.
    const stranger = await sender(t);
    const foreign = await api(stranger, 'GET', `/campaigns/${c.id}/clicks`);
    assert.equal(foreign.status, 404, foreign.text);

    await t.ctx.jobs.drain();
    const events = receiver.received.map((delivery) => {
      verifyWithBoth(secret, delivery);
      return JSON.parse(delivery.body) as { type: string; data: Record<string, unknown> };
    });
    const clicked = events.filter((event) => event.type === 'link.clicked');
    assert.equal(clicked.length, 3, JSON.stringify(events.map((e) => e.type)));
    const firstEvent = clicked.find(
      (event) => event.data.url === LONG_URL && event.data.recipientPhone === messages[0]!.to_number,
    );
    assert.deepEqual(firstEvent?.data, {
      campaignId: c.id,
      messageId: messages[0]!.id,
      recipientPhone: messages[0]!.to_number,
      url: LONG_URL,
      at: firstEvent?.data.at,
      userAgent: PHONE_UA,
    });
    assert.ok(Date.parse(String(firstEvent?.data.at)) >= NOON_EASTERN.getTime());
    const catalog = await t.request('GET', '/api/webhooks/events', { token });
    const entry = catalog.body.data.find((e: { type: string }) => e.type === 'link.clicked');
    assert.equal(entry?.status, 'available');
  });

  test('unknown, malformed and expired codes are 404: HTML for a browser, Shape A otherwise', async () => {
    const unknown = await follow('AAAAAAAAAAAAAAAA', PHONE_UA);
    assert.equal(unknown.status, 404);
    assert.ok(isShapeA(unknown.body), unknown.text);
    const page = await follow('AAAAAAAAAAAAAAAA', PHONE_UA, 'GET', 'text/html,application/xhtml+xml');
    assert.equal(page.status, 404);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.equal(page.headers.get('location'), null);
    // Not a redirect to anything a request names: an open-redirect attempt is just an unknown code.
    for (const path of ['https:%2F%2Fevil.example', '..%2F..%2Fapi', `${'x'.repeat(150)}`]) {
      const res = await follow(path, PHONE_UA);
      assert.equal(res.status, 404, path);
      assert.equal(res.headers.get('location'), null);
    }

    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t);
    const sent = await api(acme, 'POST', '/messages/send', {
      to: '+12025550188',
      message: 'Track https://example.com/a',
      trackLinks: true,
    });
    assert.equal(sent.status, 202, sent.text);
    const [code] = codesOf(sent.body.data.body);
    assert.equal((await follow(code!, PHONE_UA)).status, 302);
    // 90 days on, the hourly retention removes the link: the code is unknown.
    t.ctx.clock.advance(91 * 24 * 60 * 60);
    const removed = await t.ctx.retention.run();
    assert.ok((removed['links.expired'] ?? 0) >= 1, JSON.stringify(removed));
    assert.equal((await follow(code!, PHONE_UA)).status, 404);
  });

  test('a single send with trackLinks: short link, short count, link.clicked with campaignId null', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t);
    const text = `Your receipt: ${LONG_URL}`;
    const plain = await api(acme, 'POST', '/messages/send', { to: '+12025550189', message: text });
    assert.equal(plain.status, 202, plain.text);
    assert.equal(plain.body.data.body, text);
    assert.equal(plain.body.data.segments, 2);

    const tracked = await api(acme, 'POST', '/messages/send', {
      to: '+12025550189',
      message: text,
      trackLinks: true,
    });
    assert.equal(tracked.status, 202, tracked.text);
    assert.equal(tracked.body.data.segments, 1);
    const [code] = codesOf(tracked.body.data.body);
    assert.ok(code, tracked.body.data.body);
    const click = await follow(code, PHONE_UA);
    assert.equal(click.headers.get('location'), LONG_URL);
    const [event] = await t.ctx.db.query<{ data: Record<string, unknown> }>(
      "SELECT data FROM events WHERE type = 'link.clicked' AND data->>'messageId' = $1",
      [tracked.body.data.id],
    );
    assert.equal(event?.data.campaignId, null);
    assert.equal(event?.data.recipientPhone, '+12025550189');
  });

  test('a burst of taps on one code: every tap redirected, five a minute counted (a leaked link cannot flood)', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t);
    const tracked = await api(acme, 'POST', '/messages/send', {
      to: '+12025550187',
      message: `Burst ${LONG_URL}`,
      trackLinks: true,
    });
    assert.equal(tracked.status, 202, tracked.text);
    const [code] = codesOf(tracked.body.data.body);
    const counted = async () =>
      (
        await t.ctx.db.query<{ count: number }>(
          "SELECT count(*)::int AS count FROM events WHERE type = 'link.clicked' AND data->>'messageId' = $1",
          [tracked.body.data.id],
        )
      )[0]!.count;
    for (let tap = 0; tap < 8; tap++) {
      const click = await follow(code!, PHONE_UA);
      assert.equal(click.status, 302);
      assert.equal(click.headers.get('location'), LONG_URL);
    }
    assert.equal(await counted(), LINK_CLICKS_PER_CODE_RULE.limit);
    // Another recipient's code is not held back by it.
    const other = await api(acme, 'POST', '/messages/send', {
      to: '+12025550186',
      message: `Burst ${LONG_URL}`,
      trackLinks: true,
    });
    assert.equal((await follow(codesOf(other.body.data.body)[0]!, PHONE_UA)).status, 302);
    const [otherEvent] = await t.ctx.db.query(
      "SELECT 1 FROM events WHERE type = 'link.clicked' AND data->>'messageId' = $1",
      [other.body.data.id],
    );
    assert.ok(otherEvent);
    // A minute on, the code's taps count again.
    t.ctx.clock.advance(61);
    assert.equal((await follow(code!, PHONE_UA)).status, 302);
    assert.equal(await counted(), LINK_CLICKS_PER_CODE_RULE.limit + 1);
  });

  test('the launch check counts tracked links short: a campaign that fits only with its short links launches', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    // Ceiling 3 × 2 = 6 segments this month: 4 recipients × 2 segments do not fit, 4 × 1 do.
    for (const [trackLinks, template] of [
      [false, `Sale: ${LONG_URL}`],
      [true, `Sale: ${LONG_URL}`],
      [true, `Sale {{first_name}}: ${LONG_URL}`],
    ] as const) {
      const org = await sender(t, { monthlyAllowanceSegments: 2 }, { type: 'toll_free' });
      const recipients = await list(org, 4);
      const c = await campaign(org, { contactListIds: [recipients.listId], message: template, trackLinks });
      const res = await api(org, 'POST', `/campaigns/${c.id}/launch`);
      if (!trackLinks) {
        assert.equal(res.status, 429, res.text);
        assert.equal(res.body.code, 'PAID_LIMIT_REACHED');
        continue;
      }
      assert.equal(res.status, 200, `${template}: ${res.text}`);
      await runFor(t, 10);
      const analytics = (await api(org, 'GET', `/campaigns/${c.id}/analytics`)).body.data;
      assert.equal(analytics.segments, 4, template);
    }
  });

  test('a campaign without trackLinks sends its links as written', async () => {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const recipients = await list(acme, 1);
    const c = await campaign(acme, { contactListIds: [recipients.listId], message: `Sale ${LONG_URL}` });
    assert.equal((await api(acme, 'GET', `/campaigns/${c.id}`)).body.data.trackLinks, false);
    assert.equal((await api(acme, 'POST', `/campaigns/${c.id}/launch`)).status, 200);
    await runFor(t, 10);
    const [m] = await messagesOf(c.id);
    assert.equal(m?.body, `Sale ${LONG_URL}`);
    const analytics = (await api(acme, 'GET', `/campaigns/${c.id}/analytics`)).body.data;
    assert.deepEqual([analytics.clicks, analytics.uniqueClicks, analytics.clickRate], [0, 0, 0]);
  });

  test('the link matcher: sentence punctuation, brackets, no host; linear on adversarial text', (context) => {
    const urls = (text: string) => findLinks(text).map((link) => link.url);
    assert.deepEqual(urls('See https://a.example/x.'), ['https://a.example/x']);
    assert.deepEqual(urls('(https://en.wikipedia.org/wiki/Foo_(bar))'), [
      'https://en.wikipedia.org/wiki/Foo_(bar)',
    ]);
    assert.deepEqual(urls('HTTP://A.EXAMPLE, xhttp://b.example and https:// and http://'), [
      'HTTP://A.EXAMPLE',
    ]);
    assert.deepEqual(urls('<https://a.example/q?x=1&y=2>"https://b.example"'), [
      'https://a.example/q?x=1&y=2',
      'https://b.example',
    ]);
    assert.deepEqual(urls('no links here, just http and https'), []);

    const adversarial = [
      'http://'.repeat(1500),
      `https://a.example/${'('.repeat(5000)}${')'.repeat(5000)}`,
      `https://a.example/${'.'.repeat(10_000)}`,
      'httphttp:/'.repeat(1000),
      `https://${'a'.repeat(9992)}`,
    ];
    for (const text of adversarial) {
      assert.ok(text.length >= 10_000);
      const started = process.hrtime.bigint();
      findLinks(text);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // Reported, not asserted (timings are the machine's): a backtracking matcher takes seconds here.
      context.diagnostic(`findLinks on ${text.length} adversarial characters: ${ms.toFixed(2)} ms`);
    }
  });
});
