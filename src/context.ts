// The running product's parts, built once per process (or per test app) and handed to routes. Services
// receive what they need from here; none of them reads the environment or the wall clock.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.ts';
import { ApiKeyService } from './modules/api-keys/service.ts';
import { ContactImporter } from './modules/contacts/import.ts';
import { ContactListService } from './modules/contacts/lists.ts';
import { ContactService } from './modules/contacts/service.ts';
import { UserService } from './modules/identity/users.ts';
import { NumberService } from './modules/numbers/service.ts';
import { OrganizationService } from './modules/organizations/service.ts';
import { Clock } from './platform/clock.ts';
import type { Database } from './platform/db/index.ts';
import { EventOutbox } from './platform/events.ts';
import { JobQueue } from './platform/jobs.ts';
import { Paginator } from './platform/pagination.ts';
import { createCounterStore, RateLimiter } from './platform/rate-limit.ts';

export interface AppContext {
  config: Config;
  db: Database;
  clock: Clock;
  jobs: JobQueue;
  events: EventOutbox;
  rateLimiter: RateLimiter;
  /** The one pagination helper: every list endpoint parses and fetches its pages through it. */
  pagination: Paginator;
  log: FastifyBaseLogger;
  organizations: OrganizationService;
  users: UserService;
  numbers: NumberService;
  apiKeys: ApiKeyService;
  contacts: ContactService;
  contactImporter: ContactImporter;
  contactLists: ContactListService;
}

export function createContext(
  config: Config,
  db: Database,
  log: FastifyBaseLogger,
  clock?: Clock,
): AppContext {
  const theClock = clock ?? new Clock(config.appEnv === 'test');
  const jobs = new JobQueue(db, theClock, {
    onError: (error, job) => log.warn({ err: error, jobId: job.id, queue: job.queue }, 'job failed'),
  });
  const events = new EventOutbox(db, jobs, theClock);
  const counters = createCounterStore(config.redisUrl, (error) =>
    log.error({ err: error }, "Redis unreachable: rate limits fall back to this instance's own counters"),
  );
  const pagination = new Paginator(config.jwtSecret, theClock);
  return {
    config,
    db,
    clock: theClock,
    jobs,
    events,
    rateLimiter: new RateLimiter(counters, theClock),
    pagination,
    log,
    organizations: new OrganizationService(db, theClock),
    users: new UserService(db, theClock),
    numbers: new NumberService(db, theClock),
    apiKeys: new ApiKeyService(db, theClock, config.appEnv === 'production'),
    contacts: new ContactService(db, theClock, events, pagination),
    contactImporter: new ContactImporter(db, theClock, events),
    contactLists: new ContactListService(db, theClock, pagination),
  };
}
