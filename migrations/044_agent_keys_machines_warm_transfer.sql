-- What a caller's keys do on an agent's calls ({"0": "transfer", ...}; unmapped keys go to the brain), whether
-- its outbound calls listen for an answering machine first ({action, message?}, null: they do not), and whether
-- its transfers are warm (the person hears a summary before the caller is connected). Issue 34.
ALTER TABLE agents ADD COLUMN keys jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE agents ADD COLUMN machine_detection jsonb;
ALTER TABLE agents ADD COLUMN transfer_mode text NOT NULL DEFAULT 'cold'
  CHECK (transfer_mode IN ('cold', 'warm'));
-- Who answered an outbound agent call that listened for a machine (null: it did not listen).
ALTER TABLE agent_calls ADD COLUMN answered_by text CHECK (answered_by IN ('human', 'machine', 'unknown'));
