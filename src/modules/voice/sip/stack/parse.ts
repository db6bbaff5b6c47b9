// The SIP message parser: every byte the SIP listener receives goes through here first. It replaces the `sip`
// package's, whose `/^\s*([\S\s]*?)\r\n\r\n([\S\s]*)$/` was quadratic on whitespace (twenty 65,000-byte
// datagrams of spaces held the event loop for 2.5 s) and which answered malformed requests 200 or not at all.
// One pass over the text with indexOf and character scans, with limits on the message, the line and the
// header count. The result says what to do: hand the message on, refuse it in SIP's own terms (a 400 naming
// what is wrong, 505 for another version: RFC 3261 sections 8.2 and 18.3, RFC 4475 section 3.1.2), or drop it
// when there is nothing to answer (a response, or not SIP at all).
import {
  type Cursor,
  HeaderError,
  isTokenChar,
  parseAor,
  parseAuth,
  parseCSeq,
  parseDigits,
  parseList,
  parseVia,
  parseWhole,
} from './headers.ts';
import type { SipMessage, SipVia } from './message.ts';

export const SIP_LIMITS = {
  /** The largest message: a UDP datagram's payload at most; a stream's message (head and body) the same. */
  maxMessageBytes: 65_535,
  /** Header fields in one message (folded lines are one field). */
  maxHeaders: 200,
  /** One line of the head, before unfolding. */
  maxLineBytes: 16_384,
};
export type SipLimits = typeof SIP_LIMITS;

export type ParseResult =
  | { kind: 'message'; message: SipMessage }
  /** A request to answer `status reason`; its headers are those that parsed (any mandatory one may be missing). */
  | { kind: 'refused'; message: SipMessage; status: number; reason: string }
  | { kind: 'dropped'; reason: string };

const COMPACT: Record<string, string> = {
  i: 'call-id',
  m: 'contact',
  e: 'content-encoding',
  l: 'content-length',
  c: 'content-type',
  f: 'from',
  s: 'subject',
  k: 'supported',
  t: 'to',
  v: 'via',
  o: 'event',
  r: 'refer-to',
  u: 'allow-events',
};
/** Header fields that may appear once: a second one is a 400 (RFC 3261 section 7.3.1). */
const SINGLE = new Set(['to', 'from', 'call-id', 'cseq', 'content-length', 'max-forwards']);
const PRETTY: Record<string, string> = {
  'call-id': 'Call-ID',
  cseq: 'CSeq',
  'www-authenticate': 'WWW-Authenticate',
};
export const prettyHeaderName = (name: string) =>
  PRETTY[name] ?? name.replace(/(^|-)[a-z]/g, (letter) => letter.toUpperCase());

/** A head (start line and header fields, without the blank line) parsed; `refusal` is its first fault. */
interface Head {
  message: SipMessage;
  refusal?: { status: number; reason: string };
  dropped?: string;
}

/** A whole datagram (UDP): the body is what follows the blank line, cut to Content-Length (section 18.3). */
export function parseMessage(data: Buffer | string, limits: SipLimits = SIP_LIMITS): ParseResult {
  if (data.length > limits.maxMessageBytes) return { kind: 'dropped', reason: 'message too large' };
  const text = typeof data === 'string' ? data : data.toString('latin1');
  let start = 0;
  // Blank lines before the start line are ignored (RFC 3261 section 7.5): keep-alives are just CRLFs.
  while (start < text.length && (text.charCodeAt(start) === 13 || text.charCodeAt(start) === 10)) start++;
  if (start === text.length) return { kind: 'dropped', reason: 'empty' };
  const end = text.indexOf('\r\n\r\n', start);
  const head = parseHead(end < 0 ? text.slice(start) : text.slice(start, end), limits);
  if (end < 0) refuse(head, 400, 'Missing Blank Line After Headers');
  const body = end < 0 ? '' : text.slice(end + 4);
  const length = head.message.headers['content-length'];
  if (length !== undefined && length > body.length) refuse(head, 400, 'Content-Length Larger Than Message');
  head.message.content = length === undefined ? body : body.slice(0, length);
  return outcome(head);
}

function outcome(head: Head): ParseResult {
  if (head.dropped) return { kind: 'dropped', reason: head.dropped };
  if (!head.refusal) return { kind: 'message', message: head.message };
  if (head.message.method === undefined)
    return { kind: 'dropped', reason: `response: ${head.refusal.reason}` };
  return { kind: 'refused', message: head.message, ...head.refusal };
}

function refuse(head: Head, status: number, reason: string): void {
  head.refusal ??= { status, reason };
}

