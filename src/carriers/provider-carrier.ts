// What the real carriers (SMPP, a provider's HTTP API) share: numbers are bought from the provider by contract
// or in its portal, not through its messaging protocol, so there is no inventory to search, order from or
// release into (the operator adds an organization's numbers: POST /admin/v1/organizations/{id}/numbers); and
// each number sends at the North American networks' rates for its type and our 10DLC tier. Receipts and
// inbound texts go to the CarrierReports the messaging module hands over.
import type { AvailableNumber, CarrierReports, NumberType, TrustTier } from './carrier.ts';
import { localThroughput } from './simulated.ts';

export abstract class ProviderCarrier {
  protected reports?: CarrierReports;

  constructor(private readonly tenDlcTier: TrustTier) {}

  listen(reports: CarrierReports): void {
    this.reports = reports;
  }

  messagesPerSecond(type: NumberType): number {
    return localThroughput(type, this.tenDlcTier);
  }

  availableNumbers(): Iterable<AvailableNumber> {
    return [];
  }

  async orderNumber(): Promise<AvailableNumber | undefined> {
    return undefined;
  }

  async releaseNumber(): Promise<void> {}
}
