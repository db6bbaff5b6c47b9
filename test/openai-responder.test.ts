// The OpenAI-compatible brain against a local server speaking the chat-completions API (it records each
// request and answers from the test's script): grounding excerpts and sources, a tool-call round trip, the
// built-in end_call and transfer, arguments that are not JSON, retries on 503 (Retry-After) and none on 400,
// a timeout; and through the server, the chat endpoint answered by the model and 502 AGENT_UNAVAILABLE.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { OpenAiResponder } from '../src/modules/agents/openai-responder.ts';
import type { AgentProfile, ResponderContext } from '../src/modules/agents/responder.ts';
import { ResponderError } from '../src/modules/agents/responder.ts';
import type { AgentTool, SearchHit, ToolCall } from '../src/modules/agents/schemas.ts';
import { startTestApp } from './helpers/app.ts';
import { sender } from './helpers/messaging.ts';

type Answer = (body: any, res: ServerResponse) => void;

/** A chat-completions server: each request gets the next scripted answer; every request is kept. */
async function modelServer() {
  const requests: { body: any; headers: IncomingMessage['headers'] }[] = [];
  const script: Answer[] = [];
  const held: ServerResponse[] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => {
      raw += chunk;
    });
    req.on('end', () => {
      const body = JSON.parse(raw);
      requests.push({ body, headers: req.headers });
      const answer = script.shift();
      if (!answer) {
        held.push(res); // never answered: the client's timeout
        return;
      }
      answer(body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    script,
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const say =
  (content: string | null, toolCalls?: { name: string; arguments: string }[]): Answer =>
  (_body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        choices: [
          {
            message: {
              role: 'assistant',
              content,
              ...(toolCalls
                ? {
                    tool_calls: toolCalls.map((call, i) => ({
                      id: `call_${i}`,
                      type: 'function',
                      function: call,
                    })),
                  }
                : {}),
            },
          },
        ],
      }),
    );
  };
/** A streamed answer (`stream: true`): server-sent events, each delta a chunk, then `[DONE]`. */
const streamed =
  (deltas: object[]): Answer =>
  (body, res) => {
    assert.equal(body.stream, true, 'a streamed completion was asked for');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': keep-alive\n\n');
    for (const delta of deltas)
      res.write(
        `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta }] })}\n\n`,
      );
    res.end('data: [DONE]\n\n');
  };
const status =
  (code: number, headers: Record<string, string> = {}): Answer =>
  (_body, res) => {
    res.writeHead(code, { 'content-type': 'application/json', ...headers });
    res.end('{"error":{"message":"nope"}}');
  };

const booking: AgentTool = {
  name: 'book_appointment',
  description: 'Book an appointment',
  parameters: { type: 'object', properties: { day: { type: 'string' } } },
  url: 'https://example.com/book',
};
const agent = (fields: Partial<AgentProfile> = {}): AgentProfile => ({
  id: 'agt_1',
  organizationId: 'org_1',
  name: 'Receptionist',
  instructions: 'You answer for Bright Smile Dental.',
  firstMessage: 'Hello',
  language: 'en',
  knowledgeBaseIds: ['kb_1'],
  endCallPhrases: ['goodbye'],
  transferTo: null,
  tools: [booking],
  ...fields,
});
const hits: SearchHit[] = [
  {
    documentId: 'doc_1',
    knowledgeBaseId: 'kb_1',
    title: 'Opening hours',
    text: 'Open Saturdays 9 to 1.',
    score: 0.5,
  },
  {
    documentId: 'doc_2',
    knowledgeBaseId: 'kb_1',
    title: 'Parking',
    text: 'Garage on 4th Street.',
    score: 0.1,
  },
];

