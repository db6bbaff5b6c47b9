// Contact import: a CSV file (streamed, never held whole as objects) or a JSON `contacts` array. Columns are
// recognised by the names real exports use (import-rows.ts), each row is validated with the contact rules,
// and rejected rows are reported, the first 20 with their row number and reason. An import never clears an
// opt-out: opt-outs live in their own table, which an import does not touch.
//
// An import runs in two passes, each in short batches with a yield between them, so that a million-row file
// never holds the database for long: on embedded PGlite, its one connection serves every tenant, and a single
// transaction around the import stopped every other request (health checks included) for a minute.
//   1. Stage: the whole file is read and validated into contact_import_rows. A file that cannot be read, is
//      over the size limit, or has no valid row is refused here, and no contact has changed. The next batch
//      is validated while the last one is written (the database works in its own process, or PGlite's thread).
//   2. Apply: staged rows are upserted into contacts in file order, one statement per batch that never
//      brings the rows back through Node (import-store.ts); on PostgreSQL two batches at a time.
// A failure of ours during the second pass leaves the batches applied so far (each upsert is idempotent, so
// importing the file again completes it) and discards the rest of the staged rows.
//
// Batches are larger on PostgreSQL: there a batch holds one connection of a pool and locks only this
// organization's rows, so its length delays no other tenant, and 5,000-row statements applied a few per cent
// faster than 1,000-row ones. On PGlite a batch holds the one connection, so it stays short enough that
// /health answers well within a second (docs/performance.md). Throughput, and what bounds it, is measured in
// docs/contacts.md.
import type { Readable } from 'node:stream';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { Region } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';
import { csvRecords } from './csv.ts';
import { ContactsImported } from './events.ts';
import { type ColumnMap, mapColumns, validateRow } from './import-rows.ts';
import { ContactImportStore, type StagedRow, stagedRow } from './import-store.ts';
import type { ImportResult } from './schemas.ts';

export const MAX_REPORTED_ERRORS = 20;
/** Rows per staging and apply statement, by engine (see the header for why they differ). */
const BATCH_ROWS: Record<Database['engine'], number> = { pglite: 1_000, postgres: 5_000 };
/**
 * Apply statements in flight at once. PostgreSQL runs each on its own connection and core: two took a
 * 100,000-row apply from 4.1 s to 2.3 s on two cores (three were slower). PGlite has one connection.
 */
const APPLY_STREAMS: Record<Database['engine'], number> = { pglite: 1, postgres: 2 };

/**
 * No nested-loop joins in an apply batch's transaction: its statement joins the rows it took off staging
 * with the contacts it upserted, and the planner estimates both from statistics of a staging table that is
 * often empty when analysed; from an estimate of one row it chose a nested loop, which made a 100,000-row
 * import take 45 s instead of 4 s on PostgreSQL.
 */
const APPLY_SETTINGS = "SELECT set_config('enable_nestloop', 'off', true)";

/**
 * Imports running on each database, and rows staged since its staging table was last emptied, so that on
 * PGlite the last import to end can empty it (`releaseStaging`). PGlite is this process's alone, so this count
 * sees every import that can stage a row.
 */
const stagingUse = new WeakMap<Database, { running: number; stagedSinceRelease: number }>();
/**
 * Rows staged before emptying the staging table is worth it: each TRUNCATE leaves dead catalog rows of its
 * own (PGlite never vacuums those either), so a few small imports leave their few dead rows instead.
 */
const RELEASE_STAGING_AFTER_ROWS = 10_000;

export class ContactImporter {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly staging = new ContactImportStore();
  private readonly batchRows: number;

  constructor(deps: { db: Database; clock: Clock; events: EventOutbox }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.events = deps.events;
    this.batchRows = BATCH_ROWS[deps.db.engine];
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
    return this.run(organizationId, region, actor, csvRecords(stream), 2, options.truncated === true);
  }