function parseHead(text: string, limits: SipLimits): Head {
  const head: Head = { message: { headers: {} } as SipMessage };
  let lineEnd = text.indexOf('\r\n');
  if (lineEnd < 0) lineEnd = text.length;
  if (lineEnd > limits.maxLineBytes) return { ...head, dropped: 'start line too long' };
  parseStartLine(text.slice(0, lineEnd), head);
  if (head.dropped) return head;
  let name: string | undefined;
  let value = '';
  let count = 0;
  for (let at = lineEnd + 2; at < text.length; ) {
    let next = text.indexOf('\r\n', at);
    if (next < 0) next = text.length;
    const line = text.slice(at, next);
    at = next + 2;
    if (line.length > limits.maxLineBytes) {
      refuse(head, 400, 'Header Line Too Long');
      continue;
    }
    const first = line.charCodeAt(0);
    if (first === 32 || first === 9) {
      // A folded line continues the field above it (RFC 3261 section 7.3.1).
      if (name === undefined) refuse(head, 400, 'Malformed Header Line');
      else value += ` ${line.trim()}`;
      continue;
    }
    if (name !== undefined) addHeader(head, name, value);
    name = undefined;
    if (++count > limits.maxHeaders) {
      refuse(head, 400, 'Too Many Headers');
      break;
    }
    const colon = line.indexOf(':');
    const fieldName = colon < 0 ? '' : line.slice(0, colon).trimEnd();
    if (!fieldName || !allTokenChars(fieldName)) {
      refuse(head, 400, 'Malformed Header Line');
      continue;
    }
    name = fieldName.toLowerCase();
    value = line.slice(colon + 1);
  }
  if (name !== undefined) addHeader(head, name, value);
  return head;
}

function allTokenChars(text: string): boolean {
  for (let index = 0; index < text.length; index++) if (!isTokenChar(text.charCodeAt(index))) return false;
  return true;
}

/** `METHOD SP Request-URI SP SIP/2.0` or `SIP/2.0 SP 3DIGIT SP Reason` (RFC 3261 section 7.1, 7.2). */
function parseStartLine(line: string, head: Head): void {
  const message = head.message;
  if (line.startsWith('SIP/')) {
    const space = line.indexOf(' ');
    const code = line.slice(space + 1, space + 4);
    const after = line.charCodeAt(space + 4);
    if (space < 0 || line.slice(4, space) !== '2.0') head.dropped = 'response of another version';
    else if (parseDigits(code, 3) === undefined || code.length !== 3 || Number(code) < 100) {
      head.dropped = 'bad status code';
    } else if (!Number.isNaN(after) && after !== 32) head.dropped = 'bad status code';
    else {
      message.version = '2.0';
      message.status = Number(code);
      message.reason = line.slice(space + 5);
    }
    return;
  }
  const first = line.indexOf(' ');
  const second = first < 0 ? -1 : line.indexOf(' ', first + 1);
  const method = line.slice(0, first);
  const uri = line.slice(first + 1, second);
  const version = second < 0 ? '' : line.slice(second + 1);
  if (!line.includes('SIP/')) {
    head.dropped = 'not SIP';
    return;
  }
  message.method = method;
  message.uri = uri;
  message.version = version.slice(4);
  const versionShape = /^SIP\/[0-9]{1,3}\.[0-9]{1,3}$/.test(version);
  if (first <= 0 || !allTokenChars(method) || !uri || /\s/.test(uri) || !versionShape) {
    refuse(head, 400, 'Malformed Request-Line');
  } else if (version !== 'SIP/2.0') {
    refuse(head, 505, 'Version Not Supported');
  }
}

type HeaderParser = (cursor: Cursor, existing: unknown, head: Head) => unknown;
const aorList: HeaderParser = (cursor, existing) => parseList(cursor, parseAor, (existing as never) ?? []);
const authList: HeaderParser = (cursor, existing) => [...((existing as never[]) ?? []), parseAuth(cursor)];

const parsers: Record<string, HeaderParser> = {
  to: (cursor) => parseWhole(cursor, parseAor),
  from: (cursor) => parseWhole(cursor, parseAor),
  'refer-to': (cursor) => parseWhole(cursor, parseAor),
  contact: (cursor, existing) => (cursor.text.trim() === '*' ? '*' : aorList(cursor, existing, {} as Head)),
  route: aorList,
  'record-route': aorList,
  path: aorList,
  via: parseViaHeader,
  cseq: (cursor) => parseCSeq(cursor),
  'call-id': (cursor) => {
    const callId = cursor.text.trim();
    if (!callId || /\s/.test(callId)) throw new HeaderError('not a word');
    return callId;
  },
  'content-length': (cursor) => {
    // Ten digits at most: anything larger is over every limit anyway, and stays an exact number.
    const length = parseDigits(cursor.text, 10);
    if (length === undefined) throw new HeaderError('not a length');
    return length;
  },
  'www-authenticate': authList,
  'proxy-authenticate': authList,
  authorization: authList,
  'proxy-authorization': authList,
  'authentication-info': (cursor) => parseAuth(cursor, false),
};

