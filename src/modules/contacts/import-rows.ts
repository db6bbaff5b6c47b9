// Reading an import's rows: which column holds which field (by the header names real exports use: Google
// Contacts, Outlook, spreadsheets, in several languages), and whether a row is a valid contact. No SQL and no
// I/O: the importer feeds rows in and upserts what comes out.
import type { Region } from '../../platform/http/caller.ts';
import { normalisePhone } from '../../platform/phone.ts';
import { contactProfileProblem, storedTimeZone } from './rules.ts';
import { CONSENT_METHODS, type CustomFields } from './schemas.ts';
import type { ImportedContact } from './store.ts';

type Field =
  | 'phone'
  | 'firstName'
  | 'lastName'
  | 'fullName'
  | 'email'
  | 'company'
  | 'consent'
  | 'consentDate'
  | 'consentMethod'
  | 'timezone';

// Header names by field, normalised (lower case, letters and digits only). For phones, earlier names win:
// a mobile number is the one that can receive texts.
const HEADER_NAMES: Record<Field, string[]> = {
  // biome-ignore format: one line per field reads better than one line per name
  phone: [
    'mobilephone', 'mobile', 'mobilenumber', 'mobilephonenumber', 'cell', 'cellphone', 'cellnumber', 'cellular',
    'phone', 'phonenumber', 'phone1value', 'primaryphone', 'telephone', 'tel', 'msisdn', 'number', 'sms',
    'smsnumber', 'whatsapp', 'contactnumber', 'phone2value', 'businessphone', 'homephone', 'otherphone',
    // Exports from European spreadsheets (accents are folded before matching).
    'handy', 'mobil', 'movil', 'portable', 'cellulare', 'telefon', 'telefono', 'telephonenumber', 'numero',
  ],
  // biome-ignore format: as above
  firstName: ['firstname', 'first', 'givenname', 'fname', 'forename', 'vorname', 'prenom', 'nombre'],
  // biome-ignore format: as above
  lastName: ['lastname', 'last', 'surname', 'familyname', 'lname', 'nachname', 'nom', 'apellido', 'apellidos', 'cognome'],
  fullName: ['name', 'fullname', 'displayname', 'contactname'],
  email: ['email', 'emailaddress', 'email1value', 'mail', 'courriel', 'correo', 'correoelectronico'],
  // biome-ignore format: as above
  company: [
    'company', 'companyname', 'organization', 'organisation', 'organization1name', 'organizationname', 'business',
    'employer', 'firma', 'empresa', 'societe', 'entreprise', 'azienda',
  ],
  consent: ['consent', 'consentstatus', 'smsconsent', 'optin'],
  consentDate: ['consentdate', 'consentedat', 'optindate', 'consenttimestamp'],
  consentMethod: ['consentmethod', 'consentsource', 'optinmethod'],
  timezone: ['timezone', 'tz', 'ianatimezone', 'zeitzone', 'fuseauhoraire', 'zonahoraria', 'fusoorario'],
};

const CONSENT_VALUES: Record<string, 'granted' | 'denied'> = {
  yes: 'granted',
  y: 'granted',
  true: 'granted',
  '1': 'granted',
  granted: 'granted',
  opted_in: 'granted',
  optedin: 'granted',
  no: 'denied',
  n: 'denied',
  false: 'denied',
  '0': 'denied',
  denied: 'denied',
  opted_out: 'denied',
  optedout: 'denied',
};

function normaliseHeader(header: string): string {
  return header
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');
}

/** Which column holds which field, and which columns are custom fields. */
export interface ColumnMap {
  phones: number[];
  fields: Partial<Record<Exclude<Field, 'phone'>, number>>;
  custom: { index: number; name: string }[];
}

export function mapColumns(headers: string[]): ColumnMap {
  const normalised = headers.map(normaliseHeader);
  const used = new Set<number>();
  const phones: number[] = [];
  for (const name of HEADER_NAMES.phone) {
    normalised.forEach((header, index) => {
      if (header === name && !used.has(index)) {
        phones.push(index);
        used.add(index);
      }
    });
  }
  const fields: ColumnMap['fields'] = {};
  for (const field of Object.keys(HEADER_NAMES) as Field[]) {
    if (field === 'phone') continue;
    for (const name of HEADER_NAMES[field]) {
      const index = normalised.findIndex((header, i) => header === name && !used.has(i));
      if (index >= 0) {
        fields[field] = index;
        used.add(index);
        break;
      }
    }
  }
  const custom = headers
    .map((name, index) => ({ index, name: name.trim() }))
    .filter((column) => !used.has(column.index) && column.name !== '');
  return { phones, fields, custom };
}

