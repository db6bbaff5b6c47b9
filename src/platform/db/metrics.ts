// The database pool's use as gauges read at scrape time (docs/operations.md). PGlite has no pool: with the
// embedded engine these series are absent.
import type { Meter } from '../metrics/index.ts';
import type { Database } from './index.ts';

export function observeDatabasePool(meter: Meter, db: Database): void {
  const poolUse = db.poolUse?.bind(db);
  if (!poolUse) return;
  meter.readings({
    gauges: [
      { name: 'comms_db_pool_max_connections', help: 'The most connections the pool opens' },
      {
        name: 'comms_db_pool_connections',
        help: 'Connections the pool holds open, by state (in_use, idle)',
        labels: ['state'],
      },
      { name: 'comms_db_pool_waiting', help: 'Queries and transactions waiting for a free connection' },
    ],
    read: async () => {
      const use = poolUse();
      return {
        comms_db_pool_max_connections: [{ value: use.max }],
        comms_db_pool_connections: [
          { labels: { state: 'in_use' }, value: use.open - use.idle },
          { labels: { state: 'idle' }, value: use.idle },
        ],
        comms_db_pool_waiting: [{ value: use.waiting }],
      };
    },
  });
}
