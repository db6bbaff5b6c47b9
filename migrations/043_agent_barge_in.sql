-- Whether a caller who talks over an agent cuts it off (barge-in); off for lines that echo the agent back.
ALTER TABLE agents ADD COLUMN barge_in boolean NOT NULL DEFAULT true;
