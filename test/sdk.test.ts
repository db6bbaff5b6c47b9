// The TypeScript SDK (sdk/) against a real server over a real socket: every developer-API method called at
// least once through the typed client; keyset auto-paging over 250 messages returns each once; a 429 with
// Retry-After is waited out (the test clock moves with the wait); TRIAL_LIMIT_REACHED `lifetime` is not
// retried; a send, and a contact create, whose answer is lost with its connection is retried with the same
// Idempotency-Key and acts once; a retry meeting its first attempt still running (409) waits; webhook
// verification accepts a real delivery and refuses a tampered one. And the generated types and operation
// table match the server's current /openapi.json (regenerated here and compared).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateSources, serverDocument, staleFiles } from '../sdk/scripts/generate.ts';
import {
  Comms,
  CommsApiError,
  NotFoundError,
  OPERATIONS,
  type OperationId,
  RateLimitError,
  WebhookVerificationError,
  webhooks,
} from '../sdk/src/index.ts';
import { encodeWav, tone } from '../src/modules/voice/audio.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { loseFirstAnswer } from './helpers/lossy-proxy.ts';
import { countRows, type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { startReceiver } from './helpers/receiver.ts';
import { transcriptionServer } from './helpers/transcription-server.ts';

/** Records which operations a client's methods were called for. */
function instrument(comms: Comms): Set<OperationId> {
  const called = new Set<OperationId>();
  for (const operationId of Object.keys(OPERATIONS) as OperationId[]) {
    const names = operationId.split('.');
    let node = comms as unknown as Record<string, any>;
    for (const name of names.slice(0, -1)) node = node[name];
    const method = node[names.at(-1)!];
    node[names.at(-1)!] = (...args: unknown[]) => {
      called.add(operationId);
      return method(...args);
    };
  }
  return called;
}

describe('the SDK against a real server', () => {
  let t: TestApp;
  let transcriber: Awaited<ReturnType<typeof transcriptionServer>>;
  before(async () => {
    // Voicemails are transcribed by a local server speaking the OpenAI transcription API.
    transcriber = await transcriptionServer(() => ({ status: 200, body: '{"text":"Please call me back."}' }));
    t = await startTestApp({ config: { transcriptionUrl: transcriber.url, transcriptionApiKey: 'sk-test' } });
  });
  after(async () => {
    await t.close();
    await transcriber.server.close();
  });

  const client = (who: Sender, options: ConstructorParameters<typeof Comms>[0] = {}) =>
    new Comms({ apiKey: who.key, baseUrl: t.url, ...options });

  test('the generated types and operation table match the server’s /openapi.json', async () => {
    const stale = await staleFiles(await generateSources(await serverDocument()));
    assert.deepEqual(stale, [], 'run: npm run generate -w sdk');
  });

  test('every developer-API method, called through the typed client', async () => {
    const who = await sender(t);
    const comms = client(who);
    const called = instrument(comms);

    // System and account.
    assert.equal((await comms.system.health()).status, 'ok');
    assert.deepEqual(await comms.system.live(), { status: 'ok' });
    assert.equal((await comms.system.ready()).database, 'ok');
    assert.ok(await comms.system.version());
    assert.equal((await comms.me.get()).organization.id, who.id);

    // Numbers.
    const [available] = await comms.numbers.available({ country: 'US', limit: 1 });
    const bought = await comms.numbers.buy({ number: available!.number, friendlyName: 'Sales' });
    assert.equal((await comms.numbers.get(bought.id)).friendlyName, 'Sales');
    assert.ok((await comms.numbers.list()).data.some((each) => each.id === bought.id));

    // Contacts and lists.
    const contact = await comms.contacts.create({ phone: '+14155550100', firstName: 'Ada' });
    assert.equal((await comms.contacts.get(contact.id)).firstName, 'Ada');
    assert.equal((await comms.contacts.update(contact.id, { lastName: 'Lovelace' })).lastName, 'Lovelace');
    const imported = await comms.contacts.import({
      file: new TextEncoder().encode('phone,first name\n+14155550101,Grace\nnot a phone,Bad\n'),
      filename: 'contacts.csv',
      contentType: 'text/csv',
    });
    assert.equal(imported.imported, 1);
    assert.equal(imported.errors.length, 1);
    await comms.contacts.optOut(contact.id);
    await comms.contacts.optIn(contact.id, { reason: 'Asked again at the counter' });
    assert.ok((await comms.contacts.consentHistory(contact.id)).data.length >= 2);
    assert.ok((await comms.contacts.list({ search: 'Ada' })).data.length >= 1);
    const list = await comms.contactLists.create({ name: 'VIP' });
    await comms.contactLists.update(list.id, { description: 'Best customers' });
    await comms.contactLists.members.add(list.id, { contactIds: [contact.id] });
    assert.equal((await comms.contactLists.members.list(list.id)).data.length, 1);
    await comms.contactLists.members.remove(list.id, { contactIds: [contact.id] });
    assert.equal((await comms.contactLists.get(list.id)).name, 'VIP');
    assert.ok((await comms.contactLists.list()).data.length >= 1);

    // Messages.
    const segments = await comms.messages.segments({ message: 'Hello' });
    assert.equal(segments.segments, 1);
    const sent = await comms.messages.send({ to: '+14155550102', message: 'Hello from the SDK' });
    assert.equal((await comms.messages.get(sent.id)).body, 'Hello from the SDK');
    assert.ok((await comms.messages.list({ direction: 'outbound' })).data.length >= 1);
    assert.ok((await comms.messages.stats()) !== undefined);
    assert.equal((await comms.messages.hourly()).buckets.length, 24);
    const sendAt = new Date(t.ctx.clock.nowMs() + 60 * 60 * 1000).toISOString();
    const later = await comms.messages.send({ to: '+14155550102', message: 'Later', sendAt });
    assert.equal(later.status, 'scheduled');
    assert.equal((await comms.messages.cancel(later.id)).status, 'cancelled');

    // Conversations: a customer writes in; the thread is read, answered, assigned and closed.
    const wroteIn = await t.admin('POST', '/test/carrier/inbound', {
      from: '+14155550103',
      to: who.number,
      text: 'Are you open today?',
    });
    assert.equal(wroteIn.status, 201, wroteIn.text);
    const [thread] = (await comms.conversations.list({ unread: true })).data;
    assert.equal(thread!.phone, '+14155550103');
    assert.equal((await comms.conversations.get(thread!.id)).unreadCount, 1);
    const answered = await comms.conversations.reply(thread!.id, { message: 'Until 6pm' });
    assert.equal(answered.to, '+14155550103');
    assert.ok((await comms.conversations.timeline(thread!.id)).data.length >= 2);
    assert.equal((await comms.conversations.markRead(thread!.id)).unreadCount, 0);
    assert.equal((await comms.conversations.update(thread!.id, { status: 'closed' })).status, 'closed');

    // Campaigns.
    await comms.contactLists.members.add(list.id, { contactIds: [contact.id] });
    const campaign = await comms.campaigns.create({
      name: 'Spring',
      message: 'Spring sale',
      contactListIds: [list.id],
    });
    await comms.campaigns.update(campaign.id, { message: 'Spring sale: 20% off' });
    await comms.campaigns.launch(campaign.id);
    await comms.campaigns.pause(campaign.id);
    await comms.campaigns.resume(campaign.id);
    await comms.campaigns.cancel(campaign.id);
    assert.ok(await comms.campaigns.analytics(campaign.id));
    await comms.campaigns.recipients(campaign.id);
    assert.deepEqual((await comms.campaigns.clicks(campaign.id)).data, []);
    assert.equal((await comms.campaigns.get(campaign.id)).status, 'cancelled');
    const followUp = await comms.campaigns.retry(campaign.id, { include: ['failed', 'undelivered'] });
    assert.equal(followUp.parentCampaignId, campaign.id);
    assert.ok((await comms.campaigns.list()).data.length >= 1);
    const draft = await comms.campaigns.create({ name: 'Draft', message: 'x', contactListIds: [list.id] });
    await comms.campaigns.delete(draft.id);

    // Voice: extensions, greetings, calls, voicemail, recordings, transcriptions.
    const extension = await comms.extensions.create({ extension: '101', name: 'Front desk' });
    await comms.extensions.update(extension.id, { name: 'Reception' });
    assert.ok((await comms.extensions.rotatePassword(extension.id)).sip);
    const greeting = encodeWav(tone(1, 440));
    await comms.extensions.uploadGreeting(extension.id, { file: greeting, filename: 'greeting.wav' });
    assert.equal(
      (await comms.extensions.greetingAudio(extension.id)).headers.get('content-type'),
      'audio/wav',
    );
    await comms.extensions.deleteGreeting(extension.id);
    assert.equal((await comms.extensions.get(extension.id)).name, 'Reception');
    assert.ok((await comms.extensions.list()).data.length >= 1);
    // Call flows, ring groups and queues (CONTRACT section 13).
    const flow = await comms.callFlows.create({ name: 'Menu', steps: [{ type: 'say', text: 'Hello' }] });
    assert.equal((await comms.callFlows.update(flow.id, { steps: [{ type: 'hangup' }] })).version, 2);
    assert.equal((await comms.callFlows.get(flow.id)).version, 2);
    assert.ok((await comms.callFlows.list()).data.some((each) => each.id === flow.id));
    await comms.callFlows.delete(flow.id);
    const signing = await comms.callFlows.signingSecret();
    assert.match(signing.secret, /^whsec_/);
    assert.notEqual((await comms.callFlows.rotateSigningSecret()).secret, signing.secret);
    const group = await comms.ringGroups.create({ name: 'Sales', extensionIds: [extension.id] });
    await comms.ringGroups.update(group.id, { name: 'Sales team' });
    assert.equal((await comms.ringGroups.get(group.id)).name, 'Sales team');
    assert.ok((await comms.ringGroups.list()).data.some((each) => each.id === group.id));
    await comms.ringGroups.delete(group.id);
    const queue = await comms.queues.create({ name: 'Support', extensionIds: [extension.id] });
    await comms.queues.update(queue.id, { name: 'Support line' });
    assert.equal((await comms.queues.get(queue.id)).name, 'Support line');
    assert.ok((await comms.queues.list()).data.some((each) => each.id === queue.id));
    assert.deepEqual((await comms.queues.live(queue.id)).waiting, []);
    await comms.queues.delete(queue.id);
    await comms.numbers.update(bought.id, {
      voiceRoute: { type: 'voicemail', target: extension.id },
    } as never);
    const inbound = await t.admin('POST', '/test/pbx/inbound', {
      from: '+14155550181',
      to: bought.number,
      outcome: 'no_answer',
      voicemailText: 'Please call me back.',
    });
    assert.equal(inbound.status, 201, inbound.text);
    const voicemailId = inbound.body.data.voicemailId as string;
    await comms.voicemails.update(voicemailId, { read: true });
    assert.equal((await comms.voicemails.get(voicemailId)).read, true);
    assert.equal((await comms.voicemails.audio(voicemailId)).status, 200);
    assert.ok((await comms.voicemails.list()).data.length >= 1);
    await t.ctx.jobs.drain();
    const [transcription] = (await comms.transcriptions.list()).data;
    assert.equal((await comms.transcriptions.get(transcription!.id)).voicemailId, voicemailId);
    await comms.voicemails.delete(voicemailId);

    const call = await comms.calls.create({
      from: who.number,
      to: '+14155550123',
      extensionId: extension.id,
      record: true,
    });
    for (const event of ['answered', 'answered', 'completed']) {
      await t.admin('POST', `/test/pbx/calls/${call.id}`, { event });
    }
    const ended = await comms.calls.get(call.id);
    assert.equal(ended.status, 'completed');
    assert.ok((await comms.calls.list()).data.some((each) => each.id === call.id));
    assert.ok(!(await comms.calls.list({ live: true })).data.some((each) => each.id === call.id));
    assert.ok((await comms.calls.hourly()).buckets.some((bucket) => bucket.total >= 1));
    const recording = await comms.recordings.get(ended.recordingId!);
    assert.equal((await comms.recordings.audio(recording.id)).status, 200);
    assert.ok((await comms.recordings.list()).data.length >= 1);
    await comms.recordings.delete(recording.id);
    const second = await comms.calls.create({
      from: who.number,
      to: '+14155550124',
      extensionId: extension.id,
    });
    await comms.calls.hangup(second.id);
    // A transfer of a call that has ended is refused with the API's 409.
    await assert.rejects(
      comms.calls.transfer(second.id, { target: { type: 'extension', target: extension.id } }),
      (error: unknown) => error instanceof CommsApiError && error.status === 409,
    );
    await comms.extensions.delete(extension.id);

    // AI agents and knowledge.
    const base = await comms.knowledgeBases.create({ name: 'Help' });
    await comms.knowledgeBases.update(base.id, { description: 'Opening hours' });
    const typed = await comms.knowledgeBases.documents.create(base.id, {
      title: 'Hours',
      content: 'We open at nine in the morning and close at five.',
    });
    const uploaded = await comms.knowledgeBases.documents.create(base.id, {
      file: new TextEncoder().encode('Parking is free behind the shop.'),
      filename: 'parking.txt',
      title: 'Parking',
    });
    assert.equal(uploaded.title, 'Parking');
    await comms.knowledgeBases.documents.update(base.id, typed.id, { title: 'Opening hours' });
    assert.equal((await comms.knowledgeBases.documents.get(base.id, typed.id)).title, 'Opening hours');
    assert.equal((await comms.knowledgeBases.documents.list(base.id)).data.length, 2);
    assert.ok((await comms.knowledgeBases.search(base.id, { query: 'when do you open' })).length >= 1);
    await comms.knowledgeBases.documents.delete(base.id, uploaded.id);
    assert.equal((await comms.knowledgeBases.get(base.id)).name, 'Help');
    assert.ok((await comms.knowledgeBases.list()).data.length >= 1);
    const agent = await comms.agents.create({ name: 'Receptionist', knowledgeBaseIds: [base.id] });
    await comms.agents.update(agent.id, { firstMessage: 'Hello, how can I help?' });
    assert.ok(
      await comms.agents.chat(agent.id, {
        messages: [{ role: 'user', content: 'When do you open?' }],
      } as never),
    );
    const agentCall = await comms.agents.calls.create(agent.id, { to: '+14155550125' });
    assert.equal((await comms.agentCalls.get(agentCall.id)).agentId, agent.id);
    await comms.agentCalls.list();
    assert.equal((await comms.agents.get(agent.id)).name, 'Receptionist');
    assert.ok((await comms.agents.list()).data.length >= 1);
    await comms.agents.delete(agent.id);
    await comms.knowledgeBases.delete(base.id);

    // Exports.
    const exported = await comms.exports.create({ resource: 'contacts', format: 'csv' });
    await t.ctx.jobs.drain();
    assert.equal((await comms.exports.get(exported.id)).status, 'completed');
    assert.ok((await comms.exports.list()).data.length >= 1);
    const file = await comms.exports.download(exported.id);
    assert.match(await file.text(), /Ada/);

    // Webhooks (listed with the key; managed in the console or /api/webhooks).
    await comms.webhooks.list();

    // Deletions last.
    await comms.contactLists.delete(list.id);
    await comms.contacts.delete(contact.id);
    await comms.numbers.release(bought.id);
    await assert.rejects(comms.contacts.get(contact.id), NotFoundError);

    const missing = (Object.keys(OPERATIONS) as OperationId[]).filter((each) => !called.has(each));
    assert.deepEqual(missing, [], 'operations no test called');
  });

  test('a refusal is a typed error with its status, code and reason', async () => {
    const comms = client(await sender(t));
    const error = await comms.messages.send({ to: 'not a number', message: 'x' }).catch((caught) => caught);
    assert.ok(error instanceof CommsApiError);
    assert.equal(error.status, 400);
    assert.equal(typeof error.message, 'string');
    const bad = new Comms({ apiKey: 'sk_live_wrong', baseUrl: t.url });
    const unauthorized = await bad.me.get().catch((caught) => caught);
    assert.equal(unauthorized.name, 'AuthenticationError');
    assert.equal(unauthorized.status, 401);
  });

  test('auto-paging over 250 messages in keyset mode returns each once, newest first', async () => {
    const who = await sender(t);
    const rows = Array.from({ length: 250 }, (_, i) => i);
    await t.ctx.db.query(
      `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                             encoding, status, status_updated_at, created_at)
       SELECT 'msg_page_' || lpad(i::text, 4, '0'), $1, 'outbound', 'api', $2, '+14155550199', 'Page ' || i, 1,
              'GSM-7', 'delivered', $3, $3::timestamptz - i * interval '1 second'
         FROM unnest($4::int[]) AS i`,
      [who.id, who.number, t.ctx.clock.now(), rows],
    );
    const requests: string[] = [];
    const comms = client(who, {
      fetch: (input, init) => {
        requests.push(String(input));
        return fetch(input, init);
      },
    });
    const seen: string[] = [];
    for await (const message of comms.messages.list({ limit: 40 })) seen.push(message.id);
    assert.equal(seen.length, 250);
    assert.equal(new Set(seen).size, 250, 'each message once');
    assert.deepEqual(
      seen,
      rows.map((i) => `msg_page_${String(i).padStart(4, '0')}`),
    );
    assert.equal(requests.length, 7, '40 a page: six full pages and one of ten');
    assert.ok(
      requests.every((url) => new URL(url).searchParams.has('cursor')),
      'keyset mode throughout',
    );

    // Offset mode elsewhere: the first page when awaited, every record when iterated.
    const page = await comms.messages.list({ limit: 10, page: 2 });
    assert.equal(page.data.length, 10);
    assert.equal(page.pagination.page, 2);
    assert.equal(page.data[0]!.id, 'msg_page_0010');
  });

  test('a multipart upload names each text field once, before the file', async () => {
    const who = await sender(t);
    let sentBody = '';
    const comms = client(who, {
      fetch: async (input, init) => {
        if (init?.body instanceof Uint8Array) sentBody = new TextDecoder().decode(init.body);
        return fetch(input, init);
      },
    });
    const base = await comms.knowledgeBases.create({ name: 'Once' });
    const document = await comms.knowledgeBases.documents.create(base.id, {
      file: new TextEncoder().encode('Deliveries come to the side door.'),
      filename: 'deliveries.txt',
      title: 'Deliveries',
    });
    assert.equal(document.title, 'Deliveries');
    assert.equal(sentBody.split('name="title"').length - 1, 1, 'the title is sent once');
    assert.ok(
      sentBody.indexOf('name="title"') < sentBody.indexOf('name="file"'),
      'fields come before the file',
    );
  });

  test('a 429 with Retry-After is waited out and then sent once; the same key both times', async () => {
    const who = await sender(t);
    // The organization's 30 sends of this minute spent early in the minute (30 sends take seconds on a loaded
    // machine, and the test clock is real time plus its moves), then the clock moved to one second before the
    // minute turns.
    const untilTurn = () => 60_000 - (t.ctx.clock.now().getTime() % 60_000);
    t.ctx.clock.advance(untilTurn() / 1000);
    for (let i = 0; i < 30; i++) {
      const res = await t.request('POST', '/api/v2/messages/send', {
        apiKey: who.key,
        body: { to: '+14155550103', message: `filler ${i}` },
      });
      assert.equal(res.status, 202, res.text);
    }
    t.ctx.clock.advance((untilTurn() - 1000) / 1000);
    const attempts: { status: number; key: string | null; retryAfter: string | null }[] = [];
    const comms = client(who, {
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        attempts.push({
          status: response.status,
          key: new Headers(init?.headers).get('idempotency-key'),
          retryAfter: response.headers.get('retry-after'),
        });
        // The server's clock moves on with the client's wait.
        if (response.status === 429) t.ctx.clock.advance(Number(response.headers.get('retry-after')));
        return response;
      },
    });
    const sent = await comms.messages.send({ to: '+14155550104', message: 'After the wait' });
    assert.deepEqual(
      attempts.map((each) => each.status),
      [429, 202],
    );
    assert.equal(attempts[0]!.retryAfter, '1');
    assert.ok(attempts[0]!.key);
    assert.equal(attempts[1]!.key, attempts[0]!.key, 'the retry carries the same Idempotency-Key');
    assert.equal(
      await countRows(t, "SELECT 1 FROM messages WHERE id = $1 AND body = 'After the wait'", [sent.id]),
      1,
    );
  });

  test('TRIAL_LIMIT_REACHED lifetime is not retried; a wait longer than allowed is not waited', async () => {
    const trial = await sender(t, { subscriptionState: 'trial', cardVerified: false, trialMessageLimit: 1 });
    let requests = 0;
    const comms = client(trial, {
      fetch: (input, init) => {
        requests++;
        return fetch(input, init);
      },
    });
    await comms.messages.send({ to: '+14155550105', message: 'The only one' });
    requests = 0;
    const error = await comms.messages
      .send({ to: '+14155550105', message: 'One more' })
      .catch((caught) => caught);
    assert.ok(error instanceof RateLimitError);
    assert.equal(error.status, 429);
    assert.equal(error.code, 'TRIAL_LIMIT_REACHED');
    assert.equal(error.reason, 'lifetime');
    assert.equal(requests, 1, 'asked once: retrying cannot help');
  });

  test('a send whose answer is lost with its connection is retried with its key and sends once', async () => {
    const who = await sender(t);
    const proxy = await loseFirstAnswer(t.url);
    try {
      const comms = new Comms({ apiKey: who.key, baseUrl: proxy.url });
      const sent = await comms.messages.send({ to: '+14155550106', message: 'Exactly once' });
      assert.equal(proxy.connections(), 2, 'the answer was lost once and the send retried');
      assert.equal(
        await countRows(t, "SELECT 1 FROM messages WHERE organization_id = $1 AND body = 'Exactly once'", [
          who.id,
        ]),
        1,
      );
      assert.match(sent.id, /^msg_/);
    } finally {
      proxy.close();
    }
  });

  test('any other write whose answer is lost (contacts.create) is retried with its key and acts once', async () => {
    const who = await sender(t);
    const proxy = await loseFirstAnswer(t.url);
    try {
      const comms = new Comms({ apiKey: who.key, baseUrl: proxy.url });
      const contact = await comms.contacts.create({ phone: '+14155550108', firstName: 'Once' });
      assert.equal(proxy.connections(), 2, 'the answer was lost once and the create retried');
      const rows = await t.ctx.db.query<{ id: string }>(
        "SELECT id FROM contacts WHERE organization_id = $1 AND phone = '+14155550108'",
        [who.id],
      );
      assert.deepEqual(
        rows.map((row) => row.id),
        [contact.id],
        'one contact: the retry was answered with the first answer',
      );
    } finally {
      proxy.close();
    }
  });

  test('a retry that finds its first attempt still running (409 IDEMPOTENCY_KEY_IN_USE) waits and asks again', async () => {
    const who = await sender(t);
    const attempts: (number | string)[] = [];
    let first: { key: string; token: string } | undefined;
    const keyed = (key: string) => ({ organizationId: who.id, operation: 'contacts.create', key });
    const comms = client(who, {
      fetch: async (input, init) => {
        const key = new Headers(init?.headers).get('idempotency-key')!;
        if (!first) {
          // The first attempt reached the server, which is still at work on it, and its connection was lost.
          const reservation = await t.ctx.idempotency.reserve(keyed(key), 'the first attempt');
          assert.ok(reservation.reserved);
          first = { key, token: reservation.token };
          attempts.push('lost');
          throw new TypeError('fetch failed', {
            cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }),
          });
        }
        const response = await fetch(input, init);
        attempts.push(response.status);
        // While the retry waits, the first attempt ends: refused, so its key is free again.
        if (response.status === 409) await t.ctx.idempotency.release(keyed(first.key), first.token);
        return response;
      },
    });
    const contact = await comms.contacts.create({ phone: '+14155550109' });
    assert.deepEqual(attempts, ['lost', 409, 201]);
    assert.equal(
      await countRows(t, "SELECT 1 FROM contacts WHERE organization_id = $1 AND phone = '+14155550109'", [
        who.id,
      ]),
      1,
    );
    assert.match(contact.id, /^ct_/);
  });

  test('webhooks.verify accepts a real delivery and refuses a tampered, forged or stale one', async () => {
    const who = await sender(t);
    const receiver = await startReceiver(() => t.ctx.clock.now().getTime());
    try {
      const token = await signIn(t, await createUser(t, { organizationIds: [who.id] }));
      const created = await t.request('POST', '/api/webhooks', {
        token,
        body: {
          url: `${receiver.url}/hooks`,
          events: ['message.sent'],
        },
      });
      assert.equal(created.status, 201, created.text);
      const secret = created.body.data.secret as string;
      await client(who).messages.send({ to: '+14155550107', message: 'Hook me' });
      for (let i = 0; i < 50 && receiver.received.length === 0; i++) await t.ctx.jobs.drain();
      assert.equal(receiver.received.length, 1, 'one delivery');
      const [delivery] = receiver.received;

      const event = webhooks.verify(delivery!.body, delivery!.headers, secret);
      assert.equal(event.type, 'message.sent');
      const tampered = delivery!.body.replace('Hook me', 'Hook you');
      assert.throws(() => webhooks.verify(tampered, delivery!.headers, secret), WebhookVerificationError);
      assert.throws(
        () =>
          webhooks.verify(
            delivery!.body,
            delivery!.headers,
            `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
          ),
        WebhookVerificationError,
      );
      const sentAt = Number(delivery!.headers['webhook-timestamp']) * 1000;
      assert.throws(
        () => webhooks.verify(delivery!.body, delivery!.headers, secret, { now: sentAt + 10 * 60_000 }),
        /tolerance/,
      );
    } finally {
      await receiver.close();
    }
  });
});