describe('the OpenAI-compatible responder', () => {
  let model: Awaited<ReturnType<typeof modelServer>>;
  const toolCalls: { tool: AgentTool; args: unknown }[] = [];
  const context: ResponderContext = {
    search: async () => hits,
    callTool: async (tool, args): Promise<ToolCall> => {
      toolCalls.push({ tool, args });
      return { name: tool.name, arguments: args, status: 'ok', result: { confirmed: true } };
    },
  };
  const responder = (options: { timeoutMs?: number; retries?: number } = {}) =>
    new OpenAiResponder({ url: `${model.url}/`, apiKey: 'sk-test', model: 'test-model', ...options });
  before(async () => {
    model = await modelServer();
  });
  after(() => model.close());
  /** A streamed reply read to its end: its final value. */
  const finished = async <T>(stream: AsyncGenerator<string, T>): Promise<T> => {
    let next = await stream.next();
    while (!next.done) next = await stream.next();
    return next.value;
  };
  const fresh = () => {
    model.requests.length = 0;
    model.script.length = 0;
    toolCalls.length = 0;
  };

  test('a grounded answer: instructions, excerpts and the key sent; the excerpts are the sources', async () => {
    fresh();
    model.script.push(say('We are open Saturdays from 9 to 1.'));
    const reply = await responder().respond(agent(), [{ role: 'user', content: 'Open Saturday?' }], context);
    assert.deepEqual(reply, {
      reply: 'We are open Saturdays from 9 to 1.',
      sources: hits.map(({ text: _text, ...source }) => source),
    });
    const [request] = model.requests;
    assert.equal(request!.headers.authorization, 'Bearer sk-test');
    assert.equal(request!.body.model, 'test-model');
    assert.match(request!.body.messages[0].content, /Bright Smile Dental/);
    assert.match(request!.body.messages[1].content, /\[1\] Opening hours: Open Saturdays 9 to 1\./);
    assert.deepEqual(request!.body.messages.at(-1), { role: 'user', content: 'Open Saturday?' });
    const offered = request!.body.tools.map((tool: any) => tool.function.name);
    assert.deepEqual(offered, ['book_appointment', 'end_call'], 'no transfer without transferTo');
  });

  test('a tool call round trip: the tool is called, its answer goes back, the reply says action tool', async () => {
    fresh();
    model.script.push(say(null, [{ name: 'book_appointment', arguments: '{"day":"Tuesday"}' }]));
    model.script.push(say('You are booked for Tuesday.'));
    const reply = await responder().respond(agent(), [{ role: 'user', content: 'Book me Tuesday' }], context);
    assert.equal(reply.reply, 'You are booked for Tuesday.');
    assert.equal(reply.action, 'tool');
    assert.deepEqual(reply.toolCalls, [
      { name: 'book_appointment', arguments: { day: 'Tuesday' }, status: 'ok', result: { confirmed: true } },
    ]);
    assert.deepEqual(toolCalls, [{ tool: booking, args: { day: 'Tuesday' } }]);
    const second = model.requests[1]!.body.messages;
    assert.equal(second.at(-2).tool_calls[0].function.name, 'book_appointment');
    assert.deepEqual(second.at(-1), { role: 'tool', tool_call_id: 'call_0', content: '{"confirmed":true}' });
  });

  test('streamed: the words come piece by piece; a tool call streamed in fragments is assembled and made', async () => {
    fresh();
    model.script.push(
      streamed([
        { role: 'assistant', content: 'Let me ' },
        { content: 'check. ' },
        {
          tool_calls: [
            { index: 0, id: 'call_x', type: 'function', function: { name: 'book_', arguments: '' } },
          ],
        },
        { tool_calls: [{ index: 0, function: { name: 'appointment', arguments: '{"day":' } }] },
        { tool_calls: [{ index: 0, function: { arguments: '"Tuesday"}' } }] },
      ]),
      streamed([{ content: 'You are booked ' }, { content: 'for Tuesday.' }]),
    );
    const pieces: string[] = [];
    const stream = responder().stream(agent(), [{ role: 'user', content: 'Book me Tuesday' }], context);
    let next = await stream.next();
    for (; !next.done; next = await stream.next()) pieces.push(next.value);
    assert.deepEqual(pieces, ['Let me ', 'check. ', 'You are booked ', 'for Tuesday.']);
    assert.equal(next.value.reply, 'You are booked for Tuesday.');
    assert.equal(next.value.action, 'tool');
    assert.deepEqual(toolCalls, [{ tool: booking, args: { day: 'Tuesday' } }]);
    const second = model.requests[1]!.body.messages;
    assert.deepEqual(second.at(-2).tool_calls, [
      {
        id: 'call_x',
        type: 'function',
        function: { name: 'book_appointment', arguments: '{"day":"Tuesday"}' },
      },
    ]);
    assert.deepEqual(second.at(-1), { role: 'tool', tool_call_id: 'call_x', content: '{"confirmed":true}' });
    // A server that ignores `stream` and answers one JSON completion is read as that.
    model.script.push((_body, res) => say('Whole answer.')({}, res));
    const whole = responder().stream(agent(), [{ role: 'user', content: 'Hi' }], context);
    assert.deepEqual(await whole.next(), { value: 'Whole answer.', done: false });
    assert.equal((await whole.next()).done, true);
  });

  test('a hostile stream: a tool call index of a billion is ignored, and an endless answer is cut, not retried', async () => {
    fresh();
    model.script.push(
      streamed([
        { content: 'Fine. ' },
        { tool_calls: [{ index: 1_000_000_000, id: 'call_far', function: { name: 'book_appointment' } }] },
      ]),
    );
    const started = performance.now();
    const far = await finished(responder().stream(agent(), [{ role: 'user', content: 'Hi' }], context));
    assert.equal(far.reply, 'Fine.');
    assert.deepEqual(toolCalls, [], 'no call made from an index out of range');
    console.log(`# an index of a billion read in ${(performance.now() - started).toFixed(0)} ms`);

    // 300 KB of words on one line and then more, without end: cut at the cap, one request, no retry.
    model.script.push((_body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const piece = `data: ${JSON.stringify({ choices: [{ delta: { content: 'la '.repeat(10_000) } }] })}\n\n`;
      for (let i = 0; i < 12; i++) res.write(piece);
      res.end('data: [DONE]\n\n');
    });
    await assert.rejects(
      finished(responder({ retries: 2 }).stream(agent(), [{ role: 'user', content: 'Talk' }], context)),
      /passed 262144 characters/,
    );
    assert.equal(model.requests.length, 2, 'the endless answer was asked for once');
  });

  test('end_call and transfer: the built-in actions, transfer offered only with transferTo', async () => {
    fresh();
    model.script.push(say('Goodbye!', [{ name: 'end_call', arguments: '{}' }]));
    const bye = await responder().respond(agent(), [{ role: 'user', content: 'bye' }], context);
    assert.deepEqual([bye.reply, bye.action], ['Goodbye!', 'end_call']);
    model.script.push(say(null, [{ name: 'transfer', arguments: '' }]), say(''));
    const transfer = await responder().respond(
      agent({ transferTo: '+14155550100' }),
      [{ role: 'user', content: 'a person please' }],
      context,
    );
    assert.deepEqual([transfer.reply, transfer.action], ['Let me transfer you now.', 'transfer']);
    assert.ok(model.requests[1]!.body.tools.some((tool: any) => tool.function.name === 'transfer'));
  });

  test('arguments that are not JSON: reported back to the model, the tool not called', async () => {
    fresh();
    model.script.push(say(null, [{ name: 'book_appointment', arguments: '{day: Tuesday' }]));
    model.script.push(say('Which day would you like?'));
    const reply = await responder().respond(agent(), [{ role: 'user', content: 'Book me' }], context);
    assert.equal(reply.reply, 'Which day would you like?');
    assert.equal(toolCalls.length, 0);
    assert.equal(reply.toolCalls![0]!.status, 'failed');
    assert.match(model.requests[1]!.body.messages.at(-1).content, /not valid JSON/);
  });

  test('503 with Retry-After is retried; 400 is not; a model that never answers times out', async () => {
    fresh();
    model.script.push(status(503, { 'retry-after': '0' }), say('Fine.'));
    assert.equal(
      (await responder().respond(agent(), [{ role: 'user', content: 'hi' }], context)).reply,
      'Fine.',
    );
    assert.equal(model.requests.length, 2);

    fresh();
    model.script.push(status(400));
    await assert.rejects(
      responder().respond(agent(), [{ role: 'user', content: 'hi' }], context),
      (error: Error) => {
        assert.ok(error instanceof ResponderError);
        assert.match(error.message, /answered 400/);
        assert.ok(!error.message.includes('sk-test'));
        return true;
      },
    );
    assert.equal(model.requests.length, 1);

    fresh();
    await assert.rejects(
      responder({ timeoutMs: 200, retries: 1 }).respond(agent(), [{ role: 'user', content: 'hi' }], context),
      /did not answer within 200 ms/,
    );
    assert.equal(model.requests.length, 2);
  });

  test('through the server: the chat endpoint answers with the model, 502 AGENT_UNAVAILABLE when it fails', async () => {
    fresh();
    const t = await startTestApp({ config: { agentLlm: { url: model.url, model: 'test-model' } } });
    try {
      const office = await sender(t, {}, { number: null });
      const created = await t.request('POST', '/api/v2/agents', {
        apiKey: office.key,
        body: { name: 'Bot' },
      });
      const chat = (content: string) =>
        t.request('POST', `/api/v2/agents/${created.body.data.id}/chat`, {
          apiKey: office.key,
          body: { messages: [{ role: 'user', content }] },
        });
      model.script.push(say('Hello from the model.'));
      const answered = await chat('hi');
      assert.equal(answered.status, 200, answered.text);
      assert.equal(answered.body.data.reply, 'Hello from the model.');
      model.script.push(status(401));
      const failed = await chat('hi again');
      assert.equal(failed.status, 502);
      assert.equal(failed.body.code, 'AGENT_UNAVAILABLE');
      assert.match(failed.body.error, /answered 401/);
    } finally {
      await t.close();
    }
  });
});
