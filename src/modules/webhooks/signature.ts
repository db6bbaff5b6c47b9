// The Standard Webhooks headers of one signed message: `webhook-id`, `webhook-timestamp` (Unix seconds) and
// `webhook-signature`, one `v1,` HMAC-SHA256 signature per secret, separated by spaces (a receiver accepts
// the message when any one matches). Endpoint deliveries (delivery.ts) and the requests a call flow makes to
// the customer's app (voice/flow-webhook.ts) are signed by this one function.
import { Webhook } from 'standardwebhooks';

export function signedHeaders(
  id: string,
  at: Date,
  body: string,
  secrets: string[],
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' '),
  };
}
