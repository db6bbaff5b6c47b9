// The simulated carrier's number inventory: deterministic, so a search gives the same numbers on every machine
// and a test can buy what it found. A NANP number is in stock when a hash of it says so (about two in three),
// whatever anyone searched before: stock is a property of the number, as it is at a real carrier between two
// searches. Searches walk an area code's exchanges and lines in a fixed shuffled order and yield the numbers in
// stock. Whether a number is US or Canadian, local or toll-free comes from libphonenumber's metadata.
import { createHash } from 'node:crypto';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { ApiError } from '../platform/errors.ts';
import type { AvailableNumber, NumberCountry, NumberSearch } from './carrier.ts';

/** The toll-free area codes of the NANP. */
export const TOLL_FREE_AREA_CODES = ['800', '833', '844', '855', '866', '877', '888'] as const;

/** Where a search without an area code looks. */
const USUAL_AREA_CODES: Record<NumberCountry, string[]> = {
  US: ['415', '212', '312', '512', '617', '202', '206', '305', '702', '404'],
  CA: ['416', '514', '604', '613', '403', '780'],
};

/** How many candidate numbers one search looks at before it stops (a `contains` that matches nothing). */
const MAX_CANDIDATES = 200_000;

/** Whether the carrier has `number` (E.164) in stock. */
export function inStock(number: string): boolean {
  return createHash('sha256').update(`inventory:${number}`).digest()[0]! % 3 !== 0;
}

/** What a NANP number is, or undefined when it is not one the carrier sells (invalid, or not US/CA). */
export function classify(number: string): AvailableNumber | undefined {
  const match = /^\+1([2-9]\d{2})([2-9]\d{2})(\d{4})$/.exec(number);
  if (!match) return undefined;
  const areaCode = match[1]!;
  const exchange = match[2]!;
  if (exchange.endsWith('11') || exchange === '555') return undefined;
  if ((TOLL_FREE_AREA_CODES as readonly string[]).includes(areaCode)) {
    return { number, type: 'toll_free', country: 'US', areaCode };
  }
  const country = areaCountry(areaCode);
  if (!country) return undefined;
  return { number, type: country === 'CA' ? 'ca_local' : 'local', country, areaCode };
}

// libphonenumber builds its patterns anew on every parse; there are a few hundred area codes, so each is asked once.
const areaCountries = new Map<string, NumberCountry | undefined>();

function areaCountry(areaCode: string): NumberCountry | undefined {
  if (!areaCountries.has(areaCode)) {
    const parsed = parsePhoneNumberFromString(`+1${areaCode}2345678`);
    const country = parsed?.isValid() ? parsed.country : undefined;
    areaCountries.set(areaCode, country === 'US' || country === 'CA' ? country : undefined);
  }
  return areaCountries.get(areaCode);
}

/** The area codes a search covers, after checking the one asked for belongs to its country and type. */
function areaCodesOf(search: NumberSearch): string[] {
  if (search.type === 'toll_free') {
    if (search.country !== 'US') {
      throw ApiError.badRequest(
        'type toll_free: toll-free numbers are sold with country US (they serve all of NANP)',
      );
    }
    if (search.areaCode === undefined) return [...TOLL_FREE_AREA_CODES];
    if (!(TOLL_FREE_AREA_CODES as readonly string[]).includes(search.areaCode)) {
      throw ApiError.badRequest(
        `areaCode ${search.areaCode} is not a toll-free area code (${TOLL_FREE_AREA_CODES.join(', ')})`,
      );
    }
    return [search.areaCode];
  }
  if (search.areaCode === undefined) return USUAL_AREA_CODES[search.country];
  const country = areaCountry(search.areaCode);
  if (country !== search.country || (TOLL_FREE_AREA_CODES as readonly string[]).includes(search.areaCode)) {
    throw ApiError.badRequest(
      `areaCode ${search.areaCode} is not a local area code of ${search.country === 'US' ? 'the US' : 'Canada'}`,
    );
  }
  return [search.areaCode];
}

/** The numbers in stock that match `search`, area code by area code, in a fixed shuffled order. */
export function* searchInventory(search: NumberSearch): Generator<AvailableNumber> {
  const areaCodes = areaCodesOf(search);
  let looked = 0;
  // 7919 and 337 are prime to 10,000 and 800: each walk visits every line and every exchange once.
  for (let step = 0; step < 800 && looked < MAX_CANDIDATES; step++) {
    const exchange = String(200 + ((step * 337) % 800));
    for (const areaCode of areaCodes) {
      for (let k = 0; k < 100 && looked < MAX_CANDIDATES; k++) {
        const line = String(((step * 100 + k) * 7919) % 10_000).padStart(4, '0');
        looked++;
        const number = `+1${areaCode}${exchange}${line}`;
        if (search.contains && !`${areaCode}${exchange}${line}`.includes(search.contains)) continue;
        const found = classify(number);
        if (found && inStock(number)) yield found;
      }
    }
  }
}
