-- A campaign's recipients are unique by phone because the snapshot that makes them (one INSERT … SELECT
-- DISTINCT ON (phone), campaigns/store.ts) makes them so; nothing looks a recipient up by phone. The unique
-- index that said so again cost a fifth of a 100,000-recipient launch on PGlite (docs/performance.md).
ALTER TABLE campaign_recipients DROP CONSTRAINT campaign_recipients_campaign_id_phone_key;
