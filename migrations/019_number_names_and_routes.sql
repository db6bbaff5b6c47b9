-- Numbers an organization buys from the carrier's inventory (CONTRACT section 9) carry a friendly name and the
-- route a call to them takes: to an extension, an AI agent, a phone number (forward), or an extension's
-- voicemail. A number without a route sends SMS only; a call to it is answered busy.
ALTER TABLE phone_numbers
  ADD COLUMN friendly_name text,
  ADD COLUMN voice_route_type text CHECK (voice_route_type IN ('extension', 'agent', 'forward', 'voicemail')),
  ADD COLUMN voice_route_target text,
  ADD CONSTRAINT phone_numbers_route_whole CHECK ((voice_route_type IS NULL) = (voice_route_target IS NULL));
