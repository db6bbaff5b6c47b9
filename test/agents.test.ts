// Agents (CONTRACT section 10) over a real socket: CRUD with defaults, every field validated (knowledge bases
// of the organization, tools' parameters valid JSON Schema, transferTo a phone or an extension) with nothing
// written on a refusal; numbers routed to an agent; and the chat endpoint with the offline brain: answers
// grounded in the knowledge base with sources, "I don't know" with a transfer offer, transfers, end-call
// phrases; other organizations, scopes, the agents product.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

describe('agents', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const org = (fields: Record<string, unknown> = {}, scopes?: string[]) => sender(t, fields, { scopes });
  const knowledgeBase = async (who: Sender, documents: Record<string, string>) => {
    const kb = (await api(who, 'POST', '/knowledge-bases', { name: 'FAQ' })).body.data;
    const ids: Record<string, string> = {};
    for (const [title, content] of Object.entries(documents)) {
      const doc = await api(who, 'POST', `/knowledge-bases/${kb.id}/documents`, { title, content });
      assert.equal(doc.status, 201, doc.text);
      ids[title] = doc.body.data.id;
    }
    return { id: kb.id as string, documents: ids };
  };
  const chat = async (who: Sender, agentId: string, ...said: string[]) => {
    const messages = said.map((content, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content }));
    const res = await api(who, 'POST', `/agents/${agentId}/chat`, { messages });
    assert.equal(res.status, 200, res.text);
    return res.body.data as {
      reply: string;
      sources: { documentId: string; title: string }[];
      action?: string;
    };
  };
  const lookup = {
    name: 'lookup_appointment',
    description: 'Find the caller’s next appointment',
    parameters: { type: 'object', properties: { phone: { type: 'string' } }, required: ['phone'] },
    url: 'https://example.com/appointments',
  };

  test('create with defaults, read, list, change, delete', async () => {
    const acme = await org();
    const kb = await knowledgeBase(acme, {});
    const created = await api(acme, 'POST', '/agents', { name: 'Receptionist', knowledgeBaseIds: [kb.id] });
    assert.equal(created.status, 201, created.text);
    const agent = created.body.data;
    assert.match(agent.id, /^agt_/);
    assert.deepEqual(
      { ...agent, id: undefined, createdAt: undefined, updatedAt: undefined },
      {
        id: undefined,
        name: 'Receptionist',
        instructions: '',
        firstMessage: 'Hello! How can I help you today?',
        voice: 'en-us',
        language: 'en',
        knowledgeBaseIds: [kb.id],
        endCallPhrases: ['goodbye', 'bye'],
        transferTo: null,
        maxDurationSeconds: 600,
        recordCalls: true,
        bargeIn: true,
        tools: [],
        keys: {},
        machineDetection: null,
        transferMode: 'cold',
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    await api(acme, 'POST', '/extensions', { extension: '200', name: 'Front desk' });
    const changed = await api(acme, 'PATCH', `/agents/${agent.id}`, {
      instructions: 'You answer for Bright Smile Dental.',
      firstMessage: 'Bright Smile Dental, how can I help?',
      voice: 'en-gb+f3',
      language: 'en-GB',
      endCallPhrases: [' see you ', 'that is all'],
      transferTo: '200',
      maxDurationSeconds: 300,
      recordCalls: false,
      bargeIn: false,
      tools: [lookup],
      knowledgeBaseIds: [],
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.data.recordCalls, false);
    assert.equal(changed.body.data.bargeIn, false);
    assert.deepEqual(changed.body.data.endCallPhrases, ['see you', 'that is all']);
    assert.equal(changed.body.data.transferTo, '200');
    assert.deepEqual(changed.body.data.tools, [lookup]);
    assert.deepEqual(changed.body.data.knowledgeBaseIds, []);
    const phone = await api(acme, 'PATCH', `/agents/${agent.id}`, { transferTo: '(415) 555-0100' });
    assert.equal(phone.body.data.transferTo, '+14155550100');
    assert.equal((await api(acme, 'GET', '/agents')).body.pagination.total, 1);
    assert.equal((await api(acme, 'GET', `/agents/${agent.id}`)).body.data.voice, 'en-gb+f3');

    // A number routed to the agent loses its route when the agent goes.
    const [number] = (await api(acme, 'GET', '/numbers')).body.data;
    const routed = await api(acme, 'PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'agent', target: agent.id },
    });
    assert.equal(routed.status, 200, routed.text);
    assert.equal((await api(acme, 'DELETE', `/agents/${agent.id}`)).status, 200);
    assert.equal((await api(acme, 'GET', `/agents/${agent.id}`)).status, 404);
    assert.equal((await api(acme, 'GET', `/numbers/${number.id}`)).body.data.voiceRoute, null);
    const unrouted = await api(acme, 'PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'agent', target: agent.id },
    });
    assert.equal(unrouted.status, 400);
    assert.match(unrouted.body.error, /no agent/);
  });

  test('refusals: every malformed field, bases not ours, bad tools and transfers; nothing written', async () => {
    const acme = await org();
    const globex = await org();
    const theirs = await knowledgeBase(globex, {});
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['no name', {}, /name is required/],
      ['empty name', { name: '' }, /name/],
      ['unknown field', { name: 'a', color: 'blue' }, /additional/],
      ['language', { name: 'a', language: 'English' }, /language/],
      ['voice', { name: 'a', voice: 'Robot Voice' }, /voice/],
      ['duration', { name: 'a', maxDurationSeconds: 5 }, /maxDurationSeconds/],
      ['recording', { name: 'a', recordCalls: 'yes' }, /recordCalls/],
      ['barge-in', { name: 'a', bargeIn: 'sometimes' }, /bargeIn/],
      [
        'their base',
        { name: 'a', knowledgeBaseIds: [theirs.id] },
        /is not a knowledge base of this organization/,
      ],
      ['a base twice', { name: 'a', knowledgeBaseIds: ['kb_1', 'kb_1'] }, /knowledgeBaseIds/],
      [
        'bad schema',
        {
          name: 'a',
          tools: [{ ...lookup, parameters: { type: 'object', properties: { n: { type: 'integerish' } } } }],
        },
        /tools\.0\.parameters is not a valid JSON Schema/,
      ],
      [
        'not an object schema',
        { name: 'a', tools: [{ ...lookup, parameters: { type: 'string' } }] },
        /"type": "object"/,
      ],
      ['built-in name', { name: 'a', tools: [{ ...lookup, name: 'end_call' }] }, /built-in/],
      ['a tool twice', { name: 'a', tools: [lookup, lookup] }, /named twice/],
      ['tool url', { name: 'a', tools: [{ ...lookup, url: 'ftp://example.com' }] }, /url must be/],
      ['relative url', { name: 'a', tools: [{ ...lookup, url: '/hook' }] }, /absolute URL/],
      ['tool name', { name: 'a', tools: [{ ...lookup, name: 'has space' }] }, /name/],
      ['no such extension', { name: 'a', transferTo: '999' }, /no extension 999/],
      ['not a phone', { name: 'a', transferTo: 'reception' }, /phone number or an extension/],
    ];
    for (const [what, body, message] of cases) {
      const res = await api(acme, 'POST', '/agents', body);
      assert.equal(res.status, 400, `${what}: ${res.text}`);
      assert.match(res.body.error, message, what);
    }
    assert.equal(await countRows(t, 'SELECT 1 FROM agents WHERE organization_id = $1', [acme.id]), 0);
    const agent = (await api(acme, 'POST', '/agents', { name: 'Kept' })).body.data;
    const refused = await api(acme, 'PATCH', `/agents/${agent.id}`, {
      name: 'Changed',
      knowledgeBaseIds: [theirs.id],
    });
    assert.equal(refused.status, 400);
    assert.equal((await api(acme, 'GET', `/agents/${agent.id}`)).body.data.name, 'Kept');
    assert.equal((await api(acme, 'PATCH', `/agents/${agent.id}`, {})).status, 400);
  });

  test('chat with the offline brain: grounded answers with sources, not knowing, transfers, ending', async () => {
    const acme = await org();
    const kb = await knowledgeBase(acme, {
      'Opening hours':
        'Bright Smile Dental is open Monday to Thursday from 8am to 6pm. On Fridays we close at 2pm. ' +
        'We are open on the first and third Saturday of each month from 9am to 1pm. We are closed on Sundays.',
      Insurance:
        'We accept Delta Dental PPO, MetLife, Cigna and Aetna. We do not accept Medicaid. ' +
        'Payment is due at the time of service.',
    });
    const agent = (
      await api(acme, 'POST', '/agents', {
        name: 'Receptionist',
        knowledgeBaseIds: [kb.id],
        transferTo: '+14155550100',
      })
    ).body.data;

    const saturday = await chat(acme, agent.id, 'Are you open on Saturdays?');
    assert.match(saturday.reply, /first and third Saturday/);
    assert.ok(!/Medicaid/.test(saturday.reply), 'only what answers the question');
    assert.deepEqual(
      saturday.sources.map((source) => source.documentId),
      [kb.documents['Opening hours']],
    );
    assert.equal(saturday.action, undefined);

    const cigna = await chat(acme, agent.id, 'Do you take Cigna insurance?');
    assert.match(cigna.reply, /Cigna/);
    assert.equal(cigna.sources[0]!.title, 'Insurance');

    // Not understood: asked again once, then offered a person (never an unrelated document).
    const again = await chat(acme, agent.id, 'Can I bring my parrot?');
    assert.match(again.reply, /didn't understand\. Could you say that again\?/);
    assert.ok(!/transfer you/.test(again.reply), 'the first miss only asks again');
    assert.deepEqual(again.sources, []);
    const unknown = await chat(
      acme,
      agent.id,
      'Can I bring my parrot?',
      again.reply,
      'My parrot, can I bring it?',
    );
    assert.match(unknown.reply, /still didn't understand/);
    assert.match(unknown.reply, /transfer you/);
    assert.deepEqual(unknown.sources, []);
    const yes = await chat(acme, agent.id, 'Can I bring my parrot?', unknown.reply, 'Yes please');
    assert.equal(yes.action, 'transfer');
    const no = await chat(acme, agent.id, 'Can I bring my parrot?', unknown.reply, 'No thanks');
    assert.equal(no.action, undefined);
    assert.match(no.reply, /anything else/);

    assert.equal((await chat(acme, agent.id, 'Can I talk to a real person?')).action, 'transfer');
    const bye = await chat(acme, agent.id, 'That is all, thanks. Goodbye!');
    assert.equal(bye.action, 'end_call');
    assert.match(bye.reply, /Goodbye/);

    // Without transferTo: no offer, no transfer.
    const alone = (await api(acme, 'POST', '/agents', { name: 'Alone', knowledgeBaseIds: [kb.id] })).body
      .data;
    const cannot = await chat(acme, alone.id, 'Can I speak to someone?');
    assert.equal(cannot.action, undefined);
    assert.match(cannot.reply, /can't transfer/);
    // Without transferTo the second miss offers to take a message, and takes it.
    const first = await chat(acme, alone.id, 'Can I bring my parrot?');
    const second = await chat(acme, alone.id, 'Can I bring my parrot?', first.reply, 'A parrot?');
    assert.ok(!/transfer you/.test(second.reply));
    assert.match(second.reply, /leave a message\?/);
    const go = await chat(acme, alone.id, 'A parrot?', second.reply, 'Yes');
    assert.match(go.reply, /go ahead with your message/);
    const taken = await chat(acme, alone.id, 'Yes', go.reply, 'Please call Sam back about the parrot.');
    assert.match(taken.reply, /pass your message on/);
    assert.deepEqual(taken.sources, []);

    // The conversation must end with the caller.
    const last = await api(acme, 'POST', `/agents/${agent.id}/chat`, {
      messages: [{ role: 'assistant', content: 'Hi' }],
    });
    assert.equal(last.status, 400);
    assert.equal((await api(acme, 'POST', `/agents/${agent.id}/chat`, { messages: [] })).status, 400);
  });

  test('other organizations 404; scopes; the agents product; portal members chat, owners change', async () => {
    const acme = await org();
    const agent = (await api(acme, 'POST', '/agents', { name: 'A' })).body.data;
    const globex = await org();
    for (const [method, path, body] of [
      ['GET', `/agents/${agent.id}`, undefined],
      ['PATCH', `/agents/${agent.id}`, { name: 'Mine' }],
      ['DELETE', `/agents/${agent.id}`, undefined],
      ['POST', `/agents/${agent.id}/chat`, { messages: [{ role: 'user', content: 'hi' }] }],
    ] as const) {
      const res = await api(globex, method, path, body);
      assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
    }
    const reader = await org({}, ['agents:read']);
    assert.equal((await api(reader, 'POST', '/agents', { name: 'x' })).status, 403);
    // Chat may call the agent's tools, which act in the world: a read-only key cannot.
    const readerAgent = (await api(acme, 'GET', `/agents/${agent.id}`)).status;
    assert.equal(readerAgent, 200);
    const readerChat = await api(reader, 'POST', `/agents/${agent.id}/chat`, {
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(readerChat.status, 403);
    const noAgents = await org({ products: ['messaging', 'voice'] });
    const gated = await api(noAgents, 'GET', '/agents');
    assert.equal(gated.status, 402);
    assert.deepEqual(gated.body.data, { product: 'agents' });

    const member = await signIn(t, await createUser(t, { role: 'member', organizationIds: [acme.id] }));
    assert.equal((await t.request('GET', '/v2/portal/agents', { token: member })).status, 200);
    const tried = await t.request('POST', `/v2/portal/agents/${agent.id}/chat`, {
      token: member,
      body: { messages: [{ role: 'user', content: 'hello' }] },
    });
    assert.equal(tried.status, 200, tried.text);
    assert.equal(
      (await t.request('POST', '/v2/portal/agents', { token: member, body: { name: 'B' } })).status,
      403,
    );
  });
});
