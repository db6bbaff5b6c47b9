// Conversations (CONTRACT section 14) through the HTTP API, on PGlite and PostgreSQL: a thread gathers an
// inbound text, the reply, a missed call and a voicemail of one phone in order, and an AI agent call as one
// item; a STOP shows in the thread and refuses the next reply exactly as a send is refused; the inbox's
// filters and keyset paging; read state; assignment to members only; close, and reopen by a new inbound
// text; the events; another organization's thread is 404 on every route; scopes; the portal twin; and the
// migration's backfill of messages stored before it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { migrate } from '../src/platform/db/migrate.ts';
import { assertRefusedA, assertRefusedB, startTestApp, type TestApp } from './helpers/app.ts';
import { freshNumber, runFor, type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

describe('conversations', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const inboundText = async (from: string, to: string, text: string) => {
    const res = await t.admin('POST', '/test/carrier/inbound', { from, to, text });
    assert.equal(res.status, 201, res.text);
    return res.body.data;
  };
  const eventsOf = async (organizationId: string, type: string) =>
    (
      await t.ctx.db.query<{ data: Record<string, unknown> }>(
        'SELECT data FROM events WHERE organization_id = $1 AND type = $2 ORDER BY created_at, id',
        [organizationId, type],
      )
    ).map((row) => row.data);
  const threadOf = async (who: Sender, phone: string) => {
    const list = await api(who, 'GET', `/conversations?limit=100`);
    assert.equal(list.status, 200, list.text);
    return list.body.data.find((c: { phone: string }) => c.phone === phone);
  };
  const timeline = async (who: Sender, id: string) => {
    const res = await api(who, 'GET', `/conversations/${id}/timeline?limit=100`);
    assert.equal(res.status, 200, res.text);
    return res.body.data as {
      type: string;
      id: string;
      at: string;
      direction: string;
      [k: string]: unknown;
    }[];
  };

  test('a thread gathers an inbound text, the reply, a missed call and a voicemail, in time order', async () => {
    const who = await sender(t);
    const ext = await api(who, 'POST', '/extensions', {
      extension: '101',
      name: 'Reception',
      voicemail: { enabled: false },
    });
    assert.equal(ext.status, 201, ext.text);
    const [number] = (await api(who, 'GET', '/numbers')).body.data;
    const routed = await api(who, 'PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'extension', target: ext.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
    const phone = freshNumber('415');

    const inbound = await inboundText(phone, who.number, 'Is my order ready?');
    const thread = await threadOf(who, phone);
    assert.match(thread.id, /^conv_/);
    assert.deepEqual(
      { ...thread, id: undefined, lastActivityAt: undefined, createdAt: undefined },
      {
        id: undefined,
        contactId: null,
        phone,
        number: who.number,
        status: 'open',
        unreadCount: 1,
        assignedTo: null,
        lastActivityAt: undefined,
        lastMessage: {
          id: inbound.message.id,
          direction: 'inbound',
          body: 'Is my order ready?',
          status: 'received',
          mediaCount: 0,
          at: inbound.message.createdAt,
        },
        createdAt: undefined,
      },
    );
    const created = await eventsOf(who.id, 'conversation.created');
    assert.deepEqual(created, [{ ...thread }]);

    t.ctx.clock.advance(1);
    const reply = await api(who, 'POST', `/conversations/${thread.id}/messages`, {
      message: 'Yes, {{first_name|there}}: come by any time',
    });
    assert.equal(reply.status, 202, reply.text);
    assert.equal(reply.body.data.to, phone);
    assert.equal(reply.body.data.from, who.number);
    assert.equal(reply.body.data.body, 'Yes, there: come by any time');
    const sent = await api(who, 'GET', `/messages/${reply.body.data.id}`);
    assert.equal(sent.status, 200, 'the reply is a message like any send');

    t.ctx.clock.advance(1);
    const missed = await t.admin('POST', '/test/pbx/inbound', {
      from: phone,
      to: who.number,
      outcome: 'no_answer',
    });
    assert.equal(missed.status, 201, missed.text);
    assert.equal(missed.body.data.status, 'no_answer');
    const voicemailOn = await api(who, 'PATCH', `/extensions/${ext.body.data.id}`, {
      voicemail: { enabled: true },
    });
    assert.equal(voicemailOn.status, 200, voicemailOn.text);
    t.ctx.clock.advance(1);
    const left = await t.admin('POST', '/test/pbx/inbound', {
      from: phone,
      to: who.number,
      outcome: 'no_answer',
      voicemailText: 'Call me back please',
    });
    assert.equal(left.status, 201, left.text);
    assert.match(left.body.data.voicemailId, /^vm_/);

    const items = await timeline(who, thread.id);
    // Newest first: read backwards, it is the thread in time order.
    const inOrder = [...items].reverse();
    assert.deepEqual(
      inOrder.map((item) => [item.type, item.id, item.direction]),
      [
        ['message', inbound.message.id, 'inbound'],
        ['message', reply.body.data.id, 'outbound'],
        ['call', missed.body.data.id, 'inbound'],
        ['call', left.body.data.id, 'inbound'],
        ['voicemail', left.body.data.voicemailId, 'inbound'],
      ],
    );
    const times = inOrder.map((item) => Date.parse(item.at));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => a - b),
    );
    assert.equal(inOrder[1]!.body, 'Yes, there: come by any time');
    assert.equal(inOrder[2]!.status, 'no_answer');
    assert.equal(typeof inOrder[4]!.durationSeconds, 'number');

    // The reply is handed to the carrier: its item follows its status.
    await runFor(t, 5);
    const after = await timeline(who, thread.id);
    assert.equal(after.find((item) => item.id === reply.body.data.id)!.status, 'sent');
    const receipt = await t.admin('POST', '/test/carrier/receipts', {
      messageId: reply.body.data.id,
      status: 'delivered',
    });
    assert.equal(receipt.status, 200, receipt.text);
    const delivered = await timeline(who, thread.id);
    assert.equal(delivered.find((item) => item.id === reply.body.data.id)!.status, 'delivered');
    const again = (await api(who, 'GET', `/conversations/${thread.id}`)).body.data;
    assert.equal(again.unreadCount, 4, 'the text, two calls and the voicemail are inbound and unread');
    assert.equal(again.lastMessage.id, reply.body.data.id);
    assert.equal(again.lastMessage.status, 'delivered');
    assert.equal(again.lastActivityAt, [...delivered].sort((a, b) => b.at.localeCompare(a.at))[0]!.at);

    const read = await api(who, 'POST', `/conversations/${thread.id}/read`);
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.data.unreadCount, 0);
    // The simulated PBX stamps a call's voicemail at the end of the call it plays through: past it.
    t.ctx.clock.advance(60);
    await inboundText(phone, who.number, 'Thanks!');
    assert.equal((await api(who, 'GET', `/conversations/${thread.id}`)).body.data.unreadCount, 1);
    assert.equal((await eventsOf(who.id, 'conversation.created')).length, 1, 'still one thread');
  });

  test('an AI agent call is one agent_call item, with its agent and summary, not also a call', async () => {
    const who = await sender(t);
    const agent = await api(who, 'POST', '/agents', {
      name: 'Receptionist',
      firstMessage: 'Bright Smile Dental, how can I help?',
    });
    assert.equal(agent.status, 201, agent.text);
    const [number] = (await api(who, 'GET', '/numbers')).body.data;
    await api(who, 'PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'agent', target: agent.body.data.id },
    });
    const phone = freshNumber('415');
    const arrived = await t.admin('POST', '/test/pbx/inbound', { from: phone, to: who.number });
    assert.equal(arrived.status, 201, arrived.text);
    const hungUp = await t.admin('POST', `/test/pbx/calls/${arrived.body.data.id}`, { event: 'completed' });
    assert.equal(hungUp.status, 200, hungUp.text);
    // The agent call ends in the background once the line is closed.
    let items: Awaited<ReturnType<typeof timeline>> = [];
    for (let tries = 0; tries < 100 && !items.some((item) => item.type === 'agent_call'); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const thread = await threadOf(who, phone);
      if (thread) items = await timeline(who, thread.id);
    }
    assert.deepEqual(
      items.map((item) => [item.type, item.direction, item.agentId]),
      [['agent_call', 'inbound', agent.body.data.id]],
    );
    assert.match(items[0]!.id, /^acall_/);
    assert.equal(typeof items[0]!.summary, 'string');
  });

  test('a STOP shows in the thread and the next reply is refused as a send is (403 RECIPIENT_OPTED_OUT)', async () => {
    const who = await sender(t);
    const phone = freshNumber('415');
    await inboundText(phone, who.number, 'Hello');
    const thread = await threadOf(who, phone);
    const stop = await inboundText(phone, who.number, 'STOP');
    assert.equal(stop.keyword, 'stop');
    await runFor(t, 5);
    const items = await timeline(who, thread.id);
    assert.ok(
      items.some((item) => item.id === stop.message.id && item.body === 'STOP'),
      'the STOP is in it',
    );
    assert.ok(
      items.some((item) => item.id === stop.reply.id && item.direction === 'outbound'),
      'and its answer',
    );

    const refused = await api(who, 'POST', `/conversations/${thread.id}/messages`, { message: 'Wait!' });
    assertRefusedB(refused, 403, 'RECIPIENT_OPTED_OUT');
    const direct = await api(who, 'POST', '/messages/send', { to: phone, message: 'Wait!' });
    assert.deepEqual(refused.body, direct.body, 'exactly as a send is refused');
    assert.equal((await timeline(who, thread.id)).length, items.length, 'nothing was added');
  });

  test('a reply with an Idempotency-Key sent twice is one message, answered again', async () => {
    const who = await sender(t);
    const phone = freshNumber('415');
    await inboundText(phone, who.number, 'Hello?');
    const thread = await threadOf(who, phone);
    const reply = () =>
      t.request('POST', `/api/v2/conversations/${thread.id}/messages`, {
        apiKey: who.key,
        body: { message: 'Hi there' },
        headers: { 'idempotency-key': 'reply-1' },
      });
    const first = await reply();
    const second = await reply();
    assert.equal(first.status, 202, first.text);
    assert.equal(second.status, 202, second.text);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.body.data.id, first.body.data.id);
    assert.equal((await timeline(who, thread.id)).length, 2, 'the text and one reply');
  });

  test('inbox filters and keyset paging, newest activity first', async () => {
    const who = await sender(t);
    const phones = [freshNumber('415'), freshNumber('415'), freshNumber('415')];
    for (const phone of phones) {
      t.ctx.clock.advance(1);
      await inboundText(phone, who.number, `hi from ${phone}`);
    }
    const all = await api(who, 'GET', '/conversations');
    assert.deepEqual(
      all.body.data.map((c: { phone: string }) => c.phone),
      [...phones].reverse(),
    );
    assert.equal(all.body.pagination.total, 3);

    const first = await api(who, 'GET', '/conversations?limit=2&cursor=');
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.data.length, 2);
    assert.ok(first.body.next_cursor);
    const second = await api(
      who,
      'GET',
      `/conversations?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`,
    );
    assert.deepEqual(
      [...first.body.data, ...second.body.data].map((c: { phone: string }) => c.phone),
      [...phones].reverse(),
    );
    assert.equal(second.body.next_cursor, null);
    const otherFilter = await api(
      who,
      'GET',
      `/conversations?limit=2&status=open&cursor=${encodeURIComponent(first.body.next_cursor)}`,
    );
    assertRefusedB(otherFilter, 400, undefined);

    const oldest = await threadOf(who, phones[0]!);
    await api(who, 'POST', `/conversations/${oldest.id}/read`);
    const unread = await api(who, 'GET', '/conversations?unread=true');
    assert.deepEqual(
      unread.body.data.map((c: { phone: string }) => c.phone),
      [phones[2], phones[1]],
    );
    const closed = await api(who, 'PATCH', `/conversations/${oldest.id}`, { status: 'closed' });
    assert.equal(closed.status, 200, closed.text);
    assert.deepEqual(
      (await api(who, 'GET', '/conversations?status=closed')).body.data.map((c: { id: string }) => c.id),
      [oldest.id],
    );
    assert.equal((await api(who, 'GET', '/conversations?status=open')).body.data.length, 2);
    assert.equal(
      (await api(who, 'GET', `/conversations?number=${encodeURIComponent(who.number)}`)).body.data.length,
      3,
    );
    assert.equal(
      (await api(who, 'GET', `/conversations?number=${encodeURIComponent(freshNumber())}`)).body.data.length,
      0,
    );
    assert.equal((await api(who, 'GET', '/conversations?assignedTo=none')).body.data.length, 3);
    assertRefusedB(await api(who, 'GET', '/conversations?status=archived'), 400, undefined);
  });

  test('assign to a member (conversation.assigned), not to anyone else; close (conversation.closed); a text reopens', async () => {
    const who = await sender(t);
    const member = await createUser(t, { role: 'member', organizationIds: [who.id] });
    const stranger = await createUser(t);
    const phone = freshNumber('415');
    await inboundText(phone, who.number, 'Hi');
    const thread = await threadOf(who, phone);

    const assigned = await api(who, 'PATCH', `/conversations/${thread.id}`, { assignedTo: member.id });
    assert.equal(assigned.status, 200, assigned.text);
    assert.equal(assigned.body.data.assignedTo, member.id);
    assert.deepEqual(await eventsOf(who.id, 'conversation.assigned'), [assigned.body.data]);
    assert.equal(
      (await api(who, 'GET', `/conversations?assignedTo=${member.id}`)).body.data[0].id,
      thread.id,
    );
    const again = await api(who, 'PATCH', `/conversations/${thread.id}`, { assignedTo: member.id });
    assert.equal(again.status, 200);
    assert.equal((await eventsOf(who.id, 'conversation.assigned')).length, 1, 'no change, no event');

    for (const assignee of [stranger.id, 'usr_nobody']) {
      const refused = await api(who, 'PATCH', `/conversations/${thread.id}`, { assignedTo: assignee });
      assertRefusedB(refused, 400, undefined);
    }
    assert.equal((await api(who, 'GET', `/conversations/${thread.id}`)).body.data.assignedTo, member.id);

    const closed = await api(who, 'PATCH', `/conversations/${thread.id}`, { status: 'closed' });
    assert.equal(closed.body.data.status, 'closed');
    assert.deepEqual(await eventsOf(who.id, 'conversation.closed'), [closed.body.data]);
    await inboundText(phone, who.number, 'One more thing');
    assert.equal((await api(who, 'GET', `/conversations/${thread.id}`)).body.data.status, 'open');
    await api(who, 'PATCH', `/conversations/${thread.id}`, { status: 'closed', assignedTo: null });
    const reopened = await api(who, 'PATCH', `/conversations/${thread.id}`, { status: 'open' });
    assert.equal(reopened.body.data.status, 'open');
    assert.equal(reopened.body.data.assignedTo, null);
    assert.equal((await eventsOf(who.id, 'conversation.closed')).length, 2);
  });

  test("another organization's conversation is 404 on every route; scopes are enforced", async () => {
    const owner = await sender(t);
    const other = await sender(t);
    const phone = freshNumber('415');
    await inboundText(phone, owner.number, 'Hi');
    const thread = await threadOf(owner, phone);
    const routes: [string, string, unknown?][] = [
      ['GET', `/conversations/${thread.id}`],
      ['GET', `/conversations/${thread.id}/timeline`],
      ['POST', `/conversations/${thread.id}/messages`, { message: 'x' }],
      ['POST', `/conversations/${thread.id}/read`],
      ['PATCH', `/conversations/${thread.id}`, { status: 'closed' }],
    ];
    for (const [method, path, body] of routes) {
      assertRefusedB(await api(other, method, path, body), 404, undefined);
    }
    assert.equal((await api(other, 'GET', '/conversations')).body.data.length, 0);
    const unchanged = (await api(owner, 'GET', `/conversations/${thread.id}`)).body.data;
    assert.equal(unchanged.status, 'open');
    assert.equal(unchanged.unreadCount, 1);

    const { secret: readOnly } = await t.ctx.apiKeys.create(owner.id, {
      name: 'r',
      scopes: ['conversations:read'] as never,
    });
    const { secret: messagesOnly } = await t.ctx.apiKeys.create(owner.id, {
      name: 'm',
      scopes: ['messages:read', 'messages:send'] as never,
    });
    const as = (key: string, method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: key, body });
    assert.equal((await as(readOnly, 'GET', '/conversations')).status, 200);
    assert.equal((await as(readOnly, 'GET', `/conversations/${thread.id}/timeline`)).status, 200);
    assertRefusedB(await as(messagesOnly, 'GET', '/conversations'), 403, 'insufficient_scope');
    for (const [method, path, body] of routes.slice(2)) {
      assertRefusedB(await as(readOnly, method, path, body), 403, 'insufficient_scope');
    }
  });

  test('the portal twin: any member reads, replies, marks read and assigns; errors in Shape A', async () => {
    const who = await sender(t);
    const member = await createUser(t, { role: 'member', organizationIds: [who.id] });
    const token = await signIn(t, member);
    const phone = freshNumber('415');
    await inboundText(phone, who.number, 'Hi');
    const portal = (method: string, path: string, body?: unknown) =>
      t.request(method, `/v2/portal${path}`, { token, body });
    const list = await portal('GET', '/conversations');
    assert.equal(list.status, 200, list.text);
    const thread = list.body.data[0];
    assert.equal(thread.phone, phone);
    assert.equal(
      (await portal('POST', `/conversations/${thread.id}/messages`, { message: 'Hello' })).status,
      202,
    );
    assert.equal((await portal('POST', `/conversations/${thread.id}/read`)).body.data.unreadCount, 0);
    const mine = await portal('PATCH', `/conversations/${thread.id}`, { assignedTo: member.id });
    assert.equal(mine.body.data.assignedTo, member.id);
    assertRefusedA(await portal('GET', '/conversations/conv_missing'), 404, undefined);
    assertRefusedA(await portal('POST', `/conversations/${thread.id}/messages`, {}), 400, undefined);
  });
});

