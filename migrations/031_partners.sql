-- Partners (CONTRACT section 11, docs/partners.md): an organization the operator marks `partner` resells the
-- platform to client organizations it creates (partner_id), after accepting the current published partner
-- agreement. An acceptance is per version: publishing a new version asks every partner again.
ALTER TABLE organizations ADD COLUMN partner boolean NOT NULL DEFAULT false;
ALTER TABLE organizations ADD COLUMN partner_id text REFERENCES organizations (id) ON DELETE SET NULL;
CREATE INDEX organizations_partner_clients ON organizations (partner_id, created_at DESC, id DESC)
  WHERE partner_id IS NOT NULL;

CREATE TABLE partner_agreements (
  version       text PRIMARY KEY,
  text          text NOT NULL,
  published_at  timestamptz NOT NULL
);
CREATE INDEX partner_agreements_published ON partner_agreements (published_at DESC, version DESC);

CREATE TABLE partner_agreement_acceptances (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  version          text NOT NULL REFERENCES partner_agreements (version) ON DELETE CASCADE,
  accepted_by      text REFERENCES users (id) ON DELETE SET NULL,
  accepted_at      timestamptz NOT NULL,
  PRIMARY KEY (organization_id, version)
);
