// Inbound texts through POST /admin/v1/test/carrier/inbound (the same service function a real carrier's
// webhook calls): stored as `received` with message.received; STOP and its synonyms opt the sender out
// (sms_stop, creating the contact if needed) with exactly one confirmation that still goes out; START,
// UNSTOP and YES opt back in; HELP answers; opting in through the API after a STOP needs a reason.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { STOP_KEYWORDS } from '../src/modules/messaging/service.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, freshNumber, type Sender, send, sender } from './helpers/messaging.ts';

describe('inbound texts and keywords', () => {
  let t: TestApp;
  let acme: Sender;
  before(async () => {
    t = await startTestApp();
    acme = await sender(t, { name: 'Acme Bakery' });
  });
  after(() => t.close());

  const inbound = (from: string, text: string, to = acme.number) =>
    t.admin('POST', '/test/carrier/inbound', { from, to, text });
  const contactOf = async (phone: string) => {
    const res = await t.request('GET', `/api/v2/contacts?search=${encodeURIComponent(phone)}`, {
      apiKey: acme.key,
    });
    return res.body.data[0];
  };
  const outboundTo = (phone: string) =>
    countRows(t, "SELECT 1 FROM messages WHERE to_number = $1 AND direction = 'outbound'", [phone]);

  test('a text is stored as received, with message.received, and listed as inbound', async () => {
    const from = freshNumber();
    const res = await inbound(from, 'Do you have rye today?');
    assert.equal(res.status, 201, res.text);
    const { message, keyword, reply } = res.body.data;
    assert.equal(message.status, 'received');
    assert.equal(message.direction, 'inbound');
    assert.equal(message.from, from);
    assert.equal(message.to, acme.number);
    assert.equal(keyword, null);
    assert.equal(reply, null);
    const [event] = await t.ctx.db.query<{ type: string; organization_id: string }>(
      "SELECT type, organization_id FROM events WHERE data->>'id' = $1",
      [message.id],
    );
    assert.deepEqual({ ...event }, { type: 'message.received', organization_id: acme.id });
    const read = await t.request('GET', `/api/v2/messages/${message.id}`, { apiKey: acme.key });
    assert.equal(read.body.data.body, 'Do you have rye today?');
  });

  test('a text to a number that is not ours is a 404', async () => {
    assert.equal((await inbound(freshNumber(), 'hi', '+12025550000')).status, 404);
  });

  for (const word of STOP_KEYWORDS) {
    test(`${word} (any case, trimmed) opts the sender out with one confirmation`, async () => {
      const from = freshNumber();
      const spelled = ` ${word.toLowerCase().replace(/^./, (c) => c.toUpperCase())}\n`;
      const res = await inbound(from, spelled);
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.data.keyword, 'stop');
      const reply = res.body.data.reply;
      assert.equal(reply.to, from);
      assert.equal(reply.from, acme.number);
      assert.match(reply.body, /^Acme Bakery: .*unsubscribed.*START/);
      const contact = await contactOf(from);
      assert.equal(contact.optedOut, true);
      assert.equal(contact.optOutMethod, 'sms_stop');
      // Sending to them is now refused; their STOP again changes nothing and is not answered again.
      t.ctx.clock.advance(61);
      assert.equal((await send(t, acme, { to: from, message: 'promo' })).body.code, 'RECIPIENT_OPTED_OUT');
      const again = await inbound(from, 'STOP');
      assert.equal(again.body.data.reply, null);
      assert.equal(await outboundTo(from), 1);
    });
  }

  test('only the whole text is a keyword: "stop by tomorrow" is an ordinary message', async () => {
    const from = freshNumber();
    const res = await inbound(from, 'stop by tomorrow?');
    assert.equal(res.body.data.keyword, null);
    assert.equal(await contactOf(from), undefined);
  });

  test('the STOP confirmation is sent although the sender is now opted out, and counts against no limit', async () => {
    const limited = await sender(t, { dailyLimitSegments: 1, createdAt: '2026-01-01T00:00:00.000Z' });
    const from = freshNumber();
    const res = await inbound(from, 'STOP', limited.number);
    const replyId = res.body.data.reply.id;
    t.ctx.clock.advance(5);
    await t.ctx.jobs.drain();
    const [row] = await t.ctx.db.query<{ status: string }>('SELECT status FROM messages WHERE id = $1', [
      replyId,
    ]);
    assert.equal(row!.status, 'sent');
    assert.equal(await countRows(t, 'SELECT 1 FROM send_usage WHERE organization_id = $1', [limited.id]), 0);
    // The whole daily limit is still there for the business's own messages.
    t.ctx.clock.advance(61);
    assert.equal((await send(t, limited, { to: freshNumber(), message: 'x' })).status, 202);
  });

  test('STOP creates the contact when needed, with contact.opted_out; the opt-out is in the consent history', async () => {
    const from = freshNumber();
    assert.equal(await contactOf(from), undefined);
    await inbound(from, 'UNSUBSCRIBE');
    const contact = await contactOf(from);
    assert.ok(contact);
    const [event] = await t.ctx.db.query<{ data: { method: string } }>(
      "SELECT data FROM events WHERE type = 'contact.opted_out' AND data->>'phone' = $1",
      [from],
    );
    assert.equal(event!.data.method, 'sms_stop');
    const history = await t.request('GET', `/api/v2/contacts/${contact.id}/consent-history`, {
      apiKey: acme.key,
    });
    assert.equal(history.body.data[0].action, 'opted_out');
    assert.equal(history.body.data[0].actor, `sms:${from}`);
  });

  test('after STOP, opting in through the API needs a reason (OPT_OUT_REASON_REQUIRED), then sends work', async () => {
    const from = freshNumber();
    await t.request('POST', '/api/v2/contacts', {
      apiKey: acme.key,
      body: { phone: from, firstName: 'Ada' },
    });
    await inbound(from, 'STOP');
    const contact = await contactOf(from);
    const refused = await t.request('POST', `/api/v2/contacts/${contact.id}/opt-in`, {
      apiKey: acme.key,
      body: {},
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.code, 'OPT_OUT_REASON_REQUIRED');
    assert.equal((await contactOf(from)).optedOut, true);
    const optedIn = await t.request('POST', `/api/v2/contacts/${contact.id}/opt-in`, {
      apiKey: acme.key,
      body: { reason: 'Customer asked in store to receive order updates again' },
    });
    assert.equal(optedIn.status, 200);
    assert.equal(optedIn.body.data.optedOut, false);
    t.ctx.clock.advance(61);
    const sent = await send(t, acme, { to: from, message: 'Welcome back {{first_name}}' });
    assert.equal(sent.status, 202);
    assert.equal(sent.body.data.body, 'Welcome back Ada');
  });

  for (const word of ['START', 'unstop', ' Yes ']) {
    test(`${word.trim()} opts a STOP-ped sender back in, with a confirmation`, async () => {
      const from = freshNumber();
      await inbound(from, 'STOP');
      const res = await inbound(from, word);
      assert.equal(res.body.data.keyword, 'start');
      assert.match(res.body.data.reply.body, /subscribed again/);
      assert.equal((await contactOf(from)).optedOut, false);
      t.ctx.clock.advance(61);
      assert.equal((await send(t, acme, { to: from, message: 'hello again' })).status, 202);
      // START from someone not opted out changes nothing and is not answered.
      assert.equal((await inbound(from, 'START')).body.data.reply, null);
    });
  }

  test('HELP answers with help text and changes nothing', async () => {
    const from = freshNumber();
    const res = await inbound(from, 'help');
    assert.equal(res.body.data.keyword, 'help');
    assert.match(res.body.data.reply.body, /^Acme Bakery: Reply STOP to unsubscribe/);
    assert.equal(await contactOf(from), undefined);
  });
});
