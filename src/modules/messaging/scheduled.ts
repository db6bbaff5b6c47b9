// Scheduled messages (CONTRACT section 14): a send with `sendAt` (15 minutes to 35 days ahead) is stored as
// `scheduled` and a release job waits for its time. Nothing is counted until then: when it comes due, one
// transaction holding the message's row lock (so a cancel racing it has one winner) checks it again as a send
// would be checked now (the account's standing, the recipient's opt-out, the message's own quiet hours, the
// sending number, the plan limits) and queues it for its paced slot, or ends it `failed` with the refusal's
// code. A cancel takes the same lock and ends it `cancelled` while it is still scheduled.
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { inSavepoint } from '../../platform/db/savepoint.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { JobQueue } from '../../platform/jobs.ts';
import { type DailyWindow, quietHoursWindow, recipientOpening } from '../../platform/time-zones.ts';
import type { ContactService } from '../contacts/index.ts';
import type { NumberService } from '../numbers/index.ts';
import { accountRefusal, type OrganizationService } from '../organizations/index.ts';
import type { MessageDispatcher } from './dispatch.ts';
import { MessageFailed } from './events.ts';
import type { SendLimits } from './limits.ts';
import { type CountMessages, toMessage } from './message.ts';
import { ScheduledMessageStore } from './scheduled-store.ts';
import type { Message } from './schemas.ts';
import type { MessageRow } from './store.ts';

export const RELEASE_QUEUE = 'messages.release';
/** The earliest and latest `sendAt`, from now (Twilio's window). */
export const SCHEDULE_MIN_MS = 15 * 60 * 1000;
export const SCHEDULE_MAX_MS = 35 * 24 * 60 * 60 * 1000;

/** A message's release job is unique by its message and due time: a postponed one gets a new job. */
const releaseKey = (messageId: string, at: Date) => `release:${messageId}:${at.getTime()}`;

/** `sendAt` of a send, checked against the app's clock: 15 minutes to 35 days ahead, else a 400. */
export function scheduledTime(sendAt: string, now: Date): Date {
  const at = new Date(sendAt);
  if (Number.isNaN(at.getTime())) throw ApiError.badRequest('sendAt must be an ISO 8601 date-time');
  const ahead = at.getTime() - now.getTime();
  if (ahead < SCHEDULE_MIN_MS || ahead > SCHEDULE_MAX_MS) {
    throw ApiError.badRequest(
      `sendAt must be between 15 minutes and 35 days from now (now is ${now.toISOString()}, sendAt ${at.toISOString()})`,
    );
  }
  return at;
}

/** When a message to `phone` (its contact in zone `timezone`) may leave at or after `at` under `window`. */
export function quietOpening(
  at: Date,
  recipient: { timezone: string | null | undefined; phone: string },
  window: DailyWindow | undefined,
): Date {
  return window ? recipientOpening(at, recipient, 'UTC', window) : at;
}

