// Messaging: sending (validation, merge variables, opt-outs, idempotency, plan limits, pacing), the carrier
// hand-off and its receipts, inbound texts with their opt-out keywords, and message history. This is the
// one face the rest of the app sees (`messages.<method>`); each job lives in its own file and the SQL in
// store.ts. Routes only parse and answer. Every state change and its event are written in one transaction.
import type { Carrier, CarrierReports, ReceiptStatus } from '../../carriers/carrier.ts';
import { CarrierPacing } from '../../carriers/pacing.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { Idempotency } from '../../platform/idempotency.ts';
import type { JobQueue } from '../../platform/jobs.ts';
import type { JobSpec } from '../../platform/module.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import type { ContactService } from '../contacts/index.ts';
import type { LinkService } from '../links/index.ts';
import type { NumberService } from '../numbers/index.ts';
import type { Organization, OrganizationService, Region } from '../organizations/index.ts';
import { CampaignMessages } from './campaign-messages.ts';
import {
  CARRIER_RECEIPT_QUEUE,
  DISPATCH_ATTEMPTS,
  DISPATCH_QUEUE,
  MessageDispatcher,
  RECEIPT_QUEUE,
} from './dispatch.ts';
import { type MessageFilters, MessageHistory } from './history.ts';
import { InboundMessages, type Keyword } from './inbound.ts';
import { SendLimits } from './limits.ts';
import type { CountMessages } from './message.ts';
import { MessageReceipts } from './receipts.ts';
import { RELEASE_QUEUE, ScheduledMessages } from './scheduled.ts';
import type {
  Direction,
  Message,
  MessageHourly,
  MessageStats,
  MessageStatus,
  ReceiptState,
  SendInput,
  SendResult,
} from './schemas.ts';
import { MessageSender } from './send.ts';
import { MessageStore } from './store.ts';

export type { CampaignMessageInput, CampaignMessages } from './campaign-messages.ts';
export { DISPATCH_ATTEMPTS, DISPATCH_QUEUE, RECEIPT_QUEUE } from './dispatch.ts';
export { HELP_KEYWORDS, START_KEYWORDS, STOP_KEYWORDS } from './inbound.ts';
export { RECEIPT_WAIT_MS, receiptState, toMessage } from './message.ts';
export { DIRECTIONS, MESSAGE_STATUSES, RECEIPT_STATES } from './schemas.ts';
export type { Origin } from './store.ts';
export type { Direction, Message, MessageFilters, MessageStatus, ReceiptState, SendInput, SendResult };

export interface MessagingOptions {
  /** Outside test the simulated carrier reports receipts by itself, after a short delay. */
  automaticReceipts: boolean;
  /** In production, hosted media a carrier fetches must be https on public addresses (the SSRF guard). */
  guardMediaUrls?: boolean;
  lockTimeoutMs?: number;
}

export class MessagingService {
  readonly limits: SendLimits;
  /** Messages made by the campaign engine, under the same limits and pacing as a send. */
  readonly campaignMessages: CampaignMessages;

  private readonly sender: MessageSender;
  private readonly scheduled: ScheduledMessages;
  private readonly dispatcher: MessageDispatcher;
  private readonly receipts: MessageReceipts;
  private readonly inbound: InboundMessages;
  private readonly history: MessageHistory;
  private readonly db: Database;
  private readonly jobs: JobQueue;
  private readonly store: MessageStore;

  constructor(deps: {
    db: Database;
    clock: Clock;
    jobs: JobQueue;
    events: EventOutbox;
    pagination: Paginator;
    organizations: OrganizationService;
    numbers: NumberService;
    contacts: ContactService;
    /** Shortens and tracks the links of campaign messages and of sends that ask for it. */
    links: LinkService;
    carrier: Carrier;
    options: MessagingOptions;
    idempotency: Idempotency;
    /** Counts messages reaching each status (comms_messages_total). */
    countMessages?: CountMessages;
  }) {
    const { countMessages } = deps;
    const { db, clock, jobs, events, pagination, organizations, numbers, contacts, carrier } = deps;
    const store = new MessageStore();
    this.db = db;
    this.jobs = jobs;
    this.store = store;
    this.limits = new SendLimits({
      clock,
      organizations,
      options: { lockTimeoutMs: deps.options.lockTimeoutMs ?? 3000 },
    });
    this.dispatcher = new MessageDispatcher({
      db,
      clock,
      jobs,
      events,
      contacts,
      carrier,
      pacing: new CarrierPacing({ carrier }),
      store,
      automaticReceipts: deps.options.automaticReceipts,
      guardMediaUrls: deps.options.guardMediaUrls ?? false,
      countMessages,
    });
    this.campaignMessages = new CampaignMessages({
      clock,
      limits: this.limits,
      dispatcher: this.dispatcher,
      links: deps.links,
    });
    this.scheduled = new ScheduledMessages({
      db,
      clock,
      jobs,
      events,
      organizations,
      numbers,
      contacts,
      limits: this.limits,
      dispatcher: this.dispatcher,
      countMessages,
    });
    this.sender = new MessageSender({
      db,
      scheduled: this.scheduled,
      clock,
      idempotency: deps.idempotency,
      numbers,
      contacts,
      limits: this.limits,
      dispatcher: this.dispatcher,
      store,
      links: deps.links,
    });
    this.receipts = new MessageReceipts({ db, clock, events, store, countMessages });
    this.inbound = new InboundMessages({
      db,
      clock,
      events,
      organizations,
      numbers,
      contacts,
      dispatcher: this.dispatcher,
      store,
      countMessages,
    });
    this.history = new MessageHistory({ db, clock, pagination, store });
  }

