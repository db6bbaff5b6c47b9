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

export interface Carrier {
  readonly name: string;
  /** Messages per second one sending number of this type may send. */
  messagesPerSecond(type: NumberType): number;
  send(message: OutboundForCarrier): Promise<CarrierSendResult>;
  /**
   * How the carrier will report on an accepted message, when it reports by itself (development): the receipt
   * and its delay, or null for a message that never gets one. Only simulated carriers know this in advance.
   */
  plannedReceipt?(message: OutboundForCarrier): { status: ReceiptStatus; afterSeconds: number } | null;
}