describe('conversations: messages from before the migration', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('045 threads every stored message set-based, as read', async () => {
    const who = await sender(t);
    const [ada, bob] = [freshNumber('415'), freshNumber('415')];
    await t.admin('POST', '/test/carrier/inbound', { from: ada, to: who.number, text: 'Hi, Ada here' });
    t.ctx.clock.advance(1);
    const sent = await t.request('POST', '/api/v2/messages/send', {
      apiKey: who.key,
      body: { to: ada, message: 'Hello Ada' },
    });
    assert.equal(sent.status, 202, sent.text);
    t.ctx.clock.advance(1);
    await t.request('POST', '/api/v2/messages/send', {
      apiKey: who.key,
      body: { to: bob, message: 'Hi Bob' },
    });
    // The database as it was before 045: messages, no conversations.
    await t.ctx.db.exec(
      `DROP TABLE conversation_items; DROP TABLE conversations;
       DELETE FROM schema_migrations WHERE name = '045_conversations.sql';`,
    );
    assert.deepEqual(await migrate(t.ctx.db), ['045_conversations.sql']);

    const list = await t.request('GET', '/api/v2/conversations', { apiKey: who.key });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.data.map((c: { phone: string; unreadCount: number; status: string }) => [
        c.phone,
        c.unreadCount,
        c.status,
      ]),
      [
        [bob, 0, 'open'],
        [ada, 0, 'open'],
      ],
    );
    const adaThread = list.body.data[1];
    assert.match(adaThread.id, /^conv_/);
    assert.equal(adaThread.lastMessage.body, 'Hello Ada');
    const items = await t.request('GET', `/api/v2/conversations/${adaThread.id}/timeline`, {
      apiKey: who.key,
    });
    assert.deepEqual(
      items.body.data.map((item: { body: string; direction: string }) => [item.direction, item.body]),
      [
        ['outbound', 'Hello Ada'],
        ['inbound', 'Hi, Ada here'],
      ],
    );
    // Threading goes on from there: the next text joins the backfilled thread and is unread.
    t.ctx.clock.advance(1);
    await t.admin('POST', '/test/carrier/inbound', { from: ada, to: who.number, text: 'Thanks' });
    const again = await t.request('GET', `/api/v2/conversations/${adaThread.id}`, { apiKey: who.key });
    assert.equal(again.body.data.unreadCount, 1);
  });
});
