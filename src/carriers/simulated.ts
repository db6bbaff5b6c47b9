// A carrier that behaves like a real one without a network: it accepts messages at the throughput of the
// sending number's type and, outside test, reports a delivery receipt a few seconds later. Recipients whose
// numbers end in the magic digits below make it refuse, fail, leave undelivered or never answer, so every
// path can be seen in development (docs/messaging.md "The simulated carrier").
import { createHash } from 'node:crypto';
import type {
  AvailableNumber,
  Carrier,
  CarrierSendResult,
  NumberSearch,
  NumberType,
  OutboundForCarrier,
  ReceiptStatus,
  TrustTier,
} from './carrier.ts';
import { classify, inStock, searchInventory } from './simulated-inventory.ts';

/** Last four digits of the recipient that pick the simulator's behaviour. */
export const MAGIC_SUFFIXES = {
  /** Refused at submission: the message goes straight to `failed`. */
  rejected: '0666',
  /** Accepted, then a `failed` receipt. */
  failed: '0667',
  /** Accepted, then an `undelivered` receipt. */
  undelivered: '0668',
  /** Accepted, and no receipt ever arrives (stays `sent`: awaiting receipt, then no receipt). */
  silent: '0669',
} as const;

// Messages per minute per 10DLC campaign by trust tier, after the US carriers' published classes
// (AT&T: 75 TPM for the lowest scores up to 4,500 TPM for the highest).
const TEN_DLC_PER_MINUTE: Record<TrustTier, number> = { low: 75, basic: 240, standard: 2400, high: 4500 };

/** Messages per second one sending number of `type` may send on the North American networks. */
export function localThroughput(type: NumberType, tenDlcTier: TrustTier): number {
  switch (type) {
    case 'toll_free':
      return 3; // verified toll-free: about 3 per second
    case 'ca_local':
      return 0.9; // Canadian local: just under 1 per second per number, best-effort
    case 'local':
      return TEN_DLC_PER_MINUTE[tenDlcTier] / 60;
  }
}

/** Seconds after acceptance at which the simulator reports in development. */
export const RECEIPT_DELAY_SECONDS = 3;

export class SimulatedCarrier implements Carrier {
  readonly name = 'simulated';

  constructor(private readonly tenDlcTier: TrustTier = 'basic') {}

  messagesPerSecond(type: NumberType): number {
    return localThroughput(type, this.tenDlcTier);
  }

  availableNumbers(search: NumberSearch): Iterable<AvailableNumber> {
    return searchInventory(search);
  }

  async orderNumber(number: string): Promise<AvailableNumber | undefined> {
    const found = classify(number);
    return found && inStock(number) ? found : undefined;
  }

  async releaseNumber(_number: string): Promise<void> {
    // Back in stock: the simulated inventory is a property of the number, not a list that shrinks.
  }

  async send(message: OutboundForCarrier): Promise<CarrierSendResult> {
    if (message.to.endsWith(MAGIC_SUFFIXES.rejected)) {
      return {
        accepted: false,
        errorCode: 'carrier_rejected',
        errorMessage: 'The carrier refused the message (simulated: recipient ends in 0666)',
      };
    }
    // Derived from our id, as a real carrier's idempotency key would make it: a dispatch retried after a
    // crash between the carrier's acceptance and our record of it gets the same carrier message back.
    const digest = createHash('sha256').update(message.id).digest('hex').slice(0, 24);
    return { accepted: true, carrierMessageId: `sim_${digest}` };
  }

  plannedReceipt(message: OutboundForCarrier): { status: ReceiptStatus; afterSeconds: number } | null {
    if (message.to.endsWith(MAGIC_SUFFIXES.silent)) return null;
    const status: ReceiptStatus = message.to.endsWith(MAGIC_SUFFIXES.failed)
      ? 'failed'
      : message.to.endsWith(MAGIC_SUFFIXES.undelivered)
        ? 'undelivered'
        : 'delivered';
    return { status, afterSeconds: RECEIPT_DELAY_SECONDS };
  }
}
