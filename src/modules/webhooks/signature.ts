// The Standard Webhooks headers of one signed message: `webhook-id`, `webhook-timestamp` (Unix seconds) and
// `webhook-signature`, one `v1,` HMAC-SHA256 signature per secret, separated by spaces (a receiver accepts
// the message when any one matches). Endpoint deliveries (delivery.ts) and the requests a call flow makes to
// the customer's app (voice/flow-webhook.ts) are signed by this one function.
//
// The HMAC is node:crypto's (OpenSSL), not the `standardwebhooks` package's: that one computes SHA-256 in
// JavaScript and decodes the secret again at every signature, which was 5 % of a webhook worker's busy time
// (docs/performance.md). The package remains the reference the tests check these signatures against.
import { createHmac } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
/** Secrets decoded lately (an endpoint's stays in use for its whole backlog); bounded, oldest dropped first. */
const decodedKeys = new Map<string, Buffer>();
const MAX_DECODED_KEYS = 1_000;

export function signedHeaders(
  id: string,
  at: Date,
  body: string,
  secrets: string[],
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signed = `${id}.${timestamp}.${body}`;
  return {
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': secrets
      .map((secret) => `v1,${createHmac('sha256', signingKey(secret)).update(signed).digest('base64')}`)
      .join(' '),
  };
}

/**
 * The HMAC key of a secret: the bytes its base64 says, after the `whsec_` prefix (a secret without the prefix
 * is base64 whole), as Standard Webhooks defines it.
 */
function signingKey(secret: string): Buffer {
  let key = decodedKeys.get(secret);
  if (key) return key;
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  key = Buffer.from(encoded, 'base64');
  if (decodedKeys.size >= MAX_DECODED_KEYS) decodedKeys.delete(decodedKeys.keys().next().value!);
  decodedKeys.set(secret, key);
  return key;
}
