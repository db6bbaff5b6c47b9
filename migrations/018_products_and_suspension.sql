-- Products and account state (CONTRACT section 7). An organization subscribes to products (messaging, voice,
-- agents; all three by default, so a new organization can try everything): an endpoint of a product it lacks
-- answers 402 SUBSCRIPTION_REQUIRED. A suspended organization's requests answer 403 ACCOUNT_SUSPENDED and
-- nothing runs for it. Both are set by the operator.
ALTER TABLE organizations
  ADD COLUMN products text[] NOT NULL DEFAULT ARRAY['messaging', 'voice', 'agents']
    CHECK (products <@ ARRAY['messaging', 'voice', 'agents']),
  ADD COLUMN suspended boolean NOT NULL DEFAULT false;
