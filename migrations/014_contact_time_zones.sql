-- A contact's own time zone (IANA name, as the runtime's tz database spells it; docs/contacts.md). Campaign
-- quiet hours use it first; without one, the zone comes from the phone number.
ALTER TABLE contacts ADD COLUMN timezone text;