  /** Imports a JSON array of objects; keys are recognised like CSV headers. */
  importJson(organizationId: string, region: Region, contacts: Record<string, unknown>[], actor: string) {
    const headers = [...new Set(contacts.flatMap((contact) => Object.keys(contact)))];
    async function* records() {
      yield [
        headers,
        ...contacts.map((contact) => headers.map((h) => (contact[h] == null ? '' : String(contact[h])))),
      ];
    }
    return this.run(organizationId, region, actor, records(), 1);
  }

  /**
   * Reads the header then the rows from `source` (records in arrays), stages the valid ones, then applies
   * them. `firstRowNumber` is how rows are numbered for the report: 2 for CSV (the header is row 1, as a
   * spreadsheet shows it), 1 for a JSON array (its position).
   */
  private async run(
    organizationId: string,
    region: Region,
    actor: string,
    source: AsyncIterable<string[][]>,
    firstRowNumber = 2,
    truncated = false,
  ): Promise<ImportResult> {
    const result: ImportResult = { imported: 0, updated: 0, rejected: 0, errors: [] };
    const now = this.clock.now();
    const importId = newId('imp', now.getTime());
    const staged: PositionSpan = { from: Number.POSITIVE_INFINITY, to: 0 };
    let applied = false;
    const use = stagingUse.get(this.db) ?? { running: 0, stagedSinceRelease: 0 };
    stagingUse.set(this.db, use);
    use.running++;
    try {
      if (truncated) throw new ApiError(413, 'The CSV is larger than the 50 MB import limit');
      await this.stage(importId, source, firstRowNumber, region, now, result, staged);
      if (staged.to === 0) throw result.rejected === 0 ? emptyFile() : noValidRows(result);
      await this.apply(importId, staged, organizationId, result, now, actor);
      applied = true;
      await this.db.transaction((tx) =>
        this.events.record(tx, ContactsImported, {
          organizationId,
          data: { imported: result.imported, updated: result.updated, rejected: result.rejected },
        }),
      );
      return result;
    } finally {
      // Nothing staged outlives its import: a full apply took every staged row off; after a refusal or a
      // failure, what is left goes by ranges of positions, as the apply takes it. (A statement that looks
      // for this import's rows by its id alone walks the index entries of every row already taken off:
      // after a million rows on PGlite, which never vacuums, that one statement held the database for 1 s.)
      try {
        if (!applied) {
          for (let from = staged.from; from <= staged.to; from += this.batchRows) {
            await this.staging.discard(this.db, importId, { from, to: from + this.batchRows - 1 });
            await yieldToOtherWork();
          }
        }
      } finally {
        use.running--;
        // The span of positions staged: at least the rows staged, which is near enough for a threshold.
        if (staged.to > 0) use.stagedSinceRelease += staged.to - staged.from + 1;
      }
      // Housekeeping: a failure here must not turn the import's answer into an error; the next import's end
      // tries again.
      await this.releaseStaging(use).catch(() => {});
    }
  }

  /**
   * On PGlite, empties the staging table once no import is running. PGlite never vacuums (it has no
   * autovacuum), so the rows an import took off staging stayed in its files as dead tuples, and every import
   * added its whole file's worth: with `memory://` that was memory (half a gigabyte per million rows, a
   * quarter since staged rows are smaller), never given back (issue 31, finding 10). TRUNCATE gives the files
   * back at once. Checked inside the transaction, which holds PGlite's one connection, so an import that
   * starts meanwhile stages its rows after it. On PostgreSQL, autovacuum makes the space reusable, and other
   * instances may be staging.
   */
  private async releaseStaging(use: { running: number; stagedSinceRelease: number }): Promise<void> {
    if (this.db.engine !== 'pglite' || use.stagedSinceRelease < RELEASE_STAGING_AFTER_ROWS) return;
    await this.db.transaction(async (tx) => {
      if (use.running > 0) return;
      await this.staging.truncate(tx);
      use.stagedSinceRelease = 0;
    });
  }

