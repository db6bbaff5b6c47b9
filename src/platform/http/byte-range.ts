// Bytes served with HTTP range requests (RFC 9110 section 14), so an audio player can seek in a voicemail. One
// range is answered 206 with Content-Range; a range that starts past the end is a 416 naming the length; a
// malformed Range header, or one asking for several ranges, gets the whole body (RFC 9110 allows ignoring it).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';

/** The first and last byte `range` asks for; undefined to send everything; a 416 when nothing of it exists. */
export function byteRange(
  header: string | undefined,
  length: number,
): { start: number; end: number } | undefined {
  const match = header?.trim().match(/^bytes=(\d*)-(\d*)$/);
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  const [, first, last] = match as unknown as [string, string, string];
  let start: number;
  let end: number;
  if (first === '') {
    // A suffix: the last n bytes.
    const suffix = Number(last);
    if (suffix === 0) throw unsatisfiable(length);
    start = Math.max(0, length - suffix);
    end = length - 1;
  } else {
    start = Number(first);
    end = last === '' ? length - 1 : Math.min(Number(last), length - 1);
    if (last !== '' && Number(last) < start) return undefined; // invalid syntax: ignored
  }
  if (start >= length) throw unsatisfiable(length);
  return { start, end };
}

function unsatisfiable(length: number): ApiError {
  return new ApiError(416, 'Range not satisfiable', { headers: { 'Content-Range': `bytes */${length}` } });
}

export function sendBytes(request: FastifyRequest, reply: FastifyReply, bytes: Buffer, contentType: string) {
  const range = byteRange(request.headers.range, bytes.length);
  reply.header('Accept-Ranges', 'bytes').header('Content-Type', contentType);
  if (!range) return reply.header('Content-Length', bytes.length).send(bytes);
  return reply
    .status(206)
    .header('Content-Range', `bytes ${range.start}-${range.end}/${bytes.length}`)
    .header('Content-Length', range.end - range.start + 1)
    .send(bytes.subarray(range.start, range.end + 1));
}
