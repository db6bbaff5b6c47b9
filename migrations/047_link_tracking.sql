-- Link tracking (CONTRACT section 14, issue 36): the http(s) links of a campaign's messages (and of a send that
-- asks for it) are replaced by `PUBLIC_URL/l/{code}`, one code per link per message. `tracked_links` maps a code
-- to the exact URL it redirects to until `expires_at`, when the hourly retention removes it (the code then
-- answers 404). `link_clicks` keeps each counted click with what the API lists; it names the message, campaign
-- and URL itself rather than the link row, so a campaign's click figures outlive its expired codes.
ALTER TABLE campaigns ADD COLUMN track_links boolean NOT NULL DEFAULT false;

CREATE TABLE tracked_links (
  code             text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  campaign_id      text REFERENCES campaigns (id) ON DELETE CASCADE,
  message_id       text NOT NULL,
  recipient_phone  text NOT NULL,
  url              text NOT NULL,
  created_at       timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL
);
CREATE INDEX tracked_links_expires_at ON tracked_links (expires_at);

CREATE TABLE link_clicks (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  campaign_id      text REFERENCES campaigns (id) ON DELETE CASCADE,
  message_id       text NOT NULL,
  recipient_phone  text NOT NULL,
  url              text NOT NULL,
  user_agent       text,
  created_at       timestamptz NOT NULL
);
-- The campaign's clicks list (newest first) and its counts.
CREATE INDEX link_clicks_campaign ON link_clicks (campaign_id, created_at DESC, id DESC) WHERE campaign_id IS NOT NULL;