export type RowOutcome =
  | { ok: true; row: ImportedContact }
  | { ok: false; reason: string; blankPhone: boolean };

/** A row as a contact to upsert, or why it is rejected. */
export function validateRow(cells: string[], columns: ColumnMap, region: Region, now: Date): RowOutcome {
  const cell = (index: number | undefined) => (index === undefined ? '' : (cells[index] ?? '').trim());
  if (columns.phones.length === 0) {
    return {
      ok: false,
      blankPhone: false,
      reason: 'no recognised phone column (expected a header such as phone, phone_number, mobile or cell)',
    };
  }
  let rawPhone = '';
  for (const index of columns.phones) {
    // Google Contacts puts several numbers in one cell as "a ::: b"; the first is the primary one.
    const value = cell(index);
    rawPhone = value.includes(':::') ? value.split(':::')[0]!.trim() : value;
    if (rawPhone) break;
  }
  if (!rawPhone) return { ok: false, blankPhone: true, reason: 'phone is blank' };
  const phone = normalisePhone(rawPhone, region);
  if (!phone)
    return { ok: false, blankPhone: false, reason: `invalid phone number "${rawPhone.slice(0, 40)}"` };

  let consentStatus: ImportedContact['consentStatus'] = null;
  const rawConsent = cell(columns.fields.consent);
  if (rawConsent) {
    consentStatus = CONSENT_VALUES[rawConsent.toLowerCase()] ?? null;
    if (!consentStatus)
      return {
        ok: false,
        blankPhone: false,
        reason: `invalid consent "${rawConsent.slice(0, 40)}" (use yes or no)`,
      };
  }
  let consentDate: Date | null = null;
  const rawDate = cell(columns.fields.consentDate);
  if (rawDate) {
    consentDate = new Date(rawDate);
    if (Number.isNaN(consentDate.getTime())) {
      return {
        ok: false,
        blankPhone: false,
        reason: `invalid consent_date "${rawDate.slice(0, 40)}" (use YYYY-MM-DD)`,
      };
    }
    if (consentDate.getTime() > now.getTime() + 86_400_000) {
      return { ok: false, blankPhone: false, reason: 'consent_date is in the future' };
    }
  }
  let consentMethod: string | null = null;
  const rawMethod = cell(columns.fields.consentMethod);
  if (rawMethod) {
    consentMethod = rawMethod.toLowerCase().replace(/[\s-]+/g, '_');
    if (!(CONSENT_METHODS as readonly string[]).includes(consentMethod)) {
      return {
        ok: false,
        blankPhone: false,
        reason: `invalid consent_method "${rawMethod.slice(0, 40)}" (one of ${CONSENT_METHODS.join(', ')})`,
      };
    }
  }

  let firstName = cell(columns.fields.firstName) || null;
  let lastName = cell(columns.fields.lastName) || null;
  const fullName = cell(columns.fields.fullName);
  if (!firstName && !lastName && fullName) {
    const space = fullName.lastIndexOf(' ');
    firstName = space > 0 ? fullName.slice(0, space) : fullName;
    lastName = space > 0 ? fullName.slice(space + 1) : null;
  }
  const customFields: CustomFields = {};
  for (const { index, name } of columns.custom) {
    const value = cell(index);
    if (value) customFields[name] = value;
  }
  const profile = {
    firstName,
    lastName,
    email: cell(columns.fields.email) || null,
    company: cell(columns.fields.company) || null,
    customFields,
    timezone: cell(columns.fields.timezone) || null,
  };
  // The same rules as creating or changing a contact through the API.
  const problem = contactProfileProblem(profile);
  if (problem) return { ok: false, blankPhone: false, reason: problem };
  const timezone = storedTimeZone(profile.timezone);
  return { ok: true, row: { phone, ...profile, timezone, consentStatus, consentDate, consentMethod } };
}
