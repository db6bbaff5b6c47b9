// What a request must carry before the application sees it (RFC 3261 section 8.2, RFC 4475 section 3.1.2).
// The parser refuses what breaks the grammar; this refuses what parses but cannot be acted on: a missing
// mandatory header, a CSeq naming another method, a URI we cannot route. Each refusal's reason phrase says
// what is wrong, so that whoever reads a trace sees it.
import { parseDigits, parseUri } from './headers.ts';
import type { SipMessage } from './message.ts';

/** Methods with a CSeq rule we can check; an unknown method is answered 501 by the application instead. */
export const KNOWN_METHODS = new Set([
  'INVITE',
  'ACK',
  'BYE',
  'CANCEL',
  'REGISTER',
  'OPTIONS',
  'UPDATE',
  'INFO',
  'PRACK',
  'SUBSCRIBE',
  'NOTIFY',
  'REFER',
  'MESSAGE',
  'PUBLISH',
]);

// Max-Forwards is among them: RFC 3261 section 8.1.1 makes it mandatory in every request a UAC sends, and a
// standards-strict phone answers 400 to a request without it; we are as strict, so that a client's bug shows at
// once instead of when its request first meets such a phone. An ACK without it is dropped like any broken ACK
// (index.ts: an ACK is never answered). A Max-Forwards that is there must be a number up to 255.
const MANDATORY: [string, string][] = [
  ['via', 'Via'],
  ['to', 'To'],
  ['from', 'From'],
  ['call-id', 'Call-ID'],
  ['cseq', 'CSeq'],
  ['max-forwards', 'Max-Forwards'],
];

export interface Refusal {
  status: number;
  reason: string;
}

export function validateRequest(request: SipMessage): Refusal | undefined {
  const headers = request.headers;
  for (const [name, label] of MANDATORY) {
    if (headers[name] === undefined) return { status: 400, reason: `Missing ${label}` };
  }
  const maxForwards = parseDigits(String(headers['max-forwards']), 10);
  if (maxForwards === undefined || maxForwards > 255)
    return { status: 400, reason: 'Malformed Max-Forwards' };
  const method = request.method ?? '';
  // ACK's CSeq names ACK and CANCEL's names CANCEL: every request's CSeq names its own method (section 8.1.1.5).
  // An unknown method is left to be answered 501, the better answer to RFC 4475 3.1.2.18.
  if (KNOWN_METHODS.has(method) && headers.cseq.method !== method) {
    return { status: 400, reason: 'CSeq Method Mismatch' };
  }
  const uri = request.uri ?? '';
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(uri)) return { status: 400, reason: 'Malformed Request-URI' };
  const scheme = uri.slice(0, Math.max(0, uri.indexOf(':'))).toLowerCase();
  if (scheme !== 'sip' && scheme !== 'sips') return { status: 416, reason: 'Unsupported URI Scheme' };
  const parsed = parseUri(uri);
  if (!parsed) return { status: 400, reason: 'Malformed Request-URI' };
  // Headers belong in a URI one dials, never in a Request-URI (RFC 4475 3.1.2.11).
  if (Object.keys(parsed.headers).length) return { status: 400, reason: 'Headers in Request-URI' };
  return undefined;
}

/** A response is only usable with the headers that match it to our transaction (RFC 3261 section 8.1.3.3). */
export function usableResponse(response: SipMessage): boolean {
  const headers = response.headers;
  return (
    Array.isArray(headers.via) &&
    headers.via.length > 0 &&
    headers['call-id'] !== undefined &&
    headers.cseq !== undefined &&
    headers.to !== undefined &&
    headers.from !== undefined
  );
}
