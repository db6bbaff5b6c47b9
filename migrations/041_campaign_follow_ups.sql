-- Campaign follow-ups (CONTRACT section 14, issue 36): POST /campaigns/{id}/retry makes a draft to the recipients
-- of a campaign whose messages failed or were undelivered (or got no receipt). The draft names its parent, and
-- the phones it was made with are its recipients at launch, before the members of any lists it is given.
ALTER TABLE campaigns ADD COLUMN parent_campaign_id text REFERENCES campaigns (id) ON DELETE SET NULL;

CREATE TABLE campaign_chosen_recipients (
  campaign_id  text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
  position     integer NOT NULL,
  phone        text NOT NULL,
  -- The contact the parent's recipient was (its merge fields at launch); null when it was none.
  contact_id   text,
  PRIMARY KEY (campaign_id, position),
  UNIQUE (campaign_id, phone)
);
