// A carrier reached over a provider's HTTP API (CARRIER=http), in the shape of Telnyx's Messaging API v2:
// POST {base}/v2/messages with a Bearer key, and webhooks signed with Ed25519 over `timestamp|body`
// (`telnyx-signature-ed25519`, `telnyx-timestamp`) delivered to /carriers/http/webhook. Any provider that
// speaks this shape works; docs/carriers.md shows how to point one at us.
//
// Sends carry `Idempotency-Key: <our message id>`, so the provider can tell a retried submit (after a timeout
// whose answer we never saw) from a new message. Refusals in 4xx fail the message with the provider's error;
// 408, 429, 5xx and network failures throw, and the dispatch job tries again later. Webhooks: a status report
// becomes a receipt (durable job, matched by the provider's message id), an inbound text takes the inbound
// path and is recognised when the provider sends it twice (its id is kept on the message).
import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type {
  Carrier,
  CarrierSendResult,
  CarrierWebhook,
  OutboundForCarrier,
  ReceiptStatus,
  TrustTier,
} from '../carrier.ts';
import { ProviderCarrier } from '../provider-carrier.ts';

export interface HttpCarrierOptions {
  /** The provider's API, e.g. https://api.telnyx.com */
  baseUrl: string;
  apiKey: string;
  /** The provider's webhook signing key: Ed25519 public key, base64 of its 32 bytes. */
  publicKey: string;
  tenDlcTier: TrustTier;
  log: FastifyBaseLogger;
  /** How far a webhook's timestamp may be from now (s); 300 unless said. */
  toleranceSeconds?: number;
  now?: () => number;
  timeoutMs?: number;
}

/** The provider's final delivery states and ours; others (queued, sending, sent, unconfirmed) are not final. */
const FINAL_STATES: Record<string, ReceiptStatus> = {
  delivered: 'delivered',
  delivery_failed: 'undelivered',
  expired: 'undelivered',
  sending_failed: 'failed',
};

/** A provider webhook, as far as we read it (anything may be missing: each field is checked where used). */
interface ProviderEvent {
  data?: {
    event_type?: string;
    payload?: {
      id?: unknown;
      text?: unknown;
      from?: { phone_number?: unknown };
      to?: { phone_number?: unknown; status?: unknown }[];
    };
  };
}

// The DER prefix of an Ed25519 SubjectPublicKeyInfo, before the 32 raw key bytes (RFC 8410).
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

function header(headers: CarrierWebhook['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export class HttpCarrier extends ProviderCarrier implements Carrier {
  readonly name = 'http';
  readonly fetchesMedia = true;
  private readonly key: KeyObject;

  constructor(private readonly options: HttpCarrierOptions) {
    super(options.tenDlcTier);
    const raw = Buffer.from(options.publicKey, 'base64');
    if (raw.length !== 32)
      throw new Error('CARRIER_HTTP_PUBLIC_KEY must be the base64 of a 32-byte Ed25519 key');
    this.key = createPublicKey({
      key: Buffer.concat([ED25519_SPKI_PREFIX, raw]),
      format: 'der',
      type: 'spki',
    });
  }

  async send(message: OutboundForCarrier): Promise<CarrierSendResult> {
    if (message.mediaFiles.length > 0) {
      // The provider fetches media by URL; uploaded files have none it could reach.
      return {
        accepted: false,
        errorCode: 'uploaded_media_not_supported',
        errorMessage: 'This carrier takes MMS media as hosted URLs (media), not uploaded files (mediaFiles)',
      };
    }
    const response = await fetch(`${this.options.baseUrl.replace(/\/+$/, '')}/v2/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${this.options.apiKey}`,
        'content-type': 'application/json',
        accept: 'application/json',
        'idempotency-key': message.id,
      },
      body: JSON.stringify({
        from: message.from,
        to: message.to,
        text: message.body,
        ...(message.mediaUrls.length > 0 && { media_urls: message.mediaUrls }),
      }),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 15_000),
    });
    const text = await response.text();
    let body: { data?: { id?: string }; errors?: { code?: string; title?: string; detail?: string }[] } = {};
    try {
      body = JSON.parse(text);
    } catch {}
    if (response.ok && body.data?.id) return { accepted: true, carrierMessageId: body.data.id };
    if (
      response.status >= 400 &&
      response.status < 500 &&
      response.status !== 408 &&
      response.status !== 429
    ) {
      const error = body.errors?.[0];
      return {
        accepted: false,
        errorCode: `http_${error?.code ?? response.status}`,
        errorMessage:
          error?.detail ?? error?.title ?? `The provider refused the message (HTTP ${response.status})`,
      };
    }
    throw new Error(`provider answered HTTP ${response.status}; the message is tried again later`);
  }

  async handleWebhook(request: CarrierWebhook): Promise<{ accepted: boolean; reason?: string }> {
    const signature = header(request.headers, 'telnyx-signature-ed25519');
    const timestamp = header(request.headers, 'telnyx-timestamp');
    if (!signature || !timestamp || !/^\d+$/.test(timestamp)) return { accepted: false, reason: 'unsigned' };
    const now = Math.floor((this.options.now?.() ?? Date.now()) / 1000);
    if (Math.abs(now - Number(timestamp)) > (this.options.toleranceSeconds ?? 300)) {
      return { accepted: false, reason: 'stale timestamp' };
    }
    const signed = Buffer.concat([Buffer.from(`${timestamp}|`), request.body]);
    let valid = false;
    try {
      valid = verify(null, signed, this.key, Buffer.from(signature, 'base64'));
    } catch {}
    if (!valid) return { accepted: false, reason: 'bad signature' };

    let event: ProviderEvent;
    try {
      event = JSON.parse(request.body.toString('utf8'));
    } catch {
      return { accepted: false, reason: 'not JSON' };
    }
    const type = event.data?.event_type;
    const payload = event.data?.payload ?? {};
    if (type === 'message.finalized' || type === 'message.sent') {
      const status = FINAL_STATES[String(payload.to?.[0]?.status ?? '')];
      if (status && typeof payload.id === 'string')
        await this.reports?.receipt(this.name, payload.id, status);
    } else if (type === 'message.received') {
      const from = payload.from?.phone_number;
      const to = payload.to?.[0]?.phone_number;
      if (typeof from === 'string' && typeof to === 'string' && typeof payload.id === 'string') {
        await this.reports?.inbound({
          from,
          to,
          text: typeof payload.text === 'string' ? payload.text : '',
          carrierMessageId: payload.id,
        });
      }
    } else {
      this.options.log.info({ type }, 'carrier webhook of a type we do not use');
    }
    return { accepted: true };
  }
}
