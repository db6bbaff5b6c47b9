// A streamed chat completion (OpenAI's `stream: true`): server-sent events, one `data:` line per chunk, each a
// JSON `chat.completion.chunk` whose `choices[0].delta` carries the next piece of the content and pieces of
// tool calls (a call's `index` says which; its id and name come first, its JSON arguments in fragments), until
// `data: [DONE]`. The text is yielded as it comes, so the agent can speak its first sentence while the rest is
// generated; the whole message (content and assembled tool calls) is the generator's return value. A server
// that ignores `stream` and answers with one JSON completion is read as that.

/** The most of a completion read (a reply spoken on a call is a few hundred characters; tools' JSON more). */
const MAX_COMPLETION_CHARS = 256 * 1024;
/** The most tool calls one message may make (a call's `index` beyond it is ignored, not an array that big). */
const MAX_TOOL_CALLS = 16;

/** A completion stream that passed MAX_COMPLETION_CHARS: it is cut there, as a stalled one is by the timeout. */
export class CompletionTooLong extends Error {
  constructor() {
    super(`the model's answer passed ${MAX_COMPLETION_CHARS} characters`);
    this.name = 'CompletionTooLong';
  }
}

export interface StreamedMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
}

interface Chunk {
  choices?: {
    delta?: {
      content?: string | null;
      tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
    message?: StreamedMessage;
  }[];
}

/** Reads a chat-completions response; yields the content's pieces; returns the message (undefined: none). */
export async function* readCompletion(
  response: Response,
): AsyncGenerator<string, StreamedMessage | undefined> {
  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('text/event-stream')) {
    const answer = (await response.json().catch(() => undefined)) as Chunk | undefined;
    const message = answer?.choices?.[0]?.message;
    if (message?.content) yield message.content;
    return message;
  }
  let content = '';
  let any = false;
  const calls: { id: string; name: string; arguments: string }[] = [];
  let buffer = '';
  const decoder = new TextDecoder();
  let read = 0;
  const lines = async function* () {
    for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
      read += bytes.length;
      if (read > MAX_COMPLETION_CHARS) {
        await response.body?.cancel().catch(() => {});
        throw new CompletionTooLong();
      }
      buffer += decoder.decode(bytes, { stream: true });
      let end = buffer.indexOf('\n');
      while (end >= 0) {
        yield buffer.slice(0, end).replace(/\r$/, '');
        buffer = buffer.slice(end + 1);
        end = buffer.indexOf('\n');
      }
    }
    if (buffer) yield buffer;
  };
  for await (const line of lines()) {
    if (!line.startsWith('data:')) continue; // comments (keep-alives), event names, blank separators
    const data = line.slice(5).trim();
    if (data === '[DONE]') break;
    let chunk: Chunk;
    try {
      chunk = JSON.parse(data) as Chunk;
    } catch {
      continue;
    }
    const delta = chunk.choices?.[0]?.delta;
    if (!delta) continue;
    any = true;
    if (delta.content) {
      content += delta.content;
      yield delta.content;
    }
    for (const piece of delta.tool_calls ?? []) {
      const index = piece.index ?? calls.length;
      if (!Number.isInteger(index) || index < 0 || index >= MAX_TOOL_CALLS) continue;
      calls[index] ??= { id: '', name: '', arguments: '' };
      const call = calls[index]!;
      if (piece.id) call.id = piece.id;
      if (piece.function?.name) call.name += piece.function.name;
      if (piece.function?.arguments) call.arguments += piece.function.arguments;
    }
  }
  if (!any) return undefined;
  const toolCalls = calls.filter(Boolean).map((call, i) => ({
    id: call.id || `call_${i}`,
    type: 'function' as const,
    function: { name: call.name, arguments: call.arguments },
  }));
  return {
    role: 'assistant',
    content: content || null,
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
  };
}
