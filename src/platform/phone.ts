// Phone numbers to E.164 with libphonenumber-js. A number written without a country code is read in the
// organization's region (US for `us`, Canada for `ca`); `eu` spans many countries, so there it needs a `+`.
import { type CountryCode, parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Region } from './http/caller.ts';

const DEFAULT_COUNTRY: Record<Region, CountryCode | undefined> = { us: 'US', ca: 'CA', eu: undefined };

/**
 * The number in E.164, or undefined when it is not a valid phone number. Without a region the number must
 * carry its country code (`+…`), as our own numbers do.
 */
export function normalisePhone(input: string, region?: Region): string | undefined {
  const trimmed = input.trim();
  if (!trimmed || trimmed.length > 40) return undefined;
  const parsed = parsePhoneNumberFromString(trimmed, region && DEFAULT_COUNTRY[region]);
  return parsed?.isValid() ? parsed.number : undefined;
}