export class ScheduledMessages {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly jobs: JobQueue;
  private readonly events: EventOutbox;
  private readonly organizations: OrganizationService;
  private readonly numbers: NumberService;
  private readonly contacts: ContactService;
  private readonly limits: SendLimits;
  private readonly dispatcher: MessageDispatcher;
  private readonly countMessages: CountMessages;
  private readonly store = new ScheduledMessageStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    jobs: JobQueue;
    events: EventOutbox;
    organizations: OrganizationService;
    numbers: NumberService;
    contacts: ContactService;
    limits: SendLimits;
    dispatcher: MessageDispatcher;
    countMessages?: CountMessages;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.events = deps.events;
    this.organizations = deps.organizations;
    this.numbers = deps.numbers;
    this.contacts = deps.contacts;
    this.limits = deps.limits;
    this.dispatcher = deps.dispatcher;
    this.countMessages = deps.countMessages ?? (() => {});
  }

  /** Books the release of a message just stored as scheduled, in the send's transaction. */
  async schedule(tx: Queryable, messageId: string, sendAt: Date): Promise<void> {
    await this.jobs.enqueue(
      tx,
      RELEASE_QUEUE,
      { messageId },
      { runAt: sendAt, dedupeKey: releaseKey(messageId, sendAt) },
    );
    this.countMessages('scheduled');
  }

  /**
   * The release job: a scheduled message that came due is queued for dispatch, or failed with the refusal a
   * send would meet now. Idempotent: a message no longer scheduled (cancelled, or released by an earlier run) is
   * left alone. A limit that cannot be checked now (the 503 of a send) throws, so the job is tried again.
   */
  async release(messageId: string): Promise<void> {
    const outcome = await this.db.transaction(async (tx) => {
      const row = await this.store.lock(tx, messageId);
      if (row?.status !== 'scheduled') return undefined;
      const now = this.clock.now();
      const org = await this.organizations.get(row.organization_id, tx);
      const standing = accountRefusal(org, { product: 'messaging' });
      if (standing) return this.fail(tx, row, standing.code ?? 'ACCOUNT_REFUSED', standing.message, now);

      const recipient = await this.contacts.recipient(org.id, row.to_number, tx);
      if (recipient.optedOut) {
        return this.fail(
          tx,
          row,
          'RECIPIENT_OPTED_OUT',
          'The recipient opted out before the message was sent',
          now,
        );
      }
      // The message's quiet hours, in the recipient's zone as it is now: closed, it waits for them to open.
      const window = quietHoursWindow(
        row.quiet_start && row.quiet_end ? { start: row.quiet_start, end: row.quiet_end } : null,
      );
      const opens = quietOpening(
        now,
        { timezone: recipient.contact?.timezone, phone: row.to_number },
        window,
      );
      if (opens > now) {
        await this.store.postpone(tx, row.id, opens);
        await this.jobs.enqueue(
          tx,
          RELEASE_QUEUE,
          { messageId: row.id },
          { runAt: opens, dedupeKey: releaseKey(row.id, opens) },
        );
        return undefined;
      }
      const sender = (await this.numbers.list(org.id, tx)).find(
        (number) => number.number === row.from_number,
      );
      if (!sender) {
        return this.fail(
          tx,
          row,
          'SENDER_NOT_OWNED',
          `The sending number ${row.from_number} is no longer one of the organization's numbers`,
          now,
        );
      }
      // In a savepoint: a refused limit undoes whatever the checks before it counted, and the failure is
      // recorded in the same transaction.
      try {
        await inSavepoint(tx, 'scheduled_release', () => this.limits.reserve(tx, org, row.segments));
      } catch (error) {
        if (!(error instanceof ApiError) || error.status === 503) throw error;
        return this.fail(tx, row, error.code ?? `HTTP_${error.status}`, error.message, now);
      }
      await this.store.release(tx, row.id, now);
      await this.dispatcher.schedule(tx, row.id, sender);
      return undefined;
    });
    if (outcome) this.countMessages(outcome);
  }

  /** The release could not be done on any attempt (the limits never answered): the message fails. */
  async giveUp(messageId: string, reason: string): Promise<void> {
    const ended = await this.db.transaction(async (tx) => {
      const row = await this.store.lock(tx, messageId);
      if (row?.status !== 'scheduled') return undefined;
      return this.fail(
        tx,
        row,
        'dispatch_failed',
        `The scheduled message could not be released: ${reason}`,
        this.clock.now(),
      );
    });
    if (ended) this.countMessages(ended);
  }

  /**
   * DELETE /messages/{id}: a scheduled message of the organization becomes `cancelled`; one that has left the
   * schedule (queued, sent, or ended) is a 409 MESSAGE_NOT_SCHEDULED, another organization's a 404.
   */
  async cancel(organizationId: string, id: string): Promise<Message> {
    const row = await this.db.transaction(async (tx) => {
      const found = await this.store.lock(tx, id, organizationId);
      if (!found) throw ApiError.notFound('Message');
      if (found.status !== 'scheduled') {
        throw new ApiError(
          409,
          `Message ${id} is ${found.status}; only a scheduled message can be cancelled`,
          { code: 'MESSAGE_NOT_SCHEDULED' },
        );
      }
      return (await this.store.finish(tx, id, 'cancelled', null, this.clock.now()))!;
    });
    this.countMessages('cancelled');
    return toMessage(row, this.clock.now());
  }

  private async fail(
    tx: Queryable,
    row: MessageRow,
    errorCode: string,
    errorMessage: string,
    now: Date,
  ): Promise<'failed' | undefined> {
    const failed = await this.store.finish(tx, row.id, 'failed', { errorCode, errorMessage }, now);
    if (!failed) return undefined;
    await this.events.record(tx, MessageFailed, {
      organizationId: failed.organization_id,
      data: toMessage(failed, now),
    });
    return 'failed';
  }
}