/** Via, keeping what parsed of a broken value so that the 400 can still be sent (RFC 4475 3.1.2.1). */
function parseViaHeader(cursor: Cursor, existing: unknown, head: Head): SipVia[] {
  const list = (existing as SipVia[] | undefined) ?? [];
  let partial: SipVia | undefined;
  try {
    parseList(
      cursor,
      (each) => {
        const via = parseVia(each, (parsed) => {
          partial = parsed;
        });
        partial = undefined;
        return via;
      },
      list,
    );
  } catch (error) {
    if (partial) list.push(partial);
    if (list.length) head.message.headers.via = list;
    throw error;
  }
  return list;
}

function addHeader(head: Head, alias: string, value: string): void {
  const name = COMPACT[alias] ?? alias;
  if (name === '__proto__') return;
  const headers = head.message.headers;
  const existing = Object.hasOwn(headers, name) ? headers[name] : undefined;
  if (existing !== undefined && SINGLE.has(name)) {
    refuse(head, 400, `Duplicate ${prettyHeaderName(name)}`);
    return;
  }
  const parser = parsers[name];
  if (!parser) {
    const text = value.trim();
    headers[name] = existing === undefined ? text : `${existing},${text}`;
    return;
  }
  try {
    headers[name] = parser({ text: value, at: 0 }, existing, head);
  } catch (error) {
    if (!(error instanceof HeaderError)) throw error;
    refuse(head, 400, `Malformed ${prettyHeaderName(name)}`);
  }
}

/**
 * Frames messages on a stream (TCP): a head ends at the blank line, its body is Content-Length bytes, which
 * a stream must carry (RFC 3261 section 18.3). Only the newly arrived bytes are searched, and a head is parsed
 * once, so a peer trickling bytes costs linear time. `push` answers false when the stream broke the limits or
 * cannot be framed any more: the caller closes it.
 */
export class SipStreamFramer {
  private chunks: string[] = [];
  private size = 0;
  /** The last three characters received while looking for a blank line split across chunks. */
  private tail = '';
  private pending?: { head: Head; needed: number };

  constructor(
    private readonly deliver: (result: ParseResult) => void,
    private readonly limits: SipLimits = SIP_LIMITS,
  ) {}

  push(chunk: string): boolean {
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.pending) {
      if (this.size < this.pending.needed) return true;
    } else {
      const window = this.tail + chunk;
      if (window.indexOf('\r\n\r\n') < 0) {
        this.tail = window.slice(-3);
        return this.size <= this.limits.maxMessageBytes;
      }
    }
    const text = this.chunks.join('');
    this.chunks = [];
    this.size = 0;
    this.tail = '';
    return this.consume(text);
  }

  private consume(text: string): boolean {
    let at = 0;
    for (;;) {
      if (this.pending) {
        const { head, needed } = this.pending;
        if (text.length - at < needed) return this.keep(text.slice(at));
        head.message.content = text.slice(at, at + needed);
        at += needed;
        this.pending = undefined;
        this.deliver(outcome(head));
        continue;
      }
      while (at < text.length && (text.charCodeAt(at) === 13 || text.charCodeAt(at) === 10)) at++;
      const end = text.indexOf('\r\n\r\n', at);
      if (end < 0) return this.keep(text.slice(at));
      if (end - at > this.limits.maxMessageBytes) return false;
      const head = parseHead(text.slice(at, end), this.limits);
      const headBytes = end + 4 - at;
      at = end + 4;
      if (head.dropped) {
        this.deliver(outcome(head));
        return false;
      }
      let needed = head.message.headers['content-length'];
      if (needed === undefined) {
        // Without a length the stream cannot be framed: a bad one ends it, a missing one is taken as 0.
        if (head.refusal?.reason === 'Malformed Content-Length') {
          this.deliver(outcome(head));
          return false;
        }
        refuse(head, 400, 'Missing Content-Length');
        needed = 0;
      }
      if (headBytes + needed > this.limits.maxMessageBytes) {
        head.refusal = { status: 513, reason: 'Message Too Large' };
        this.deliver(outcome(head));
        return false;
      }
      this.pending = { head, needed };
    }
  }

  private keep(rest: string): boolean {
    if (rest) {
      this.chunks = [rest];
      this.size = rest.length;
      this.tail = rest.slice(-3);
    }
    return this.size <= this.limits.maxMessageBytes;
  }
}
