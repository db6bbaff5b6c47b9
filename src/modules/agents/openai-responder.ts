// The brain as any OpenAI-compatible chat-completions service (AGENT_LLM_URL: OpenAI, Azure's compatible
// endpoint, a local llama.cpp, vLLM or Ollama server). Each reply is grounded the same way as the offline
// brain's: the agent's knowledge-base chunks that best match the caller's words go to the model as numbered
// excerpts, and those are the reply's sources. The agent's HTTP tools are offered as functions, with two
// built-in ones, `end_call` and (when the agent can) `transfer`; tool calls go round trips until the model
// answers in words (at most MAX_ROUNDS requests a reply). Every request has its own timeout; a network error,
// timeout, 429 or 5xx is retried with backoff (Retry-After honoured, capped); other refusals are not. On a call
// the reply is streamed (`stream`: openai-stream.ts reads the events) and its words yielded as they come, so
// the first sentence is spoken while the model writes the rest; the chat endpoint asks for the whole message.
import { setTimeout as sleep } from 'node:timers/promises';
import { CompletionTooLong, readCompletion } from './openai-stream.ts';
import {
  type AgentProfile,
  type Responder,
  type ResponderContext,
  ResponderError,
  type Turn,
} from './responder.ts';
import type { ChatReply, SearchHit, ToolCall } from './schemas.ts';

const MAX_ROUNDS = 4;
const RETRY_BASE_MS = 250;
const RETRY_AFTER_CAP_MS = 5000;
const EXCERPTS = 4;
const DEFAULT_LINES = { end_call: 'Thank you for calling. Goodbye.', transfer: 'Let me transfer you now.' };

interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export class OpenAiResponder implements Responder {
  readonly name = 'openai';
  private readonly url: string;
  private readonly apiKey?: string;
  private readonly model: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly fetch: typeof fetch;

  constructor(options: {
    url: string;
    apiKey?: string;
    model: string;
    timeoutMs?: number;
    retries?: number;
    fetch?: typeof fetch;
  }) {
    this.url = options.url.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.model = options.model;
    this.timeoutMs = options.timeoutMs ?? 20_000;
    this.retries = options.retries ?? 2;
    this.fetch = options.fetch ?? fetch;
  }

  async respond(agent: AgentProfile, conversation: Turn[], context: ResponderContext): Promise<ChatReply> {
    const rounds = this.rounds(agent, conversation, context, false);
    for (;;) {
      const next = await rounds.next();
      if (next.done) return next.value;
    }
  }

  stream(
    agent: AgentProfile,
    conversation: Turn[],
    context: ResponderContext,
  ): AsyncGenerator<string, ChatReply> {
    return this.rounds(agent, conversation, context, true);
  }

  /** The rounds of requests a reply takes; yields the words of each as they come (when streaming). */
  private async *rounds(
    agent: AgentProfile,
    conversation: Turn[],
    context: ResponderContext,
    stream: boolean,
  ): AsyncGenerator<string, ChatReply> {
    const question = [...conversation].reverse().find((turn) => turn.role === 'user')?.content ?? '';
    const hits = question ? await context.search(question, EXCERPTS) : [];
    const messages: ChatMessage[] = [
      { role: 'system', content: systemPrompt(agent) },
      { role: 'system', content: excerpts(hits) },
      ...conversation.map((turn) => ({ role: turn.role, content: turn.content })),
    ];
    const tools = [
      ...agent.tools.map((tool) => ({
        type: 'function' as const,
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      })),
      builtIn('end_call', 'End the call after saying goodbye.'),
      ...(agent.transferTo ? [builtIn('transfer', 'Transfer the caller to a person who can help.')] : []),
    ];
    const toolCalls: ToolCall[] = [];
    let action: 'end_call' | 'transfer' | undefined;
    let lastContent = '';
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const message = yield* this.complete(messages, tools, stream);
      lastContent = message.content?.trim() ?? lastContent;
      const calls = message.tool_calls ?? [];
      if (calls.length === 0 || action) {
        const reply = lastContent || (action ? DEFAULT_LINES[action] : '');
        if (!reply) throw new ResponderError('the model answered with neither words nor tools');
        return result(reply, hits, action, toolCalls);
      }
      messages.push({ role: 'assistant', content: message.content ?? null, tool_calls: calls });
      for (const call of calls) {
        const name = call.function.name;
        let args: unknown;
        let outcome: unknown;
        try {
          args = call.function.arguments ? JSON.parse(call.function.arguments) : {};
        } catch {
          args = undefined;
        }
        if (name === 'end_call' || (name === 'transfer' && agent.transferTo)) {
          action = action === 'transfer' ? 'transfer' : name;
          outcome = { ok: true };
        } else {
          const tool = agent.tools.find((candidate) => candidate.name === name);
          let done: ToolCall;
          if (args === undefined) {
            done = {
              name,
              arguments: call.function.arguments,
              status: 'failed',
              error: 'arguments are not valid JSON',
            };
          } else if (!tool) done = { name, arguments: args, status: 'failed', error: 'no such tool' };
          else done = await context.callTool(tool, args);
          if (tool) toolCalls.push(done);
          outcome = done.status === 'ok' ? done.result : { error: done.error };
        }
        messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(outcome ?? null) });
      }
      // After end_call or transfer the model gets one more turn for the words it says as it does so.
      if (action && lastContent) return result(lastContent, hits, action, toolCalls);
    }
    if (lastContent) return result(lastContent, hits, action, toolCalls);
    throw new ResponderError('the model kept calling tools');
  }

  /**
   * One chat completion, retried on network errors, timeouts, 429 and 5xx (before any of it has come: words
   * already yielded may have been spoken).
   */
  private async *complete(
    messages: ChatMessage[],
    tools: unknown[],
    stream: boolean,
  ): AsyncGenerator<string, ChatMessage> {
    const body = JSON.stringify({
      model: this.model,
      messages,
      tools,
      tool_choice: 'auto',
      temperature: 0.3,
      ...(stream ? { stream: true } : {}),
    });
    let problem = '';
    let spoken = false;
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      let wait = RETRY_BASE_MS * 2 ** attempt;
      try {
        const response = await this.fetch(`${this.url}/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
          },
          body,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        if (response.ok) {
          const reading = readCompletion(response);
          let step = await reading.next();
          while (!step.done) {
            if (stream) {
              spoken = true;
              yield step.value;
            }
            step = await reading.next();
          }
          if (!step.value) throw new ResponderError('the model answered without a message');
          return step.value as ChatMessage;
        }
        await response.body?.cancel();
        problem = `the model answered ${response.status}`;
        if (response.status !== 429 && response.status < 500) throw new ResponderError(problem);
        const retryAfter = Number(response.headers.get('retry-after'));
        if (Number.isFinite(retryAfter) && retryAfter >= 0 && response.headers.has('retry-after')) {
          wait = Math.min(retryAfter * 1000, RETRY_AFTER_CAP_MS);
        }
      } catch (error) {
        if (error instanceof ResponderError) throw error;
        if (error instanceof CompletionTooLong) throw new ResponderError(error.message);
        if (spoken) throw new ResponderError(`the model's stream broke off: ${(error as Error).message}`);
        const name = (error as Error).name;
        problem =
          name === 'TimeoutError' || name === 'AbortError'
            ? `the model did not answer within ${this.timeoutMs} ms`
            : `the model could not be reached: ${(error as Error).message}`;
      }
      if (attempt < this.retries) await sleep(wait);
    }
    throw new ResponderError(problem);
  }
}

function builtIn(name: string, description: string) {
  return {
    type: 'function' as const,
    function: { name, description, parameters: { type: 'object', properties: {} } },
  };
}

function systemPrompt(agent: AgentProfile): string {
  return [
    agent.instructions,
    `You are ${agent.name}, a voice agent answering a phone call. Reply in the language "${agent.language}", ` +
      'in one to three short sentences of plain speech (no lists, no markdown).',
    'Answer only from the knowledge-base excerpts given or from your tools. When neither has the answer, say ' +
      'you do not know.' +
      (agent.transferTo
        ? ' Offer to transfer the caller to a person, and call `transfer` if they accept.'
        : ''),
    'When the caller is done, say goodbye and call `end_call`.',
  ]
    .filter(Boolean)
    .join('\n\n');
}

function excerpts(hits: SearchHit[]): string {
  if (hits.length === 0) return 'Knowledge-base excerpts: none match this question.';
  return `Knowledge-base excerpts:\n${hits.map((hit, i) => `[${i + 1}] ${hit.title}: ${hit.text}`).join('\n')}`;
}

function result(
  reply: string,
  hits: SearchHit[],
  action: 'end_call' | 'transfer' | undefined,
  toolCalls: ToolCall[],
): ChatReply {
  return {
    reply,
    sources: hits.map((hit) => ({
      documentId: hit.documentId,
      knowledgeBaseId: hit.knowledgeBaseId,
      title: hit.title,
      score: hit.score,
    })),
    ...(action ? { action } : toolCalls.length > 0 ? { action: 'tool' as const } : {}),
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
  };
}
