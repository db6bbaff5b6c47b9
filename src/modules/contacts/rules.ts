// The rules a contact's fields obey, wherever the contact comes from: created or changed through the API or
// the portal, or imported from a CSV file or a JSON array. One set of rules, read from the same schema the API
// validates with (ContactProfile), so an import can never store what a PATCH would refuse.
import { Compile } from 'typebox/compile';
import { findUnstorableText } from '../../platform/text.ts';
import { canonicalTimeZone } from '../../platform/time-zones.ts';
import { ContactProfile, type CustomFields, MAX_CUSTOM_FIELD_NAME } from './schemas.ts';

const profile = Compile(ContactProfile);

export interface ContactProfileInput {
  firstName?: string | null;
  lastName?: string | null;
  email?: string | null;
  company?: string | null;
  customFields?: CustomFields;
  timezone?: string | null;
}

/** Why these fields cannot be stored (e.g. `firstName must not have more than 200 characters`), or undefined. */
export function contactProfileProblem(fields: ContactProfileInput): string | undefined {
  const defined = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  if (!profile.Check(defined)) {
    const [first] = profile.Errors(defined);
    const field = first?.instancePath.slice(1).replaceAll('/', '.') || 'contact';
    return `${field} ${first?.message ?? 'is not valid'}`;
  }
  for (const name of Object.keys(fields.customFields ?? {})) {
    if (name.length > MAX_CUSTOM_FIELD_NAME) {
      return `customFields names must not have more than ${MAX_CUSTOM_FIELD_NAME} characters`;
    }
  }
  const where = findUnstorableText(defined, 'contact');
  if (where) return `${where} contains NUL characters or invalid Unicode`;
  // After the text check, so the name quoted back is storable text.
  if (typeof fields.timezone === 'string' && canonicalTimeZone(fields.timezone) === undefined) {
    return `timezone "${fields.timezone.slice(0, 40)}" is not an IANA time zone name (such as America/New_York)`;
  }
  return undefined;
}

/**
 * A contact's time zone as stored: the canonical spelling of a valid name (see canonicalTimeZone); null and
 * undefined pass through (null clears it, undefined leaves it). Call after contactProfileProblem.
 */
export function storedTimeZone<T extends null | undefined>(timezone: string | T): string | T {
  return typeof timezone === 'string' ? (canonicalTimeZone(timezone) ?? timezone) : timezone;
}
