// The seam between our messages and a carrier network. The messaging service hands an outbound message to a
// Carrier when its paced slot comes; the carrier answers whether it took the message, and later reports
// delivery receipts and inbound texts back through the messaging service (`applyReceipt`, `receiveInbound`).
// A real adapter (an aggregator's HTTP API) implements the same interface; the simulated one stands in until.

/** The kinds of number a carrier sends from; each has its own throughput (docs/messaging.md). */
export const NUMBER_TYPES = ['local', 'toll_free', 'ca_local'] as const;
export type NumberType = (typeof NUMBER_TYPES)[number];

export interface OutboundForCarrier {
  id: string;
  from: string;
  to: string;
  body: string;
  /** The text's segments as the messaging module counts (and charges) them, and their encoding. */
  parts: string[];
  encoding: 'GSM-7' | 'UCS-2';
  mediaUrls: string[];
  mediaFiles: { contentType: string; size: number; filename: string | null }[];
}

export type CarrierSendResult =
  | { accepted: true; carrierMessageId: string }
  | { accepted: false; errorCode: string; errorMessage: string };

/** What the carrier reports about a message it accepted. */
export type ReceiptStatus = 'delivered' | 'failed' | 'undelivered';

/** 10DLC throughput depends on the brand's trust score and campaign (spec "Delivery throughput"). */
export const TRUST_TIERS = ['low', 'basic', 'standard', 'high'] as const;
export type TrustTier = (typeof TRUST_TIERS)[number];

/** Countries whose numbers the platform buys (NANP: the US and Canada). */
export const NUMBER_COUNTRIES = ['US', 'CA'] as const;
export type NumberCountry = (typeof NUMBER_COUNTRIES)[number];

/** A search of the carrier's inventory (GET /api/v2/numbers/available). */
export interface NumberSearch {
  country: NumberCountry;
  type: 'local' | 'toll_free';
  /** Three digits; when absent, the carrier's usual area codes of the country and type. */
  areaCode?: string;
  /** Digits the number must contain, anywhere in its national part. */
  contains?: string;
}

/** A number the carrier offers. */
export interface AvailableNumber {
  number: string;
  type: NumberType;
  country: NumberCountry;
  areaCode: string;
}

/** Where a carrier that reports by itself (SMPP, a provider's webhooks) hands what it hears. */
export interface CarrierReports {
  /** A delivery receipt for a message we submitted, by the carrier's id of it. */
  receipt(carrier: string, carrierMessageId: string, status: ReceiptStatus): Promise<void>;
  /** A text to one of our numbers; with the carrier's id of it, a second report of it is recognised. */
  inbound(message: { from: string; to: string; text: string; carrierMessageId?: string }): Promise<void>;
}

/** A provider's webhook as it arrived at /carriers/{name}/webhook: the raw body, for its signature. */
export interface CarrierWebhook {
  body: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

export interface Carrier {
  readonly name: string;
  /** It downloads hosted media URLs itself (an HTTP provider's MMS): we check each URL before handing it over. */
  readonly fetchesMedia?: boolean;
  /** Receipts and inbound texts go to `reports` (the messaging module calls this once). */
  listen?(reports: CarrierReports): void;
  /** Connects, for carriers with a session of their own (SMPP): the worker starts it, shutdown stops it. */
  start?(): void;
  stop?(): Promise<void>;
  /** Carriers that report over HTTP: checks a webhook's signature and hands what it says to `reports`. */
  handleWebhook?(request: CarrierWebhook): Promise<{ accepted: boolean; reason?: string }>;
  /**
   * The carrier's numbers that match `search`, in the carrier's order, lazily (the caller takes as many as it
   * needs and skips those it knows are taken). A search it cannot answer (an area code of another country or
   * type) throws a 400 ApiError saying why.
   */
  availableNumbers(search: NumberSearch): Iterable<AvailableNumber>;
  /** Orders a number for us: what it is, or undefined when the carrier does not offer it. */
  orderNumber(number: string): Promise<AvailableNumber | undefined>;
  /** Gives a number back to the carrier. */
  releaseNumber(number: string): Promise<void>;
  /** Messages per second one sending number of this type may send. */
  messagesPerSecond(type: NumberType): number;
  send(message: OutboundForCarrier): Promise<CarrierSendResult>;
  /**
   * How the carrier will report on an accepted message, when it reports by itself (development): the receipt
   * and its delay, or null for a message that never gets one. Only simulated carriers know this in advance.
   */
  plannedReceipt?(message: OutboundForCarrier): { status: ReceiptStatus; afterSeconds: number } | null;
}
