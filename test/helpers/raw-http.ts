// HTTP at the byte level, for what a well-behaved client never sends: a request trickled a byte at a time, or
// bytes that are not HTTP. Each returns what the server wrote before it closed the connection.
import assert from 'node:assert/strict';
import { connect } from 'node:net';

export interface RawAnswer {
  head: string;
  body: string;
}

function split(received: string): RawAnswer {
  const [head = '', body = ''] = received.split('\r\n\r\n', 2);
  return { head, body };
}

/**
 * Sends `POST path` with `headers` (CRLF-terminated lines) and the first byte of a 1,000-byte JSON body, then a
 * space every 100 ms until the server closes the connection (at most 200, so the test always ends).
 */
export async function trickleRequest(url: string, path: string, headers = ''): Promise<RawAnswer> {
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk.toString();
  });
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\n${headers}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
  );
  let sent = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || sent++ > 200) return clearInterval(timer);
    socket.write(' ');
  }, 100);
  await closed;
  clearInterval(timer);
  assert.ok(sent < 200, 'the server closed the connection before the client stopped');
  return split(received);
}

/** Writes `raw` as it is and reads until the server closes the connection. */
export async function rawExchange(url: string, raw: string): Promise<RawAnswer> {
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk.toString();
  });
  await new Promise<void>((resolve) => socket.on('close', () => resolve()).write(raw));
  return split(received);
}
