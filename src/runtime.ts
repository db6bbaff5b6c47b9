// The composition root: builds the platform's mechanisms once per process (or per test app), then every
// module of src/modules.ts in one loop. The runtime is the platform plus every module's services by name
// (`runtime.messages`, `runtime.contacts`), typed from the module list, and the interfaces their routes
// are mounted on. Nothing here names a service: a new module is one line in src/modules.ts.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.ts';
import { type AppInterfaces, createInterfaces } from './interfaces.ts';
import { MODULES } from './modules.ts';
import { createBroadcast } from './platform/broadcast.ts';
import { Clock } from './platform/clock.ts';
import { createSecretBox } from './platform/crypto.ts';
import type { Database } from './platform/db/index.ts';
import { observeDatabasePool } from './platform/db/metrics.ts';
import { EventOutbox } from './platform/events.ts';
import { Idempotency } from './platform/idempotency.ts';
import { JobQueue } from './platform/jobs.ts';
import { createMailer } from './platform/mail.ts';
import { Metrics } from './platform/metrics/index.ts';
import {
  type ComposedModule,
  composeModules,
  type ModuleDefinition,
  type Platform,
  type Use,
} from './platform/module.ts';
import { Paginator } from './platform/pagination.ts';
import { createCounterStore, RateLimiter } from './platform/rate-limit.ts';
import { platformRetentionRules, Retention } from './platform/retention.ts';
import { SharedCaches } from './platform/shared-cache.ts';

type ServicesOf<Module> = Module extends ModuleDefinition<string, infer Services> ? Services : never;
type UnionToIntersection<Union> = (Union extends unknown ? (value: Union) => void : never) extends (
  value: infer Intersection,
) => void
  ? Intersection
  : never;

/** Every module's services, by the names the modules give them. */
export type ModuleServices = UnionToIntersection<ServicesOf<(typeof MODULES)[number]>>;

export type Runtime = Platform &
  ModuleServices & {
    modules: ComposedModule[];
    /** Any module's services by its definition (what route plugins receive). */
    use: Use;
    interfaces: AppInterfaces;
    /** The hourly clean-up of the platform's and every module's rules; a worker calls `start()`. */
    retention: Retention;
  };

export function createPlatform(
  config: Config,
  db: Database,
  log: FastifyBaseLogger,
  clock?: Clock,
): Platform {
  const theClock = clock ?? new Clock(config.appEnv === 'test');
  const metrics = new Metrics({
    onReadError: (error, gauges) => log.warn({ err: error, gauges }, 'a metrics read failed'),
  });
  // Process metrics only where someone scrapes them: each app would otherwise watch the event loop and GC.
  if (config.metricsToken) metrics.collectProcessMetrics();
  observeDatabasePool(metrics, db);
  const jobs = new JobQueue(db, theClock, {
    concurrency: config.workerConcurrency,
    onError: (error, job) => log.warn({ err: error, jobId: job.id, queue: job.queue }, 'job failed'),
    meter: metrics,
  });
  const counters = createCounterStore(config.redisUrl, (error) =>
    log.error({ err: error }, "Redis unreachable: rate limits fall back to this instance's own counters"),
  );
  return {
    config,
    db,
    clock: theClock,
    jobs,
    events: new EventOutbox(db, jobs, theClock),
    rateLimiter: new RateLimiter(counters, theClock),
    pagination: new Paginator(config.jwtSecret, theClock),
    caches: new SharedCaches(createBroadcast(config.redisUrl, db), theClock, (error, what) =>
      log.warn({ err: error, what }, 'shared caches: the invalidation broadcast failed'),
    ),
    idempotency: new Idempotency(db, theClock),
    mailer: createMailer(config.smtpUrl, log, config.appEnv === 'production'),
    log,
    metrics,
    secretBox: (purpose) =>
      createSecretBox({ keys: config.encryptionKeys, legacy: config.jwtSecret }, purpose),
  };
}

export function createRuntime(config: Config, db: Database, log: FastifyBaseLogger, clock?: Clock): Runtime {
  const platform = createPlatform(config, db, log, clock);
  const { composed: modules, use } = composeModules(
    platform,
    MODULES as readonly ModuleDefinition<string, unknown>[],
  );
  const services: Record<string, unknown> = {};
  for (const { definition, services: own } of modules) {
    for (const [name, service] of Object.entries(own as object)) {
      if (name in services || name in platform) {
        throw new Error(`Module ${definition.name} names a service "${name}" that another part already has`);
      }
      services[name] = service;
    }
  }
  const retention = new Retention({
    db,
    clock: platform.clock,
    jobs: platform.jobs,
    log,
    rules: [
      ...platformRetentionRules(platform),
      ...modules.flatMap(({ definition, services: own }) => definition.retention?.(own) ?? []),
    ],
  });
  const runtime = { ...platform, ...services, modules, use, retention } as unknown as Runtime;
  runtime.interfaces = createInterfaces(runtime);
  return runtime;
}