  /** The queues this service works, registered by the module (index.ts). */
  queues(): Record<string, JobSpec<never>> {
    const dispatch: JobSpec<{ messageId: string }> = {
      handler: async (payload, job) => {
        try {
          await this.dispatch(payload.messageId);
        } catch (error) {
          if (job.attempts < job.maxAttempts) throw error;
          await this.dispatcher.giveUp(payload.messageId);
        }
      },
      options: { maxAttempts: DISPATCH_ATTEMPTS, retryDelaysSeconds: [5, 15, 60, 300] },
    };
    const release: JobSpec<{ messageId: string }> = {
      handler: async (payload, job) => {
        try {
          await this.scheduled.release(payload.messageId);
        } catch (error) {
          if (job.attempts < job.maxAttempts) throw error;
          await this.scheduled.giveUp(
            payload.messageId,
            error instanceof Error ? error.message : String(error),
          );
        }
      },
      options: { maxAttempts: DISPATCH_ATTEMPTS, retryDelaysSeconds: [5, 15, 60, 300] },
    };
    const receipt: JobSpec<{ messageId: string; status: ReceiptStatus }> = {
      handler: (payload) => this.receipts.applyQueued(payload.messageId, payload.status),
    };
    const carrierReceipt: JobSpec<{ carrier: string; carrierMessageId: string; status: ReceiptStatus }> = {
      handler: async ({ carrier, carrierMessageId, status }, job) => {
        const messageId = await this.store.idByCarrierId(this.db, carrier, carrierMessageId);
        if (messageId) return this.receipts.applyQueued(messageId, status);
        // A receipt can overtake the commit of its own send (the SMSC answers within milliseconds): tried
        // again a little later, then dropped as a receipt for a message that is not ours.
        if (job.attempts < job.maxAttempts)
          throw new Error(`no message with carrier id ${carrierMessageId} yet`);
      },
      options: { maxAttempts: 6, retryDelaysSeconds: [1, 5, 30, 120, 600] },
    };
    return {
      [DISPATCH_QUEUE]: dispatch,
      [RELEASE_QUEUE]: release,
      [RECEIPT_QUEUE]: receipt,
      [CARRIER_RECEIPT_QUEUE]: carrierReceipt,
    } as Record<string, JobSpec<never>>;
  }

  /**
   * What a carrier that reports by itself hears: a receipt is kept as a job (durable before the carrier is
   * answered, and matched to its message when the job runs); an inbound text is received at once.
   */
  carrierReports(carrierName: string): CarrierReports {
    return {
      receipt: async (carrier, carrierMessageId, status) => {
        await this.jobs.enqueue(this.db, CARRIER_RECEIPT_QUEUE, { carrier, carrierMessageId, status });
      },
      inbound: async ({ carrierMessageId, ...message }) => {
        const carrier = carrierMessageId ? { name: carrierName, messageId: carrierMessageId } : undefined;
        await this.receiveInbound({ ...message, carrier });
      },
    };
  }

  /** Counts a text as send would, without sending. */
  segments(text: string) {
    return this.sender.segments(text);
  }

  /**
   * Sends one message for `organization`. With an idempotency key, the same key and body within 24 hours
   * answer the first result again (`replayed`), and the same key with another body is a 422.
   */
  send(
    organization: Organization,
    input: SendInput,
    origin: 'api' | 'portal',
    idempotencyKey?: string,
  ): Promise<{ result: SendResult; replayed: boolean }> {
    return this.sender.send(organization, input, origin, idempotencyKey);
  }

  /**
   * Cancels a scheduled message (DELETE /messages/{id}); once it left the schedule, 409 MESSAGE_NOT_SCHEDULED.
   */
  cancel(organizationId: string, id: string): Promise<Message> {
    return this.scheduled.cancel(organizationId, id);
  }

  /** The dispatch job: hands a queued message to the carrier and records what it said. Idempotent. */
  dispatch(messageId: string): Promise<void> {
    return this.dispatcher.dispatch(messageId);
  }

  /**
   * A delivery receipt from the carrier: `sent` becomes delivered, failed or undelivered, with its event.
   * The same receipt twice is harmless; a receipt for a message not (yet) sent, or already final with
   * another status, is a 409.
   */
  applyReceipt(messageId: string, status: ReceiptStatus): Promise<Message> {
    return this.receipts.apply(messageId, status);
  }

  /**
   * A text arrived at one of our numbers. Stored as `received`; opt-out, opt-in and help keywords act on the
   * sender and answer with one automatic reply. The carrier's webhook and the test endpoint both call this.
   */
  receiveInbound(input: {
    from: string;
    to: string;
    text: string;
    carrier?: { name: string; messageId: string };
  }): Promise<{
    message: Message;
    keyword: Keyword | null;
    reply: Message | null;
    duplicate?: true;
  }> {
    return this.inbound.receive(input);
  }

  get(organizationId: string, id: string): Promise<Message> {
    return this.history.get(organizationId, id);
  }

  list(
    organizationId: string,
    query: PageQueryInput & MessageFilters,
    surface: string,
    region: Region = 'us',
  ): Promise<Page<Message>> {
    return this.history.list(organizationId, query, surface, region);
  }

  stats(organizationId: string, query: { since?: string; until?: string }): Promise<MessageStats> {
    return this.history.stats(organizationId, query);
  }

  hourly(organizationId: string, query: { since?: string; until?: string }): Promise<MessageHourly> {
    return this.history.hourly(organizationId, query);
  }
}

export interface MessagingServices {
  messages: MessagingService;
}
