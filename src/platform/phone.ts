// Phone numbers to E.164 with libphonenumber-js. A number written without a country code is read in the
// organization's region (US for `us`, Canada for `ca`); `eu` spans many countries, so there it needs a `+`.
//
// North American numbers (+1: the US, Canada and 23 other members of the North American Numbering Plan) get
// a fast path. libphonenumber-js builds each of its patterns into a new RegExp on every call, which costs
// about 20 µs a number and was the largest single cost of a contact import. The fast path asks the same
// question of the same metadata (which country of +1 the number belongs to, then whether it is a valid
// number there) with the patterns compiled once, for the shape most files hold: ten digits after `+1`, or
// ten digits alone in the `us` and `ca` regions, written with or without spaces, dashes, dots and
// parentheses. Anything else goes to libphonenumber-js. test/phone.test.ts shows the two agree.
import { type CountryCode, Metadata, parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Region } from './http/caller.ts';

const DEFAULT_COUNTRY: Record<Region, CountryCode | undefined> = { us: 'US', ca: 'CA', eu: undefined };

/**
 * The number in E.164, or undefined when it is not a valid phone number. Without a region the number must
 * carry its country code (`+…`), as our own numbers do.
 */
export function normalisePhone(input: string, region?: Region): string | undefined {
  const trimmed = input.trim();
  if (!trimmed || trimmed.length > 40) return undefined;
  const defaultCountry = region && DEFAULT_COUNTRY[region];
  const northAmericanNumber = northAmerican(trimmed, defaultCountry);
  if (northAmericanNumber !== undefined) return northAmericanNumber ?? undefined;
  const parsed = parsePhoneNumberFromString(trimmed, defaultCountry);
  return parsed?.isValid() ? parsed.number : undefined;
}

// What libphonenumber-js's Metadata offers at run time beyond its published types (the same calls its own
// parse and isValid make).
interface NumberingPlanPatterns {
  leadingDigits(): string | undefined;
  nationalNumberPattern(): string;
  hasTypes(): boolean;
  type(type: string): { pattern(): string; possibleLengths(): number[] | undefined } | undefined;
}

/** A +1 country with its patterns compiled once. */
interface NorthAmericanCountry {
  code: CountryCode;
  /** The leading digits that claim a number for this country, valid or not (only some countries have them). */
  leadingDigits: RegExp | undefined;
  /** libphonenumber-js's getNumberType: the number is of one of the country's types. */
  typed: RegExp;
  /** libphonenumber-js's isValid: typed, or for a country without types, its general pattern. */
  valid: RegExp;
}

// libphonenumber-js's number types (getNumberType); matching any one gives a number a type.
const NUMBER_TYPES = [
  'FIXED_LINE',
  'MOBILE',
  'PREMIUM_RATE',
  'TOLL_FREE',
  'SHARED_COST',
  'VOIP',
  'PERSONAL_NUMBER',
  'PAGER',
  'UAN',
  'VOICEMAIL',
];
const NATIONAL_NUMBER_LENGTH = 10;

/** The +1 countries in libphonenumber-js's order (the US, its main country, first). */
const NORTH_AMERICA: NorthAmericanCountry[] = (() => {
  const metadata = new Metadata() as Metadata & {
    getCountryCodesForCallingCode(code: string): CountryCode[] | undefined;
  };
  return (metadata.getCountryCodesForCallingCode('1') ?? []).map((code) => {
    metadata.selectNumberingPlan(code);
    const plan = metadata.numberingPlan as unknown as NumberingPlanPatterns;
    const general = `(?:${plan.nationalNumberPattern()})`;
    // A type counts when it has a pattern and allows the length (libphonenumber-js's isNumberTypeEqualTo).
    const types = NUMBER_TYPES.map((name) => plan.type(name))
      .filter((type) => type?.pattern())
      .filter((type) => type!.possibleLengths()?.includes(NATIONAL_NUMBER_LENGTH) ?? true)
      .map((type) => `(?:${type!.pattern()})`);
    const typed = types.length > 0 ? new RegExp(`^(?=${general}$)(?:${types.join('|')})$`) : /(?!)/;
    const leadingDigits = plan.leadingDigits();
    return {
      code,
      leadingDigits: leadingDigits ? new RegExp(`^(?:${leadingDigits})`) : undefined,
      typed,
      valid: plan.hasTypes() ? typed : new RegExp(`^${general}$`),
    };
  });
})();

// Ten digits (the first 2-9, so there is no national prefix `1` to strip), after `+1` or alone, with the
// separators people write. Any other shape (letters, extensions, tabs, a leading 1 without `+`) goes to the
// library.
const INTERNATIONAL = /^\+1[ ().-]*([2-9]\d{2})[ ().-]*(\d{3})[ .-]*(\d{4})$/;
const NATIONAL = /^\(?([2-9]\d{2})[ ().-]*(\d{3})[ .-]*(\d{4})$/;

/**
 * For a North American number in a shape the fast path reads: its E.164 form, or null when it is not valid.
 * Undefined when the shape is not one it reads, and libphonenumber-js must answer. `defaultCountry` is the
 * country a number without `+1` is read in.
 */
function northAmerican(input: string, defaultCountry: CountryCode | undefined): string | null | undefined {
  const international = INTERNATIONAL.exec(input);
  const match = international ?? (defaultCountry ? NATIONAL.exec(input) : null);
  if (!match) return undefined;
  const national = `${match[1]}${match[2]}${match[3]}`;
  // As libphonenumber-js: the first country whose leading digits match claims the number, valid or not; a
  // country without leading digits claims it when the number has one of its types there.
  for (const country of NORTH_AMERICA) {
    const claims = country.leadingDigits
      ? country.leadingDigits.test(national)
      : country.typed.test(national);
    if (claims) return country.valid.test(national) ? `+1${national}` : null;
  }
  // Claimed by none, it is judged in the country it was read in: +1's main one (the US) for `+1…`, else the
  // default one.
  const readIn = international ? 'US' : defaultCountry;
  const fallback = NORTH_AMERICA.find((country) => country.code === readIn);
  return fallback?.valid.test(national) ? `+1${national}` : null;
}
