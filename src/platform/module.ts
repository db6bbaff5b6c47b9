// The module contract. A product module (src/modules/<name>/index.ts) is one defineModule() call that says
// everything the composition root needs to plug it in, so that adding a module is one folder and one line:
//   name       unique; also the key its services are known by
//   create     builds its services from the platform and, through use(), the modules it needs
//   routes     route plugins per interface (a route written once, mounted on several)
//   testControls operator routes that exist only under APP_ENV=test
//   jobs       the durable queues it handles
//   events     the events it emits (the webhook catalog and OpenAPI are built from these)
//   consumers  what it does with every recorded event, after it committed (webhooks fan them out)
//   observers  what it keeps of some events inside the recording transaction (conversations thread them)
//   sealed     the columns where it keeps sealed secrets (re-sealed when ENCRYPTION_KEY rotates)
//   retention  the rows it removes once they are past what the API shows (platform/retention.ts)
// Modules never construct each other: use(other) returns the other module's services, built once. A cycle
// between modules is refused at start with the path that forms it.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.ts';
import type { Clock } from './clock.ts';
import type { SecretBox } from './crypto.ts';
import type { Database } from './db/index.ts';
import type { EventConsumer, EventDefinition, EventObserver, EventOutbox } from './events.ts';
import type { InterfaceName } from './http/caller.ts';
import type { RoutePlugin } from './http/interfaces.ts';
import type { Idempotency } from './idempotency.ts';
import type { JobHandler, JobQueue, QueueOptions } from './jobs.ts';
import type { Mailer } from './mail.ts';
import type { Metrics } from './metrics/index.ts';
import type { Paginator } from './pagination.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { RetentionRule } from './retention.ts';
import type { SharedCaches } from './shared-cache.ts';

/** The mechanisms every module shares, built once per process by the composition root. */
export interface Platform {
  config: Config;
  db: Database;
  clock: Clock;
  jobs: JobQueue;
  events: EventOutbox;
  rateLimiter: RateLimiter;
  /** The one pagination helper: every list endpoint parses and fetches its pages through it. */
  pagination: Paginator;
  /** Short-lived caches of what every request reads, invalidated on write on every instance. */
  caches: SharedCaches;
  idempotency: Idempotency;
  mailer: Mailer;
  log: FastifyBaseLogger;
  /**
   * This instance's metrics (GET /metrics): a module declares its own through the Meter methods (counter,
   * histogram, readings) when it is created, and counts where things happen.
   */
  metrics: Metrics;
  /** An AEAD box for one purpose (`totp-secret`, `webhook-secret`), keyed from the app's root secret. */
  secretBox(purpose: string): SecretBox;
}

/** The services of another module, created on first use. Import that module's index.ts to name it. */
export type Use = <Services>(module: ModuleDefinition<string, Services>) => Services;

export interface ModuleContext {
  platform: Platform;
  use: Use;
}

/** A route plugin given the module's own services, the platform, and the other modules' services. */
export type ModuleRoutes<Services> = (services: Services, platform: Platform, use: Use) => RoutePlugin;

export interface JobSpec<Payload = never> {
  handler: JobHandler<Payload>;
  options?: QueueOptions;
}

/**
 * A column holding secrets sealed with `platform.secretBox(purpose)`, bound to its row by the value of
 * `associatedData` (a column of the same row). The key-rotation command re-seals these with the newest key.
 */
export interface SealedColumns {
  table: string;
  /** The row's primary key column. */
  key: string;
  columns: string[];
  purpose: string;
  associatedData: string;
}

export interface ModuleDefinition<Name extends string = string, Services = unknown> {
  name: Name;
  create(context: ModuleContext): Services;
  routes?: Partial<Record<InterfaceName, ModuleRoutes<Services>[]>>;
  testControls?: ModuleRoutes<Services>[];
  jobs?(services: Services): Record<string, JobSpec<never>>;
  events?: readonly EventDefinition[];
  consumers?(services: Services): EventConsumer[];
  /** Told of its event types inside the transaction that records them (platform/events.ts EventObserver). */
  observers?(services: Services): EventObserver[];
  /** Where it keeps sealed secrets, so that rotating ENCRYPTION_KEY can re-seal them. */
  sealed?: readonly SealedColumns[];
  /** Its clean-up rules, run hourly by the `platform.retention` queue; each deletes in bounded batches. */
  retention?(services: Services): RetentionRule[];
}

export function defineModule<const Name extends string, Services>(
  definition: ModuleDefinition<Name, Services>,
): ModuleDefinition<Name, Services> {
  return definition;
}

/** A module with its services built: what the app mounts. */
export interface ComposedModule {
  definition: ModuleDefinition<string, unknown>;
  services: unknown;
}

/**
 * Builds every module's services (dependencies first, each once), declares their events, and registers
 * their job handlers and event consumers on the platform. Returns them in the order given.
 */
export function composeModules(
  platform: Platform,
  modules: readonly ModuleDefinition<string, unknown>[],
): { composed: ComposedModule[]; use: Use } {
  const names = new Set<string>();
  for (const module of modules) {
    if (names.has(module.name)) throw new Error(`Two modules are named ${module.name}`);
    names.add(module.name);
  }
  const built = new Map<ModuleDefinition<string, unknown>, unknown>();
  const building: string[] = [];
  const use: Use = <Services>(module: ModuleDefinition<string, Services>): Services => {
    const generic = module as ModuleDefinition<string, unknown>;
    if (built.has(generic)) return built.get(generic) as Services;
    if (!modules.includes(generic)) throw new Error(`Module ${module.name} is used but not registered`);
    if (building.includes(module.name)) {
      throw new Error(`Modules depend on each other in a circle: ${[...building, module.name].join(' → ')}`);
    }
    building.push(module.name);
    const services = module.create({ platform, use });
    building.pop();
    built.set(generic, services);
    return services;
  };
  const composed = modules.map((definition) => ({ definition, services: use(definition) }));
  for (const { definition, services } of composed) {
    if (definition.events) platform.events.declare(...definition.events);
    for (const [queue, spec] of Object.entries(definition.jobs?.(services) ?? {})) {
      platform.jobs.register(queue, spec.handler, spec.options);
    }
    for (const consumer of definition.consumers?.(services) ?? []) platform.events.subscribe(consumer);
    for (const observer of definition.observers?.(services) ?? []) platform.events.observe(observer);
  }
  return { composed, use };
}
