// Re-sealing stored secrets with the newest ENCRYPTION_KEY, for key rotation: put a new key first in
// ENCRYPTION_KEY (keeping the old ones after it), restart, run `npm run reseal-secrets`, and once it reports
// nothing left on an old key, drop the old keys. Each value is opened with whichever key sealed it and sealed
// again with the newest, row by row, and written only if the row still holds what was read (a secret rotated
// meanwhile is left as its new value). Table and column names come from the modules' declarations, never
// from input.
import type { Database } from './db/index.ts';
import type { SealedColumns } from './module.ts';

export interface ResealBox {
  seal(plaintext: string, associatedData?: string): string;
  open(ciphertext: string, associatedData?: string): string;
  isStale(ciphertext: string): boolean;
}

export interface ResealReport {
  table: string;
  column: string;
  resealed: number;
  current: number;
}

const BATCH = 500;

export async function resealSecrets(
  db: Database,
  declarations: readonly SealedColumns[],
  boxFor: (purpose: string) => ResealBox,
): Promise<ResealReport[]> {
  const reports: ResealReport[] = [];
  for (const declaration of declarations) {
    const box = boxFor(declaration.purpose);
    const { table, key, associatedData } = declaration;
    for (const column of declaration.columns) {
      const report = { table, column, resealed: 0, current: 0 };
      let after = '';
      for (;;) {
        const rows = await db.query<{ key: string; bound: string; sealed: string | null }>(
          `SELECT ${key} AS key, ${associatedData} AS bound, ${column} AS sealed FROM ${table}
            WHERE ${key} > $1 ORDER BY ${key} LIMIT $2`,
          [after, BATCH],
        );
        if (rows.length === 0) break;
        after = rows[rows.length - 1]!.key;
        for (const row of rows) {
          if (row.sealed === null) continue;
          if (!box.isStale(row.sealed)) {
            report.current++;
            continue;
          }
          const resealed = box.seal(box.open(row.sealed, row.bound), row.bound);
          const updated = await db.query(
            `UPDATE ${table} SET ${column} = $1 WHERE ${key} = $2 AND ${column} = $3 RETURNING ${key}`,
            [resealed, row.key, row.sealed],
          );
          if (updated.length > 0) report.resealed++;
        }
      }
      reports.push(report);
    }
  }
  return reports;
}