  /**
   * Pass 1: validates every row and stages the valid ones, widening `staged` to the positions of each batch
   * it writes (so that, should it fail midway, what it wrote can be found).
   */
  private async stage(
    importId: string,
    source: AsyncIterable<string[][]>,
    firstRowNumber: number,
    region: Region,
    now: Date,
    result: ImportResult,
    staged: PositionSpan,
  ): Promise<void> {
    let columns: ColumnMap | undefined;
    let batch = new Map<string, StagedRow>();
    let rowNumber = firstRowNumber - 1;
    let firstInBatch = 0;
    let blankPhones = 0;
    // The batch being written while the next is validated; one at a time, so batches land in file order.
    let writing: Promise<void> = Promise.resolve();
    const flush = async () => {
      if (batch.size === 0) return;
      const rows = [...batch.values()];
      batch = new Map();
      await writing;
      staged.from = Math.min(staged.from, firstInBatch);
      staged.to = rowNumber;
      writing = this.staging.stage(this.db, importId, rows, now);
      writing.catch(() => {}); // awaited before the next batch is written, or at the end
      await yieldToOtherWork();
    };
    try {
      for await (const records of source) {
        for (const cells of records) {
          if (!columns) {
            columns = mapColumns(cells);
            continue;
          }
          rowNumber++;
          if (isBlank(cells)) continue;
          const outcome = validateRow(cells, columns, region, now);
          if (!outcome.ok) {
            if (outcome.blankPhone) blankPhones++;
            recordRejection(result, rowNumber, outcome.reason);
            continue;
          }
          if (batch.size === 0) firstInBatch = rowNumber;
          const { row } = outcome;
          const givesConsent =
            row.consentStatus !== null || row.consentDate !== null || row.consentMethod !== null;
          // A phone twice in one batch: the later row wins (one statement cannot touch one row twice).
          batch.delete(row.phone);
          batch.set(
            row.phone,
            stagedRow(
              row,
              rowNumber,
              newId('ct', now.getTime()),
              givesConsent ? newId('cev', now.getTime()) : null,
            ),
          );
          if (batch.size >= this.batchRows) await flush();
        }
      }
      await flush();
      await writing;
    } finally {
      // A refused file's staged rows are discarded next: the last write must have landed first.
      await writing.catch(() => {});
    }
    // Only blank phones (or no rows at all) is an empty file, not a file of invalid rows.
    if (staged.to === 0 && blankPhones === result.rejected) {
      result.rejected = 0;
      result.errors = [];
    }
  }

  /**
   * Pass 2: applies the staged rows a range of positions per statement, in file order; on PostgreSQL, as many
   * ranges at once as APPLY_STREAMS says. Staging left one row per phone, so no two ranges touch the same
   * contact and the order in which they land changes nothing.
   */
  private async apply(
    importId: string,
    staged: PositionSpan,
    organizationId: string,
    result: ImportResult,
    now: Date,
    actor: string,
  ) {
    let next = staged.from;
    let failed = false;
    const applyRanges = async () => {
      while (next <= staged.to && !failed) {
        const range = { from: next, to: Math.min(next + this.batchRows - 1, staged.to) };
        next = range.to + 1;
        try {
          const applied = await this.db.transaction(async (tx) => {
            await tx.query(APPLY_SETTINGS);
            return this.staging.apply(tx, importId, range, organizationId, actor, now);
          });
          result.imported += applied.imported;
          result.updated += applied.updated;
        } catch (error) {
          failed = true; // the other streams stop after their current batch
          throw error;
        }
        await yieldToOtherWork();
      }
    };
    const streams = await Promise.allSettled(
      Array.from({ length: APPLY_STREAMS[this.db.engine] }, applyRanges),
    );
    const failure = streams.find((stream) => stream.status === 'rejected');
    if (failure) throw failure.reason;
  }
}

/** The file positions (row numbers) that staged rows lie within; `to` is 0 while nothing is staged. */
interface PositionSpan {
  from: number;
  to: number;
}

function isBlank(cells: string[]): boolean {
  for (const cell of cells) if (cell.trim() !== '') return false;
  return true;
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
