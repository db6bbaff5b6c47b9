-- Call flows (CONTRACT section 13, docs/voice.md "Call flows"): a named list of steps a call runs. Every
-- change of the steps is a new version, kept in a table of its own: a call that started on version 3 runs
-- version 3 to its end even when the flow is edited meanwhile, and the runner reads one row by key to get it.
-- `version` on the flow is the latest; a change of the name alone makes no version.
CREATE TABLE call_flows (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name             text NOT NULL,
  version          integer NOT NULL CHECK (version >= 1),
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX call_flows_org_created ON call_flows (organization_id, created_at DESC, id DESC);

CREATE TABLE call_flow_versions (
  flow_id     text NOT NULL REFERENCES call_flows (id) ON DELETE CASCADE,
  version     integer NOT NULL CHECK (version >= 1),
  -- The steps as checked when saved (src/modules/voice/flows/step-check.ts): at most 500, nested 8 deep.
  steps       jsonb NOT NULL,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (flow_id, version)
);

-- A number's calls may now go to a call flow. The constraint of 019 had its name given by PostgreSQL (the
-- same on PGlite); it is replaced by a named one, so that the next route type changes it by name.
ALTER TABLE phone_numbers DROP CONSTRAINT phone_numbers_voice_route_type_check;
ALTER TABLE phone_numbers ADD CONSTRAINT phone_numbers_voice_route_type
  CHECK (voice_route_type IN ('extension', 'agent', 'forward', 'voicemail', 'flow'));
