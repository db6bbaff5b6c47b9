// Contact import: a CSV file (streamed, never held whole as objects) or a JSON `contacts` array. Columns are
// recognised by the names real exports use (Google Contacts, Outlook, spreadsheets), each row is validated,
// valid rows are upserted in batches inside one transaction (all valid rows or none), and rejected rows are
// reported, the first 20 with their row number and reason. An import never clears an opt-out: opt-outs live
// in their own table, which an import does not touch.
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { Region } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';
import { normalisePhone } from '../../platform/phone.ts';
import { ContactsImported } from './events.ts';
import { CONSENT_METHODS, type CustomFields } from './service.ts';

export const MAX_REPORTED_ERRORS = 20;
const BATCH_SIZE = 1000;

export interface ImportResult {
  imported: number;
  updated: number;
  rejected: number;
  errors: { row: number; reason: string }[];
}

type Field =
  | 'phone'
  | 'firstName'
  | 'lastName'
  | 'fullName'
  | 'email'
  | 'company'
  | 'consent'
  | 'consentDate'
  | 'consentMethod';

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

interface ValidRow {
  phone: string;
  firstName: string | null;
  lastName: string | null;
  email: string | null;
  company: string | null;
  customFields: CustomFields;
  consentStatus: 'granted' | 'denied' | null;
  consentDate: Date | null;
  consentMethod: string | null;
}

type RowOutcome = { ok: true; row: ValidRow } | { ok: false; reason: string; blankPhone: boolean };

export class ContactImporter {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly events: EventOutbox;

  constructor(deps: { db: Database; clock: Clock; events: EventOutbox }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.events = deps.events;
  }

  /** Imports a CSV stream. */
  importCsv(organizationId: string, region: Region, stream: Readable, actor: string): Promise<ImportResult> {
    return this.run(organizationId, region, actor, csvRows(stream));
  }

  /** Imports a JSON array of objects; keys are recognised like CSV headers. */
  importJson(organizationId: string, region: Region, contacts: Record<string, unknown>[], actor: string) {
    const headers = [...new Set(contacts.flatMap((contact) => Object.keys(contact)))];
    async function* rows() {
      yield headers;
      for (const contact of contacts)
        yield headers.map((h) => (contact[h] == null ? '' : String(contact[h])));
    }
    return this.run(organizationId, region, actor, rows(), 1);
  }

  /**
   * Reads header then rows from `source`, validating and upserting in batches in one transaction.
   * `firstRowNumber` is how rows are numbered for the report: 2 for CSV (the header is row 1, as a
   * spreadsheet shows it), 1 for a JSON array (its position).
   */
  private async run(
    organizationId: string,
    region: Region,
    actor: string,
    source: AsyncIterable<string[]>,
    firstRowNumber = 2,
  ): Promise<ImportResult> {
    const result: ImportResult = { imported: 0, updated: 0, rejected: 0, errors: [] };
    let dataRows = 0;
    let blankPhones = 0;
    const now = this.clock.now();

    await this.db.transaction(async (tx) => {
      let columns: ColumnMap | undefined;
      let batch = new Map<string, ValidRow>();
      let rowNumber = firstRowNumber - 1;
      for await (const cells of source) {
        if (!columns) {
          columns = mapColumns(cells);
          continue;
        }
        rowNumber++;
        if (cells.every((cell) => cell.trim() === '')) continue;
        dataRows++;
        const outcome = validateRow(cells, columns, region, now);
        if (outcome.ok) {
          // A phone twice in one batch: the later row wins (an upsert cannot touch one row twice).
          batch.delete(outcome.row.phone);
          batch.set(outcome.row.phone, outcome.row);
          if (batch.size >= BATCH_SIZE) {
            await this.upsert(tx, organizationId, [...batch.values()], result, now, actor);
            batch = new Map();
          }
        } else {
          if (outcome.blankPhone) blankPhones++;
          result.rejected++;
          if (result.errors.length < MAX_REPORTED_ERRORS)
            result.errors.push({ row: rowNumber, reason: outcome.reason });
        }
      }
      if (batch.size > 0) await this.upsert(tx, organizationId, [...batch.values()], result, now, actor);

      if (dataRows === 0 || blankPhones === dataRows) {
        throw new ApiError(
          400,
          'The file has no contacts: it is empty, has only a header, or every phone is blank',
          {
            code: 'CONTACTS_IMPORT_EMPTY_FILE',
          },
        );
      }
      if (result.imported + result.updated === 0) {
        throw new ApiError(
          400,
          `No valid rows: all ${result.rejected} rows were rejected; nothing was imported`,
          {
            code: 'CONTACTS_IMPORT_NO_VALID_ROWS',
            data: { errors: result.errors },
          },
        );
      }
      await this.events.record(tx, ContactsImported, {
        organizationId,
        data: { imported: result.imported, updated: result.updated, rejected: result.rejected },
      });
    });
    return result;
  }

