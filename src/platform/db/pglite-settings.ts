// How every PGlite instance is started and kept, in this thread (tests' databases) or in the database's own
// thread (the server's: pglite-thread.ts).
import { mkdirSync } from 'node:fs';
import { PGlite, types as pgliteTypes } from '@electric-sql/pglite';

/** How often, at most, a PGlite statement first looks at how much WAL the last checkpoint left behind it. */
const WAL_CHECK_EVERY_MS = 200;
/** WAL written since the last checkpoint past which PGlite runs one (see `WalBound`). */
const CHECKPOINT_AFTER_WAL_BYTES = 32 * 1024 * 1024;
/**
 * PGlite's server settings beyond its defaults. A checkpoint keeps recycled WAL segments for the next one
 * up to max_wal_size (1 GB by default), so that bound is lowered to what a checkpoint every 32 MB needs.
 * shared_buffers (PostgreSQL's 128 MB by default) is resident from the start in PGlite, and its files are read
 * through the operating system's cache anyway: 32 MB keeps about 80 MB off the idle process with no measurable
 * cost to a bulk insert and lookups of 60,000 rows (docs/performance.md, issue 35).
 */
const START_PARAMS = [
  ...PGlite.defaultStartParams,
  ...['-c', 'max_wal_size=64MB', '-c', 'min_wal_size=32MB', '-c', 'shared_buffers=32MB'],
];

/** How every PGlite instance is started: bigints read as numbers, and the settings above. */
export const pgliteOptions = () => ({
  parsers: { [pgliteTypes.INT8]: (value: string) => Number(value) },
  startParams: START_PARAMS,
});

/** Opens (or creates) the database in `dataDir` (`memory://` for one in memory) with the settings above. */
export function openPglite(dataDir: string): Promise<PGlite> {
  if (!dataDir.startsWith('memory://')) mkdirSync(dataDir, { recursive: true });
  return PGlite.create(dataDir, pgliteOptions());
}

/**
 * PGlite runs PostgreSQL as a single-user backend, which never checkpoints by itself (the server's
 * checkpointer is a process of its own, and a standalone backend asks for no checkpoint when its WAL
 * grows): every write's WAL was kept until the database closed. With `memory://` those files are memory:
 * a million-row import left 1.4 GB of WAL in the process (issue 31, finding 10); on disk, they filled the
 * disk. So a statement first runs a checkpoint, every WAL_CHECK_EVERY_MS at most, when the WAL written since
 * the last one passes CHECKPOINT_AFTER_WAL_BYTES; the checkpoint removes the segments it no longer needs
 * (beyond the few max_wal_size lets it keep for reuse). Only outside a transaction: a statement of the
 * instance waits for the transaction that holds it.
 */
export class WalBound {
  private lastCheck = performance.now();

  constructor(private readonly client: PGlite) {}

  async check(): Promise<void> {
    if (performance.now() - this.lastCheck < WAL_CHECK_EVERY_MS) return;
    this.lastCheck = performance.now();
    const { rows } = await this.client.query<{ written: number }>(
      `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), redo_lsn)::float8 AS written
         FROM pg_control_checkpoint()`,
    );
    if (rows[0]!.written > CHECKPOINT_AFTER_WAL_BYTES) await this.client.exec('CHECKPOINT');
    this.lastCheck = performance.now();
  }
}
