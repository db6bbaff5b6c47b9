// Contact import: a CSV file (streamed, never held whole as objects) or a JSON `contacts` array. Columns are
// recognised by the names real exports use (import-rows.ts), each row is validated, valid rows are upserted in
// batches inside one transaction (all valid rows or none), and rejected rows are reported, the first 20 with
// their row number and reason. An import never clears an opt-out: opt-outs live in their own table, which an
// import does not touch.
import type { Readable } from 'node:stream';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { Region } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';
import { csvRows } from './csv.ts';
import { ContactsImported } from './events.ts';
import { type ColumnMap, mapColumns, validateRow } from './import-rows.ts';
import type { ImportResult } from './schemas.ts';
import { ContactStore, type ImportedContact } from './store.ts';

export const MAX_REPORTED_ERRORS = 20;
const BATCH_SIZE = 1000;

export class ContactImporter {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly store = new ContactStore();

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
      let batch = new Map<string, ImportedContact>();
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
    rows: ImportedContact[],
    result: ImportResult,
    now: Date,
    actor: string,
  ) {
    const ids = rows.map(() => newId('ct', now.getTime()));
    const upserted = await this.store.upsertImported(tx, organizationId, rows, ids, now);
    for (const row of upserted) {
      if (row.inserted) result.imported++;
      else result.updated++;
    }
    // Consent given in the file is a consent change: it goes into the consent history like any other.
    const withConsent = rows.filter((row) => row.consentStatus || row.consentDate || row.consentMethod);
    if (withConsent.length > 0) {
      const contactIds = new Map(upserted.map((row) => [row.phone, row.id]));
      await this.store.insertImportedConsent(
        tx,
        organizationId,
        withConsent.map((row) => ({
          id: newId('cev', now.getTime()),
          phone: row.phone,
          contactId: contactIds.get(row.phone) ?? null,
          method: row.consentMethod ?? 'import',
        })),
        'contact import',
        actor,
        now,
      );
    }
  }
}
