// Refusals Node's HTTP server makes before Fastify routes a request: a request (headers or a trickled body)
// not finished within the request timeout (408), headers too large (431), bytes that are not HTTP (400).
// Fastify's default answer is its own shape ({error, message, statusCode}); these answer in the shape of the
// interface the request was for, with API-Version, like every other refusal. The path is known once the
// request's headers have arrived (remembered on its socket until its answer is written); before that, the
// request line is read from the bytes Node hands over where it can be, and Shape A is the fallback.
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ApiError, renderError, shapeForPath } from '../errors.ts';

const PATH_OF_REQUEST = Symbol('pathOfRequestInFlight');
type TrackedSocket = Socket & { [PATH_OF_REQUEST]?: string };

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

/** Remembers each request's path on its socket while it is in flight, for the handler below. */
export function trackRequestPaths(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const socket = request.raw.socket as TrackedSocket | null;
    if (!socket) return;
    socket[PATH_OF_REQUEST] = request.url;
  });
  // Answered: the next request on a kept-alive connection is not this one.
  app.addHook('onResponse', async (request) => {
    const socket = request.raw.socket as TrackedSocket | null;
    if (socket) socket[PATH_OF_REQUEST] = undefined;
  });
}

/** Fastify's `clientErrorHandler`: the refusal in our shape, then the connection closed (as Node does). */
export function answerClientError(version: string) {
  return (error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void => {
    // A reset connection has nobody to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const status =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const message =
      status === 408
        ? 'The request was not received in full within the time allowed'
        : status === 431
          ? 'The request headers are too large'
          : 'The request is not valid HTTP';
    const path = (socket as TrackedSocket)[PATH_OF_REQUEST] ?? requestLinePath(error.rawPacket);
    const rendered = renderError(new ApiError(status, message), shapeForPath(path ?? '/'));
    const body = JSON.stringify(rendered.body);
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `API-Version: ${version}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}

/** The path of `METHOD /path HTTP/1.1` at the start of the bytes received, if they start that way. */
function requestLinePath(packet: unknown): string | undefined {
  if (!Buffer.isBuffer(packet)) return undefined;
  const line = packet.subarray(0, 2048).toString('latin1').split('\r\n', 1)[0]!;
  const parts = line.split(' ');
  return parts.length === 3 && parts[1]!.startsWith('/') ? parts[1] : undefined;
}
