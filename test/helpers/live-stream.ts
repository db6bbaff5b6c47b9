// A client of GET /v2/portal/events as a browser's EventSource reads it: the response is parsed by the
// server-sent events rules (WHATWG HTML, "Parsing an event stream": lines end in LF, CR LF or CR; a field
// is `name: value` with one optional space; `data` lines join with LF; a blank line dispatches; a line
// starting with a colon is a comment) and every frame is also checked against them.
import assert from 'node:assert/strict';

export interface StreamEvent {
  id: string;
  event: string;
  data: string;
}

export interface LiveStream {
  status: number;
  headers: Headers;
  /** The response body when the server refused (status is not 200). */
  refusal?: Record<string, unknown>;
  /** The next event that `matches`, waiting up to `seconds` (events before it are kept in `seen`). */
  next(matches?: (event: StreamEvent) => boolean, seconds?: number): Promise<StreamEvent>;
  /** Every event received so far, in order. */
  seen: StreamEvent[];
  /** The `retry:` the server sent, and how many comment lines. */
  retry: number | undefined;
  comments: number;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openStream(
  url: string,
  token: string,
  headers: Record<string, string> = {},
): Promise<LiveStream> {
  const abort = new AbortController();
  const res = await fetch(`${url}/v2/portal/events`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers },
    signal: abort.signal,
  });
  const waiters = new Set<() => void>();
  const stream: LiveStream = {
    status: res.status,
    headers: res.headers,
    seen: [],
    retry: undefined,
    comments: 0,
    ended: Promise.resolve(),
    close: () => abort.abort(),
    next: async (matches = () => true, seconds = 20) => {
      let from = 0;
      const deadline = Date.now() + seconds * 1000;
      for (;;) {
        const found = stream.seen.slice(from).find(matches);
        if (found) {
          stream.seen.splice(stream.seen.indexOf(found), 1);
          return found;
        }
        from = stream.seen.length;
        if (Date.now() > deadline) {
          throw new Error(`no matching event in ${seconds} s; seen ${stream.seen.map((e) => e.event)}`);
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 200);
          waiters.add(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
  };
  if (res.status !== 200) {
    stream.refusal = await res.json();
    return stream;
  }
  const decoder = new TextDecoder();
  let buffer = '';
  let frame: { id?: string; event?: string; data: string[] } = { data: [] };
  const consume = (line: string) => {
    if (line === '') {
      if (frame.data.length > 0) {
        assert.ok(frame.id && frame.event, `an event frame without id or event: ${JSON.stringify(frame)}`);
        stream.seen.push({ id: frame.id, event: frame.event, data: frame.data.join('\n') });
        for (const wake of waiters) wake();
        waiters.clear();
      }
      frame = { data: [] };
      return;
    }
    if (line.startsWith(':')) {
      stream.comments++;
      return;
    }
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (name === 'data') frame.data.push(value);
    else if (name === 'id') frame.id = value;
    else if (name === 'event') frame.event = value;
    else if (name === 'retry') stream.retry = Number(value);
    else assert.fail(`a field the format does not have: ${line}`);
  };
  stream.ended = (async () => {
    try {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        const lines = buffer.split(/\r\n|\r|\n/);
        buffer = lines.pop()!;
        for (const line of lines) consume(line);
      }
    } catch (error) {
      if (!abort.signal.aborted) throw error;
    }
  })();
  return stream;
}
