// Parsers of SIP header values (RFC 3261 section 25.1's grammar, read forgivingly where RFC 4475 allows it).
// Each is a single left-to-right scan with a cursor: no regular expression ever sees the network's bytes, so
// no input can make one backtrack (the package's `parseAOR` and `parseUri` expressions could). A value that
// breaks the grammar throws a HeaderError, which the message parser turns into a 400 naming the header.
import type { SipAor, SipAuth, SipCSeq, SipUri, SipVia } from './message.ts';

export class HeaderError extends Error {}

/** Text being scanned and the position reached. */
export interface Cursor {
  text: string;
  at: number;
}

// token = 1*(alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~")  (RFC 3261 section 25.1)
const TOKEN = new Uint8Array(128);
for (const char of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.!%*_+`'~") {
  TOKEN[char.charCodeAt(0)] = 1;
}

export function isTokenChar(code: number): boolean {
  return code < 128 && TOKEN[code] === 1;
}

const isSpace = (code: number) => code === 32 || code === 9 || code === 13 || code === 10;

export function skipSpace(cursor: Cursor): void {
  while (cursor.at < cursor.text.length && isSpace(cursor.text.charCodeAt(cursor.at))) cursor.at++;
}

export function atEnd(cursor: Cursor): boolean {
  skipSpace(cursor);
  return cursor.at >= cursor.text.length;
}

function peek(cursor: Cursor): string {
  return cursor.text[cursor.at] ?? '';
}

function expect(cursor: Cursor, char: string, what: string): void {
  skipSpace(cursor);
  if (peek(cursor) !== char) throw new HeaderError(what);
  cursor.at++;
}

export function readToken(cursor: Cursor): string {
  const start = cursor.at;
  while (cursor.at < cursor.text.length && isTokenChar(cursor.text.charCodeAt(cursor.at))) cursor.at++;
  return cursor.text.slice(start, cursor.at);
}

/** A quoted-string, returned with its quotes; a backslash escapes the next character. */
function readQuoted(cursor: Cursor): string {
  const start = cursor.at;
  cursor.at++;
  while (cursor.at < cursor.text.length) {
    const char = cursor.text[cursor.at];
    if (char === '\\') cursor.at += 2;
    else if (char === '"') return cursor.text.slice(start, ++cursor.at);
    else cursor.at++;
  }
  throw new HeaderError('unterminated quoted string');
}

/** `;name[=value]` pairs: names lower-cased, a value a token, an IPv6 reference or a quoted string. */
export function parseParams(cursor: Cursor, params: Record<string, string | null> = {}) {
  for (;;) {
    skipSpace(cursor);
    if (peek(cursor) !== ';') return params;
    cursor.at++;
    skipSpace(cursor);
    const name = readToken(cursor).toLowerCase();
    if (!name) throw new HeaderError('empty parameter');
    skipSpace(cursor);
    if (peek(cursor) !== '=') {
      params[name] = null;
      continue;
    }
    cursor.at++;
    skipSpace(cursor);
    const first = peek(cursor);
    let value: string;
    if (first === '"') value = readQuoted(cursor);
    else if (first === '[') {
      const close = cursor.text.indexOf(']', cursor.at);
      if (close < 0) throw new HeaderError('unterminated IPv6 reference');
      value = cursor.text.slice(cursor.at, close + 1);
      cursor.at = close + 1;
    } else value = readToken(cursor);
    if (!value) throw new HeaderError('empty parameter value');
    params[name] = value;
  }
}

/**
 * One name-addr (`"Name" <uri>;params`, `Name <uri>`) or addr-spec (`uri;params`). Spaces inside the angle
 * brackets are forgiven (RFC 4475 3.1.2.14 allows it); an unquoted display name that is not tokens (3.1.2.15)
 * and an addr-spec with URI headers (3.1.2.13, which must be bracketed) are refused.
 */
export function parseAor(cursor: Cursor): SipAor {
  skipSpace(cursor);
  const start = cursor.at;
  let name: string | undefined;
  if (peek(cursor) === '"') {
    name = readQuoted(cursor);
    skipSpace(cursor);
    if (peek(cursor) !== '<') throw new HeaderError('display name without <uri>');
  } else if (peek(cursor) !== '<') {
    while (readToken(cursor)) skipSpace(cursor);
    if (peek(cursor) === '<') name = cursor.text.slice(start, cursor.at).trim() || undefined;
    else cursor.at = start;
  }
  let uri: string;
  if (peek(cursor) === '<') {
    const close = cursor.text.indexOf('>', cursor.at);
    if (close < 0) throw new HeaderError('unterminated <uri>');
    uri = cursor.text.slice(cursor.at + 1, close).trim();
    cursor.at = close + 1;
  } else {
    while (cursor.at < cursor.text.length) {
      const code = cursor.text.charCodeAt(cursor.at);
      if (code === 59 /* ; */ || code === 44 /* , */ || isSpace(code)) break;
      if (code === 63 /* ? */ || code === 60 /* < */ || code === 62 /* > */ || code === 34 /* " */) {
        throw new HeaderError('URI needs <>');
      }
      cursor.at++;
    }
    uri = cursor.text.slice(start, cursor.at);
  }
  if (!uri || !/^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(uri)) throw new HeaderError('not a URI');
  // A SIP URI must be one (RFC 3261 section 25.1): `sip:pbx@:5060`, with no host, is not. Other schemes (tel:)
  // are taken as they are.
  if (/^sips?:/i.test(uri) && !parseUri(uri)) throw new HeaderError('malformed SIP URI');
  return { name, uri, params: parseParams(cursor) };
}

/** A comma-separated list of one kind of value, to its end. */
export function parseList<T>(cursor: Cursor, parseOne: (cursor: Cursor) => T, list: T[] = []): T[] {
  for (;;) {
    list.push(parseOne(cursor));
    if (atEnd(cursor)) return list;
    expect(cursor, ',', 'expected , between values');
  }
}

/** A value that stands alone (To, From, Refer-To): nothing may follow it. */
export function parseWhole<T>(cursor: Cursor, parseOne: (cursor: Cursor) => T): T {
  const value = parseOne(cursor);
  if (!atEnd(cursor)) throw new HeaderError('unexpected text after the value');
  return value;
}

/** `SIP / 2.0 / UDP host[:port];params`, with the spaces RFC 3261 allows around the slashes. */
export function parseVia(cursor: Cursor, partial?: (via: SipVia) => void): SipVia {
  skipSpace(cursor);
  if (readToken(cursor).toUpperCase() !== 'SIP') throw new HeaderError('not SIP');
  expect(cursor, '/', 'expected /');
  skipSpace(cursor);
  const version = readToken(cursor);
  expect(cursor, '/', 'expected /');
  skipSpace(cursor);
  const protocol = readToken(cursor);
  if (!version || !protocol) throw new HeaderError('no protocol');
  const before = cursor.at;
  skipSpace(cursor);
  if (cursor.at === before) throw new HeaderError('no sent-by');
  const host = readHost(cursor);
  if (!host) throw new HeaderError('no host');
  let port: number | undefined;
  skipSpace(cursor);
  if (peek(cursor) === ':') {
    cursor.at++;
    skipSpace(cursor);
    port = readPort(cursor);
  }
  const via: SipVia = { version, protocol, host, port, params: {} };
  // What parsed so far is enough to answer with, should the parameters be broken (RFC 4475 3.1.2.1).
  partial?.(via);
  parseParams(cursor, via.params as Record<string, string | null>);
  return via;
}

function readHost(cursor: Cursor): string {
  if (peek(cursor) === '[') {
    const close = cursor.text.indexOf(']', cursor.at);
    if (close < 0) throw new HeaderError('unterminated IPv6 reference');
    const host = cursor.text.slice(cursor.at, close + 1);
    cursor.at = close + 1;
    return host;
  }
  const start = cursor.at;
  while (cursor.at < cursor.text.length) {
    const code = cursor.text.charCodeAt(cursor.at);
    const hostChar = (code >= 48 && code <= 57) || ((code | 32) >= 97 && (code | 32) <= 122) || code === 45;
    // `.`, and `_`, which no host name should have but the package's parser accepted: kept forgiving.
    if (!hostChar && code !== 46 && code !== 95) break;
    cursor.at++;
  }
  return cursor.text.slice(start, cursor.at);
}

function readPort(cursor: Cursor): number {
  const start = cursor.at;
  while (cursor.at - start < 6 && isDigit(cursor.text.charCodeAt(cursor.at))) cursor.at++;
  const port = Number(cursor.text.slice(start, cursor.at));
  if (cursor.at === start || port > 65535) throw new HeaderError('bad port');
  return port;
}

const isDigit = (code: number) => code >= 48 && code <= 57;

/** Digits only, at most `maxDigits` of them (the caller checks the range). */
export function parseDigits(text: string, maxDigits: number): number | undefined {
  const value = text.trim();
  if (!value || value.length > maxDigits) return undefined;
  for (let index = 0; index < value.length; index++) if (!isDigit(value.charCodeAt(index))) return undefined;
  return Number(value);
}

/** `CSeq: 4711 INVITE`: the number a 32-bit unsigned integer (RFC 3261 section 8.1.1.5, RFC 4475 3.1.2.4). */
export function parseCSeq(cursor: Cursor): SipCSeq {
  skipSpace(cursor);
  const start = cursor.at;
  while (isDigit(cursor.text.charCodeAt(cursor.at))) cursor.at++;
  const seq = parseDigits(cursor.text.slice(start, cursor.at), 10);
  if (seq === undefined || seq > 0xffffffff) throw new HeaderError('sequence number out of range');
  const before = cursor.at;
  skipSpace(cursor);
  const method = readToken(cursor);
  if (cursor.at === before || !method || !atEnd(cursor)) throw new HeaderError('expected a method');
  return { seq, method };
}

/** `Digest name=value, name="value"`: one challenge or credentials, quoted values kept quoted. */
export function parseAuth(cursor: Cursor, withScheme = true): SipAuth {
  const auth: SipAuth = {};
  skipSpace(cursor);
  if (withScheme) {
    auth.scheme = readToken(cursor);
    if (!auth.scheme) throw new HeaderError('no scheme');
  }
  for (let first = true; !atEnd(cursor); first = false) {
    if (!first) expect(cursor, ',', 'expected ,');
    skipSpace(cursor);
    const name = readToken(cursor);
    if (!name) throw new HeaderError('empty parameter');
    expect(cursor, '=', 'expected =');
    skipSpace(cursor);
    const value = peek(cursor) === '"' ? readQuoted(cursor) : readToken(cursor);
    if (!value) throw new HeaderError('empty parameter value');
    auth[name] = value;
  }
  return auth;
}

/**
 * A sip: or sips: URI in its parts, or undefined when it is not one. Index scans only: the user part may hold
 * `;`, `?` and a `:` before the password (RFC 4475 3.1.1.2), so it ends at the last `@`; the host at `:`, `;`
 * or `?`.
 */
export function parseUri(text: string | SipUri): SipUri | undefined {
  if (typeof text === 'object') return text;
  if (typeof text !== 'string' || text.length > 8192) return undefined;
  const colon = text.indexOf(':');
  const schema = text.slice(0, colon).toLowerCase();
  if (colon < 0 || (schema !== 'sip' && schema !== 'sips')) return undefined;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code <= 32 || code === 60 || code === 62 || code === 34 || code >= 127) return undefined;
  }
  const uri: SipUri = { schema, host: '', params: {}, headers: {} };
  let rest = text.slice(colon + 1);
  // URI headers cannot hold an unescaped @, the user part can hold ? and ; (RFC 3261 section 25.1).
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    const separator = userinfo.indexOf(':');
    uri.user = separator < 0 ? userinfo : userinfo.slice(0, separator);
    if (separator >= 0) uri.password = userinfo.slice(separator + 1);
    if (!uri.user) return undefined;
    rest = rest.slice(at + 1);
  }
  const cursor: Cursor = { text: rest, at: 0 };
  try {
    uri.host = readHost(cursor);
    if (!uri.host) return undefined;
    if (peek(cursor) === ':') {
      cursor.at++;
      uri.port = readPort(cursor);
    }
  } catch {
    return undefined;
  }
  const tail = rest.slice(cursor.at);
  if (tail && tail[0] !== ';' && tail[0] !== '?') return undefined;
  const headersAt = tail.indexOf('?');
  const params = headersAt < 0 ? tail : tail.slice(0, headersAt);
  for (const pair of params.split(';')) {
    if (!pair) continue;
    const equals = pair.indexOf('=');
    if (equals === 0) return undefined;
    if (equals < 0) uri.params[pair.toLowerCase()] = null;
    else uri.params[pair.slice(0, equals).toLowerCase()] = pair.slice(equals + 1);
  }
  if (headersAt >= 0) {
    for (const pair of tail.slice(headersAt + 1).split('&')) {
      const equals = pair.indexOf('=');
      if (equals <= 0) return undefined;
      uri.headers[pair.slice(0, equals)] = pair.slice(equals + 1);
    }
  }
  return uri;
}
