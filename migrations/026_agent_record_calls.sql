-- Whether an agent's calls are recorded (both sides, one track), as a call's `record` does for people.
ALTER TABLE agents ADD COLUMN record_calls boolean NOT NULL DEFAULT true;
