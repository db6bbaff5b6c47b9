-- Transfers (CONTRACT section 13, issue 33): a call moved to another person (POST /calls/{id}/transfer, a
-- phone's REFER, a call flow's transfer step) keeps its one record; these say where it went last and when.
-- `transferred_to` is an extension id when `transferred_to_type` is 'extension', a ring group id when
-- 'ring_group', an E.164 number when 'number', a sip: URI when 'sip' (the target as it was asked for).
ALTER TABLE calls ADD COLUMN transferred_to_type text
  CHECK (transferred_to_type IN ('extension', 'ring_group', 'number', 'sip'));
ALTER TABLE calls ADD COLUMN transferred_to text;
ALTER TABLE calls ADD COLUMN transferred_at timestamptz;
