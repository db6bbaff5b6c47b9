// Verifying the platform's webhooks, per Standard Webhooks (https://www.standardwebhooks.com): the signature
// is HMAC-SHA256 over `webhook-id.webhook-timestamp.body` with the endpoint's secret (`whsec_` + base64), sent
// as one or more space-separated `v1,<base64>` entries (two during a secret rotation). Node's crypto only.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from './errors.ts';
import type { webhooks as EventCatalog } from './generated/openapi.ts';

/** Every event the platform sends, by `type` (from the OpenAPI document's webhooks section). */
export type WebhookEvent = {
  [Type in keyof EventCatalog]: EventCatalog[Type] extends {
    post: { requestBody: { content: { 'application/json': infer Event } } };
  }
    ? Event
    : never;
}[keyof EventCatalog];

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** How far the timestamp may be from now, either way; 5 minutes by default. */
  toleranceSeconds?: number;
  /** Now, in milliseconds (tests). */
  now?: number;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(entry) ? entry[0] : entry;
}

function secretBytes(secret: string): Buffer {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length === 0) throw new WebhookVerificationError('The webhook secret is empty or not base64');
  return bytes;
}

/** The `v1,…` signature of a payload (for tests and for forwarding tools that re-sign). */
export function sign(secret: string, id: string, timestamp: number, payload: string | Buffer): string {
  const mac = createHmac('sha256', secretBytes(secret))
    .update(`${id}.${timestamp}.`)
    .update(payload)
    .digest('base64');
  return `v1,${mac}`;
}

/**
 * Checks a delivery and returns its event. `payload` must be the body exactly as received (a string or the
 * raw bytes, not re-serialized JSON). Throws WebhookVerificationError when a header is missing, the timestamp
 * is outside the tolerance (a replay), or no signature matches.
 */
export function verify(
  payload: string | Buffer | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyOptions = {},
): WebhookEvent {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature header');
  }
  const seconds = Number(timestamp);
  if (!Number.isInteger(seconds)) throw new WebhookVerificationError('Invalid webhook-timestamp');
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - seconds) > tolerance) {
    throw new WebhookVerificationError(
      'The webhook timestamp is outside the tolerance (a replay, or a skewed clock)',
    );
  }
  const body = typeof payload === 'string' ? Buffer.from(payload) : Buffer.from(payload);
  const expected = Buffer.from(sign(secret, id, seconds, body).slice('v1,'.length), 'base64');
  const matches = signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError('No webhook signature matches the secret');
  try {
    return JSON.parse(body.toString('utf8')) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('The webhook body is not JSON');
  }
}

export const webhooks = { verify, sign };
