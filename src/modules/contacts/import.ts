// Contact import: a CSV file (streamed, never held whole as objects) or a JSON `contacts` array. Columns are
// recognised by the names real exports use (import-rows.ts), each row is validated with the contact rules,
// and rejected rows are reported, the first 20 with their row number and reason. An import never clears an
// opt-out: opt-outs live in their own table, which an import does not touch.
//
// An import runs in two passes, each in short batches with a yield between them, so that a million-row file
// never holds the database for long: on embedded PGlite, its one connection serves every tenant, and a single
// transaction around the import stopped every other request (health checks included) for a minute.
//   1. Stage: the whole file is read and validated into contact_import_rows. A file that cannot be read, is
//      over the size limit, or has no valid row is refused here, and no contact has changed.
//   2. Apply: staged rows are upserted into contacts a batch per transaction, in file order.
// A failure of ours during the second pass leaves the batches applied so far (each upsert is idempotent, so
// importing the file again completes it) and discards the rest of the staged rows.
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
import { ContactImportStore, type StagedRow } from './import-store.ts';
import type { ImportResult } from './schemas.ts';
import { ContactStore, type ImportedContact } from './store.ts';

export const MAX_REPORTED_ERRORS = 20;
const BATCH_SIZE = 1000;

export class ContactImporter {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly store = new ContactStore();
  private readonly staging = new ContactImportStore();

  constructor(deps: { db: Database; clock: Clock; events: EventOutbox }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.events = deps.events;
  }

  /** Retention: removes rows staged before `before` by an import that never finished; returns how many. */
  removeStaleStaging(before: Date): Promise<number> {
    return this.staging.deleteStale(this.db, before);
  }

  /**
   * Imports a CSV stream. A file that was cut at the upload limit (`truncated`) is refused with 413 before
   * any contact changes.
   */
  importCsv(
    organizationId: string,
    region: Region,
    stream: Readable,
    actor: string,
    options: { truncated?: boolean } = {},
  ): Promise<ImportResult> {
    return this.run(organizationId, region, actor, csvRows(stream), 2, options.truncated === true);
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
    truncated = false,
  ): Promise<ImportResult> {
    const result: ImportResult = { imported: 0, updated: 0, rejected: 0, errors: [] };
    const now = this.clock.now();
    const importId = newId('imp', now.getTime());
    try {
      if (truncated) throw new ApiError(413, 'The CSV is larger than the 50 MB import limit');
      const validRows = await this.stage(importId, source, firstRowNumber, region, now, result);
      if (validRows === 0) throw result.rejected === 0 ? emptyFile() : noValidRows(result);
      await this.apply(importId, organizationId, result, now, actor);
      await this.db.transaction((tx) =>
        this.events.record(tx, ContactsImported, {
          organizationId,
          data: { imported: result.imported, updated: result.updated, rejected: result.rejected },
        }),
      );
      return result;
    } finally {
      // Nothing staged outlives its import, whatever happened.
      await this.staging.discard(this.db, importId);
    }
  }

  /** Pass 1: validates every row and stages the valid ones. Returns how many rows were valid. */
  private async stage(
    importId: string,
    source: AsyncIterable<string[]>,
    firstRowNumber: number,
    region: Region,
    now: Date,
    result: ImportResult,
  ): Promise<number> {
    let columns: ColumnMap | undefined;
    let batch = new Map<string, StagedRow>();
    let rowNumber = firstRowNumber - 1;
    let validRows = 0;
    let blankPhones = 0;
    const flush = async () => {
      if (batch.size === 0) return;
      await this.staging.stage(this.db, importId, [...batch.values()], now);
      batch = new Map();
      await yieldToOtherWork();
    };
    for await (const cells of source) {
      if (!columns) {
        columns = mapColumns(cells);
        continue;
      }
      rowNumber++;
      if (cells.every((cell) => cell.trim() === '')) continue;
      const outcome = validateRow(cells, columns, region, now);
      if (outcome.ok) {
        validRows++;
        // A phone twice in one batch: the later row wins (one statement cannot touch one row twice).
        batch.delete(outcome.row.phone);
        batch.set(outcome.row.phone, { position: rowNumber, row: outcome.row });
        if (batch.size >= BATCH_SIZE) await flush();
      } else if (outcome.blankPhone) {
        blankPhones++;
        recordRejection(result, rowNumber, outcome.reason);
      } else {
        recordRejection(result, rowNumber, outcome.reason);
      }
    }
    await flush();
    // Only blank phones (or no rows at all) is an empty file, not a file of invalid rows.
    if (validRows === 0 && blankPhones === result.rejected) {
      result.rejected = 0;
      result.errors = [];
    }
    return validRows;
  }

  /** Pass 2: applies the staged rows in file order, a batch per transaction. */
  private async apply(
    importId: string,
    organizationId: string,
    result: ImportResult,
    now: Date,
    actor: string,
  ) {
    for (;;) {
      const applied = await this.db.transaction(async (tx) => {
        const rows = await this.staging.take(tx, importId, BATCH_SIZE);
        if (rows.length > 0) await this.upsert(tx, organizationId, rows, result, now, actor);
        return rows.length;
      });
      if (applied === 0) return;
      await yieldToOtherWork();
    }
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

function recordRejection(result: ImportResult, row: number, reason: string): void {
  result.rejected++;
  if (result.errors.length < MAX_REPORTED_ERRORS) result.errors.push({ row, reason });
}

function emptyFile(): ApiError {
  return new ApiError(
    400,
    'The file has no contacts: it is empty, has only a header, or every phone is blank',
    {
      code: 'CONTACTS_IMPORT_EMPTY_FILE',
    },
  );
}

function noValidRows(result: ImportResult): ApiError {
  return new ApiError(400, `No valid rows: all ${result.rejected} rows were rejected; nothing was imported`, {
    code: 'CONTACTS_IMPORT_NO_VALID_ROWS',
    data: { errors: result.errors },
  });
}

/** Lets requests that arrived during a batch run before the next one (and, on PGlite, take the connection). */
function yieldToOtherWork(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
