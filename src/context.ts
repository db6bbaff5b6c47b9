// The running product's parts, built once per process (or per test app) and handed to routes. Services
// receive what they need from here; none of them reads the environment or the wall clock.
import type { FastifyBaseLogger } from 'fastify';
import type { Carrier } from './carriers/carrier.ts';
import { SimulatedCarrier } from './carriers/simulated.ts';
import type { Config } from './config.ts';
import { ApiKeyService } from './modules/api-keys/service.ts';
import { ContactImporter } from './modules/contacts/import.ts';
import { ContactListService } from './modules/contacts/lists.ts';
import { ContactService } from './modules/contacts/service.ts';
import { PasswordResetService } from './modules/identity/password-reset.ts';
import { PortalAuthService } from './modules/identity/service.ts';
import { SessionService } from './modules/identity/sessions.ts';
import { TwoFactorService } from './modules/identity/two-factor.ts';
import { UserService } from './modules/identity/users.ts';
import { MessagingService } from './modules/messaging/service.ts';
import { NumberService } from './modules/numbers/service.ts';
import { OrganizationService } from './modules/organizations/service.ts';
import { WebhookDelivery } from './modules/webhooks/delivery.ts';
import { WebhookService } from './modules/webhooks/service.ts';
import { WebhookTransport } from './modules/webhooks/transport.ts';
import { SessionTokenCodec } from './platform/auth/session-token.ts';
import { Clock } from './platform/clock.ts';
import { createSecretBox } from './platform/crypto.ts';
import type { Database } from './platform/db/index.ts';
import { EventOutbox } from './platform/events.ts';
import { JobQueue } from './platform/jobs.ts';
import { createMailer, type Mailer } from './platform/mail.ts';
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
  carrier: Carrier;
  messages: MessagingService;
  mailer: Mailer;
  sessions: SessionService;
  twoFactor: TwoFactorService;
  portalAuth: PortalAuthService;
  webhooks: WebhookService;
  webhookDelivery: WebhookDelivery;
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
  const rateLimiter = new RateLimiter(counters, theClock);
  const organizations = new OrganizationService(db, theClock);
  const users = new UserService(db, theClock);
  const mailer = createMailer(config.smtpUrl, log, config.appEnv === 'production');
  const sessions = new SessionService(db, theClock, new SessionTokenCodec(config.jwtSecret));
  const twoFactor = new TwoFactorService(db, theClock, createSecretBox(config.jwtSecret, 'totp-secret'));
  const portalAuth = new PortalAuthService({
    db,
    clock: theClock,
    users,
    organizations,
    sessions,
    twoFactor,
    passwordResets: new PasswordResetService(db, theClock, users, sessions),
    rateLimiter,
    mailer,
    publicUrl: config.publicUrl,
    onMailError: (error) => log.error({ err: error }, 'password reset e-mail could not be sent'),
  });
  const production = config.appEnv === 'production';
  // Delivery and management refer to each other (a test event is enqueued on the delivery queue; delivery
  // opens the sealed secrets), so the service is handed to delivery lazily.
  let webhooks: WebhookService | undefined;
  const webhookDelivery = new WebhookDelivery(
    db,
    theClock,
    jobs,
    events,
    () => webhooks!,
    new WebhookTransport({ guarded: production }),
  );
  webhooks = new WebhookService(
    db,
    theClock,
    createSecretBox(config.jwtSecret, 'webhook-secret'),
    pagination,
    {
      production,
      enqueue: webhookDelivery.enqueue,
    },
  );
  const numbers = new NumberService(db, theClock);
  const contacts = new ContactService(db, theClock, events, pagination);
  const carrier = new SimulatedCarrier(config.carrierTrustTier);
  const messages = new MessagingService(
    db,
    theClock,
    jobs,
    events,
    pagination,
    organizations,
    numbers,
    contacts,
    carrier,
    { automaticReceipts: config.appEnv !== 'test' },
  );
  return {
    config,
    db,
    clock: theClock,
    jobs,
    events,
    rateLimiter,
    pagination,
    log,
    organizations,
    users,
    numbers,
    apiKeys: new ApiKeyService(db, theClock, config.appEnv === 'production', pagination),
    contacts,
    contactImporter: new ContactImporter(db, theClock, events),
    contactLists: new ContactListService(db, theClock, pagination),
    carrier,
    messages,
    mailer,
    sessions,
    twoFactor,
    portalAuth,
    webhooks,
    webhookDelivery,
  };
}
