// Campaign follow-ups over a real socket (CONTRACT section 14, issue 36): POST /campaigns/{id}/retry makes a
// draft, naming its parent, to exactly the recipients whose messages failed or were undelivered (and, asked,
// those with no receipt after 72 hours), minus the phones that opted out since; launched, it sends to them and
// no one else, checking opt-outs again. Refusals: a draft parent 409 CAMPAIGN_STATE, an unknown `include` 400,
// another organization's campaign 404; none of them makes a campaign. The portal twin does the same.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { campaignKit } from './helpers/campaigns.ts';
import { freshNumber, runFor, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

/** Noon in Washington, DC on a weekday: inside the default quiet hours there. */
const NOON_EASTERN = new Date('2026-11-24T17:00:00.000Z');

describe('campaign follow-ups', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());
  const { api, list, campaign, get, messagesOf } = campaignKit(() => t);
  const campaignCount = async (organizationId: string) =>
    (
      await t.ctx.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM campaigns WHERE organization_id = $1',
        [organizationId],
      )
    )[0]!.n;

  /**
   * A sent campaign of eight: delivered, failed by the carrier (suffix 0666), failed by receipt, undelivered
   * twice, silent (0669: never a receipt), and one of the failed and one undelivered who opt out afterwards.
   */
  async function partlyFailed() {
    t.ctx.clock.set(NOON_EASTERN);
    const acme = await sender(t, {}, { type: 'toll_free' });
    const phones = ['+12025550666', '+12025553669', ...Array.from({ length: 6 }, () => freshNumber())];
    const l = await list(
      acme,
      phones.length,
      () => ({}),
      (i) => phones[i]!,
    );
    const parent = await campaign(acme, { contactListIds: [l.listId], message: 'Sale {{first_name}}' });
    assert.equal((await api(acme, 'POST', `/campaigns/${parent.id}/launch`)).status, 200);
    await runFor(t, 5);
    const byPhone = new Map((await messagesOf(parent.id)).map((m) => [m.to_number, m.id]));
    const [delivered, failedByReceipt, undelivered1, undelivered2, failedThenOut, undeliveredThenOut] =
      phones.slice(2);
    for (const [phone, status] of [
      [delivered, 'delivered'],
      [failedByReceipt, 'failed'],
      [undelivered1, 'undelivered'],
      [undelivered2, 'undelivered'],
      [failedThenOut, 'failed'],
      [undeliveredThenOut, 'undelivered'],
    ] as const) {
      const receipt = await t.admin('POST', '/test/carrier/receipts', {
        messageId: byPhone.get(phone!),
        status,
      });
      assert.equal(receipt.status, 200, receipt.text);
    }
    for (const phone of [failedThenOut, undeliveredThenOut]) {
      const contact = l.contacts.find((c) => c.phone === phone)!;
      assert.equal((await api(acme, 'POST', `/contacts/${contact.id}/opt-out`)).status, 200);
    }
    return {
      acme,
      parent,
      failed: [phones[0]!, failedByReceipt!],
      undelivered: [undelivered1!, undelivered2!],
      silent: phones[1]!,
    };
  }

  test('the follow-up holds exactly the failed and undelivered recipients minus the opted-out, and sends to them', async () => {
    const { acme, parent, failed, undelivered } = await partlyFailed();
    const retried = await api(acme, 'POST', `/campaigns/${parent.id}/retry`);
    assert.equal(retried.status, 201, retried.text);
    const followUp = retried.body.data;
    assert.equal(followUp.status, 'draft');
    assert.equal(followUp.parentCampaignId, parent.id);
    assert.equal(followUp.name, 'Promo (follow-up)');
    assert.equal(followUp.message, 'Sale {{first_name}}');
    assert.deepEqual(followUp.contactListIds, []);
    assert.equal(followUp.recipientCount, 4);
    assert.equal((await get(acme, parent.id)).parentCampaignId, null);

    assert.equal((await api(acme, 'POST', `/campaigns/${followUp.id}/launch`)).status, 200);
    await runFor(t, 5);
    const sent = await messagesOf(followUp.id);
    assert.deepEqual(sent.map((m) => m.to_number).sort(), [...failed, ...undelivered].sort());
    assert.ok(
      sent.every((m) => /^Sale Ann\d$/.test(m.body)),
      'merge fields from the recipients’ contacts',
    );
    const done = await get(acme, followUp.id);
    assert.equal(done.status, 'completed');
    assert.equal(done.recipientCount, 4);
  });

  test('include chooses whose messages: undelivered alone, or with no receipt after 72 hours; opt-outs since are checked again at launch', async () => {
    const { acme, parent, undelivered, silent } = await partlyFailed();
    const only = await api(acme, 'POST', `/campaigns/${parent.id}/retry`, { include: ['undelivered'] });
    assert.equal(only.status, 201, only.text);
    assert.equal(only.body.data.recipientCount, 2);

    // Within 72 hours the silent one is still awaiting its receipt: not chosen.
    const early = await api(acme, 'POST', `/campaigns/${parent.id}/retry`, { include: ['no_receipt'] });
    assert.equal(early.body.data.recipientCount, 0);
    assert.equal((await api(acme, 'POST', `/campaigns/${early.body.data.id}/launch`)).status, 200);
    await runFor(t, 1);
    assert.equal(
      (await get(acme, early.body.data.id)).status,
      'completed',
      'nobody to send to: done at once',
    );
    t.ctx.clock.advance(72 * 3600 + 1);
    const late = await api(acme, 'POST', `/campaigns/${parent.id}/retry`, {
      include: ['undelivered', 'no_receipt'],
    });
    assert.equal(late.status, 201, late.text);
    assert.equal(late.body.data.recipientCount, 3);

    // One of them opts out between the follow-up's making and its launch: skipped, sent nothing.
    const [optedOut] = await t.ctx.db.query<{ id: string }>(
      'SELECT id FROM contacts WHERE organization_id = $1 AND phone = $2',
      [acme.id, undelivered[0]],
    );
    assert.equal((await api(acme, 'POST', `/contacts/${optedOut!.id}/opt-out`)).status, 200);
    t.ctx.clock.set(new Date('2026-11-30T17:00:00.000Z'));
    assert.equal((await api(acme, 'POST', `/campaigns/${late.body.data.id}/launch`)).status, 200);
    await runFor(t, 5);
    assert.deepEqual(
      (await messagesOf(late.body.data.id)).map((m) => m.to_number).sort(),
      [undelivered[1]!, silent].sort(),
    );
    assert.equal((await api(acme, 'GET', `/campaigns/${late.body.data.id}/analytics`)).body.data.skipped, 1);
  });

  test('refusals change nothing: a draft 409, an unknown include 400, an empty include 400, another organization 404', async () => {
    const { acme, parent } = await partlyFailed();
    const other = await sender(t, {}, { type: 'toll_free' });
    const l = await list(acme, 1);
    const draft = await campaign(acme, { contactListIds: [l.listId] });
    const before = await campaignCount(acme.id);

    const ofDraft = await api(acme, 'POST', `/campaigns/${draft.id}/retry`);
    assert.equal(ofDraft.status, 409, ofDraft.text);
    assert.equal(ofDraft.body.code, 'CAMPAIGN_STATE');
    for (const body of [
      { include: ['bounced'] },
      { include: [] },
      { include: ['failed', 'failed'] },
      { x: 1 },
    ]) {
      const refused = await api(acme, 'POST', `/campaigns/${parent.id}/retry`, body);
      assert.equal(refused.status, 400, `${JSON.stringify(body)}: ${refused.text}`);
    }
    const foreign = await api(other, 'POST', `/campaigns/${parent.id}/retry`);
    assert.equal(foreign.status, 404, foreign.text);
    assert.equal(await campaignCount(acme.id), before);
    assert.equal(await campaignCount(other.id), 0);
  });

  test('the portal twin makes the same follow-up, refusals in Shape A', async () => {
    const { acme, parent } = await partlyFailed();
    const user = await createUser(t, { role: 'member', organizationIds: [acme.id] });
    const token = await signIn(t, user);
    const made = await t.request('POST', `/v2/portal/campaigns/${parent.id}/retry`, {
      token,
      body: { include: ['failed'] },
    });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.body.data.parentCampaignId, parent.id);
    assert.equal(made.body.data.recipientCount, 2, 'the two failed ones still subscribed');
    const refused = await t.request('POST', `/v2/portal/campaigns/${made.body.data.id}/retry`, { token });
    assert.equal(refused.status, 409);
    assert.ok(isShapeA(refused.body));
  });
});
