// What the throughput benches create: an organization whose plan limits never refuse a send, so that a bench
// measures the pipeline rather than the limits (a fixed creation date puts it past the new-account window).
export const UNLIMITED_SENDER = {
  plan: 'enterprise',
  subscriptionState: 'paid',
  cardVerified: true,
  dailyLimitSegments: 10_000_000,
  monthlyAllowanceSegments: 10_000_000,
  createdAt: '2020-01-01T00:00:00.000Z',
} as const;