  /** Inserts new phones and updates existing ones; empty cells never blank out what a contact already has. */
  private async upsert(
    tx: Queryable,
    organizationId: string,
    rows: ValidRow[],
    result: ImportResult,
    now: Date,
    actor: string,
  ) {
    const column = <T>(pick: (row: ValidRow) => T) => rows.map(pick);
    const inserted = await tx.query<{ id: string; phone: string; inserted: boolean }>(
      `INSERT INTO contacts (id, organization_id, phone, first_name, last_name, email, company, custom_fields,
                             consent_status, consent_date, consent_method, created_at, updated_at)
       SELECT id, $2, phone, first_name, last_name, email, company, custom_fields::jsonb,
              COALESCE(consent_status, 'unknown'), consent_date, consent_method, $3, $3
         FROM unnest($1::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                     $10::text[], $11::timestamptz[], $12::text[])
              AS t(id, phone, first_name, last_name, email, company, custom_fields, consent_status, consent_date,
                   consent_method)
       ON CONFLICT (organization_id, phone) DO UPDATE SET
         first_name = COALESCE(EXCLUDED.first_name, contacts.first_name),
         last_name = COALESCE(EXCLUDED.last_name, contacts.last_name),
         email = COALESCE(EXCLUDED.email, contacts.email),
         company = COALESCE(EXCLUDED.company, contacts.company),
         custom_fields = contacts.custom_fields || EXCLUDED.custom_fields,
         consent_status = CASE WHEN EXCLUDED.consent_date IS NOT NULL OR EXCLUDED.consent_status <> 'unknown'
                               THEN EXCLUDED.consent_status ELSE contacts.consent_status END,
         consent_date = COALESCE(EXCLUDED.consent_date, contacts.consent_date),
         consent_method = COALESCE(EXCLUDED.consent_method, contacts.consent_method),
         updated_at = EXCLUDED.updated_at
       RETURNING id, phone, (xmax = 0) AS inserted`,
      [
        rows.map(() => newId('ct', now.getTime())),
        organizationId,
        now,
        column((r) => r.phone),
        column((r) => r.firstName),
        column((r) => r.lastName),
        column((r) => r.email),
        column((r) => r.company),
        column((r) => JSON.stringify(r.customFields)),
        column((r) => r.consentStatus),
        column((r) => r.consentDate),
        column((r) => r.consentMethod),
      ],
    );
    for (const row of inserted) {
      if (row.inserted) result.imported++;
      else result.updated++;
    }
    // Consent given in the file is a consent change: it goes into the consent history like any other.
    const withConsent = rows.filter((r) => r.consentStatus || r.consentDate || r.consentMethod);
    if (withConsent.length > 0) {
      const contactIds = new Map(inserted.map((row) => [row.phone, row.id]));
      await tx.query(
        `INSERT INTO consent_events (id, organization_id, phone, contact_id, action, method, reason, actor, created_at)
         SELECT id, $2, phone, contact_id, 'consent_recorded', method, $3, $4, $5
           FROM unnest($1::text[], $6::text[], $7::text[], $8::text[]) AS t(id, phone, contact_id, method)`,
        [
          withConsent.map(() => newId('cev', now.getTime())),
          organizationId,
          'contact import',
          actor,
          now,
          withConsent.map((r) => r.phone),
          withConsent.map((r) => contactIds.get(r.phone) ?? null),
          withConsent.map((r) => r.consentMethod ?? 'import'),
        ],
      );
    }
  }
}

function validateRow(cells: string[], columns: ColumnMap, region: Region, now: Date): RowOutcome {
  const cell = (index: number | undefined) => (index === undefined ? '' : (cells[index] ?? '').trim());
  if (columns.phones.length === 0) {
    return {
      ok: false,
      blankPhone: false,
      reason: 'no recognised phone column (expected a header such as phone, phone_number, mobile or cell)',
    };
  }
  // Google Contacts puts several numbers in one cell as "a ::: b"; the first is the primary one.
  const rawPhone = columns.phones
    .map((index) => cell(index).split(':::')[0]!.trim())
    .find((value) => value !== '');
  if (!rawPhone) return { ok: false, blankPhone: true, reason: 'phone is blank' };
  const phone = normalisePhone(rawPhone, region);
  if (!phone)
    return { ok: false, blankPhone: false, reason: `invalid phone number "${rawPhone.slice(0, 40)}"` };

  let consentStatus: ValidRow['consentStatus'] = null;
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
  return {
    ok: true,
    row: {
      phone,
      firstName,
      lastName,
      email: cell(columns.fields.email) || null,
      company: cell(columns.fields.company) || null,
      customFields,
      consentStatus,
      consentDate,
      consentMethod,
    },
  };
}

/**
 * Parses CSV from a stream, record by record. The delimiter (comma, semicolon or tab) is sniffed from the
 * header line; a BOM and CRLF line ends are handled; quoted fields may hold delimiters and newlines.
 */
async function* csvRows(stream: Readable): AsyncGenerator<string[]> {
  const iterator = stream[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let headText = '';
  // Read until the first line is complete (or the stream ends) to choose the delimiter.
  while (!headText.includes('\n')) {
    const next = await iterator.next();
    if (next.done) break;
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    head.push(chunk);
    headText += chunk.toString('utf8');
    if (headText.length > 1_000_000) break;
  }
  const delimiter = sniffDelimiter(headText.split('\n')[0] ?? '');
  const parser = parse({
    bom: true,
    delimiter,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
    max_record_size: 1_000_000,
  });
  const feed = (async () => {
    try {
      for (const chunk of head)
        if (!parser.write(chunk)) await new Promise((resolve) => parser.once('drain', resolve));
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
        if (!parser.write(next.value)) await new Promise((resolve) => parser.once('drain', resolve));
      }
      parser.end();
    } catch (error) {
      parser.destroy(error as Error);
    }
  })();
  try {
    for await (const record of parser) yield record as string[];
  } catch (error) {
    throw ApiError.badRequest(`The CSV could not be read: ${(error as Error).message}`);
  }
  await feed;
}

function sniffDelimiter(headerLine: string): string {
  const counts = { ',': 0, ';': 0, '\t': 0 };
  let quoted = false;
  for (const char of headerLine) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && char in counts) counts[char as keyof typeof counts]++;
  }
  const [best] = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  return best![1] > 0 ? best![0] : ',';
}
