// Readiness (GET /health/ready, CONTRACT section 15): whether this instance should be sent traffic and work.
// Each part is checked at once, each within READY_CHECK_MS so that a probe never hangs on a database that
// does not answer (the pool would wait up to 10 s for a connection):
//   database  reachable, and every migration of this code applied (an instance must not serve an older schema)
//   redis     answers, when REDIS_URL is set (rate limits would fall back to this instance's own counters)
//   worker    the background worker's claim loop keeps turning, when this process runs the worker
// A part that is not ready says why in its value; the others say `ok`.
import { pendingMigrations } from '../../platform/db/migrate.ts';
import type { Platform } from '../../platform/module.ts';

export const READY_CHECK_MS = 2_000;

export type DatabaseReadiness = 'ok' | 'unreachable' | 'migrations_pending';
export interface ReadinessReport {
  database: DatabaseReadiness;
  redis?: 'ok' | 'unreachable';
  worker?: 'ok' | 'stalled';
}

export class Readiness {
  constructor(private readonly platform: Platform) {}

  async check(): Promise<{ ready: boolean; report: ReadinessReport }> {
    const { config, rateLimiter, jobs } = this.platform;
    const store = rateLimiter.store;
    const [database, redis] = await Promise.all([
      this.database(),
      config.redisUrl && store.reachable
        ? within(store.reachable(), false).then((up) => (up ? ('ok' as const) : ('unreachable' as const)))
        : undefined,
    ]);
    const report: ReadinessReport = { database };
    if (redis) report.redis = redis;
    const worker = jobs.workerState();
    if (worker !== 'stopped') report.worker = worker === 'alive' ? 'ok' : 'stalled';
    const ready = database === 'ok' && (redis ?? 'ok') === 'ok' && (report.worker ?? 'ok') === 'ok';
    return { ready, report };
  }

  private async database(): Promise<DatabaseReadiness> {
    const pending = await within(
      pendingMigrations(this.platform.db).catch(() => undefined),
      undefined,
    );
    if (pending === undefined) return 'unreachable';
    return pending.length > 0 ? 'migrations_pending' : 'ok';
  }
}

/** `work`'s result, or `otherwise` when it takes longer than READY_CHECK_MS. */
function within<T>(work: Promise<T>, otherwise: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(otherwise), READY_CHECK_MS);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
