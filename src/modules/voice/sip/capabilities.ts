// What a request may ask of us beyond RFC 3261 itself, and the refusal when it asks for more (sections 8.2.2.3
// and 8.2.3): an extension it Requires that we do not support is 420 with Unsupported naming it; a body we
// cannot read (a type other than SDP, an encoding other than identity) is 415 with what we accept. A phone that
// asked for a reliable provisional (100rel) or a session timer it insists on learns so at once instead of
// being answered as if we had agreed.
import type { SipMessage } from './stack/index.ts';

/**
 * Option tags we implement: `replaces` (RFC 3891), as a REFER's Refer-To carries it (refer.ts) and as an INVITE
 * carries it (invites.ts). Not 100rel, nor timer.
 */
const SUPPORTED_OPTION_TAGS = new Set<string>(['replaces']);
/** What OPTIONS (and a REFER's 202) say we support. */
export const SUPPORTED = [...SUPPORTED_OPTION_TAGS].join(', ');
/** The methods we take (OPTIONS says so); anything else is 501. */
export const ALLOW = 'REGISTER, OPTIONS, INVITE, ACK, BYE, CANCEL, UPDATE, INFO, REFER';
/** The body types we read: session descriptions, in the requests that carry offers and answers. */
const ACCEPTED_TYPE = 'application/sdp';

export interface CapabilityRefusal {
  status: number;
  reason: string;
  headers: Record<string, string>;
}

export function capabilityRefusal(request: SipMessage): CapabilityRefusal | undefined {
  // A CANCEL's Require is not acted on, and an ACK is never answered (sections 8.2.2.3 and 17.2.3).
  if (request.method === 'ACK' || request.method === 'CANCEL') return undefined;
  const required = tokens(request.headers.require);
  const unsupported = required.filter((tag) => !SUPPORTED_OPTION_TAGS.has(tag.toLowerCase()));
  if (unsupported.length > 0) {
    return { status: 420, reason: 'Bad Extension', headers: { unsupported: unsupported.join(', ') } };
  }
  if (!request.content) return undefined;
  const type = String(request.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  if (type !== ACCEPTED_TYPE) {
    return { status: 415, reason: 'Unsupported Media Type', headers: { accept: ACCEPTED_TYPE } };
  }
  const encodings = tokens(request.headers['content-encoding']).filter(
    (encoding) => encoding.toLowerCase() !== 'identity',
  );
  if (encodings.length > 0) {
    return { status: 415, reason: 'Unsupported Media Type', headers: { 'accept-encoding': 'identity' } };
  }
  return undefined;
}

/** A comma-separated header's tokens (several header lines are joined with commas by the parser). */
function tokens(header: unknown): string[] {
  if (typeof header !== 'string') return [];
  return header
    .split(',')
    .map((token) => token.trim())
    .filter(Boolean)
    .slice(0, 32);
}
