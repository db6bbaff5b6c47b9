// Messaging: sending (validation, merge variables, opt-outs, idempotency, plan limits, pacing), the carrier
// hand-off and its receipts, inbound texts with their opt-out keywords, and message history. The rules live
// here; routes only parse and answer. Every state change and its event are written in one transaction.
import type { Carrier, OutboundForCarrier, ReceiptStatus } from '../../carriers/carrier.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { Idempotency } from '../../platform/idempotency.ts';
import { newId } from '../../platform/ids.ts';
import type { JobQueue } from '../../platform/jobs.ts';
import type { JobSpec } from '../../platform/module.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import type { ContactService } from '../contacts/index.ts';
import type { NumberService, PhoneNumber } from '../numbers/index.ts';
import type { Organization, OrganizationService, Region } from '../organizations/index.ts';
import { MessageFailed, MessageReceived, MessageSent, RECEIPT_EVENTS } from './events.ts';
import { SendLimits } from './limits.ts';
import { validateMedia } from './media.ts';
import { findUnsupported, render } from './merge-variables.ts';
import {
  DIRECTIONS,
  type Direction,
  MESSAGE_STATUSES,
  type Message,
  type MessageStatus,
  RECEIPT_STATES,
  type ReceiptState,
  type SendInput,
  type SendResult,
} from './schemas.ts';
import { chargeableSegments, countSegments, type SmsEncoding } from './segments.ts';

export type { Direction, Message, MessageStatus, ReceiptState, SendInput, SendResult };
export { DIRECTIONS, MESSAGE_STATUSES, RECEIPT_STATES };
export type Origin = 'api' | 'portal' | 'auto_reply' | 'carrier';

export const RECEIPT_WAIT_MS = 72 * 60 * 60 * 1000;
export const DISPATCH_QUEUE = 'messages.dispatch';
export const RECEIPT_QUEUE = 'messages.receipt';
export const DISPATCH_ATTEMPTS = 8;

// CTIA and carrier opt-out keywords; matched on the whole text, trimmed, any case (docs/messaging.md).
export const STOP_KEYWORDS = ['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'REVOKE', 'OPTOUT'];
export const START_KEYWORDS = ['START', 'UNSTOP', 'YES'];
export const HELP_KEYWORDS = ['HELP'];

interface MessageRow {
  id: string;
  organization_id: string;
  direction: Direction;
  origin: Origin;
  from_number: string;
  to_number: string;
  body: string;
  segments: number;
  encoding: SmsEncoding;
  media_urls: string[];
  media_files: { id: string; contentType: string; size: number; filename: string | null }[];
  media_count: number;
  status: MessageStatus;
  error_code: string | null;
  error_message: string | null;
  sent_at: Date | null;
  delivered_at: Date | null;
  status_updated_at: Date;
  created_at: Date;
}

export interface MessageFilters {
  direction?: Direction;
  status?: MessageStatus;
  number?: string;
  since?: string;
  until?: string;
}

export interface MessagingOptions {
  /** Outside test the simulated carrier reports receipts by itself, after a short delay. */
  automaticReceipts: boolean;
  lockTimeoutMs?: number;
}

export class MessagingService {
  readonly limits: SendLimits;

  private readonly db: Database;
  private readonly clock: Clock;
  private readonly jobs: JobQueue;
  private readonly events: EventOutbox;
  private readonly pagination: Paginator;
  private readonly organizations: OrganizationService;
  private readonly numbers: NumberService;
  private readonly contacts: ContactService;
  private readonly carrier: Carrier;
  private readonly options: MessagingOptions;
  private readonly idempotency: Idempotency;

  constructor(deps: {
    db: Database;
    clock: Clock;
    jobs: JobQueue;
    events: EventOutbox;
    pagination: Paginator;
    organizations: OrganizationService;
    numbers: NumberService;
    contacts: ContactService;
    carrier: Carrier;
    options: MessagingOptions;
    idempotency: Idempotency;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.events = deps.events;
    this.pagination = deps.pagination;
    this.organizations = deps.organizations;
    this.numbers = deps.numbers;
    this.contacts = deps.contacts;
    this.carrier = deps.carrier;
    this.options = deps.options;
    this.idempotency = deps.idempotency;
    this.limits = new SendLimits({
      clock: deps.clock,
      organizations: deps.organizations,
      options: { lockTimeoutMs: deps.options.lockTimeoutMs ?? 3000 },
    });
  }

  /** The queues this service works, registered by the module (index.ts). */
  queues(): Record<string, JobSpec<never>> {
    const dispatch: JobSpec<{ messageId: string }> = {
      handler: async (payload, job) => {
        try {
          await this.dispatch(payload.messageId);
        } catch (error) {
          if (job.attempts < job.maxAttempts) throw error;
          // The carrier could not be reached on any attempt: the message fails rather than stay queued forever.
          const row = await this.row(payload.messageId);
          if (row) {
            await this.finish(row, 'failed', {
              errorCode: 'dispatch_failed',
              errorMessage: 'The message could not be handed to the carrier after repeated attempts',
            });
          }
        }
      },
      options: { maxAttempts: DISPATCH_ATTEMPTS, retryDelaysSeconds: [5, 15, 60, 300] },
    };
    const receipt: JobSpec<{ messageId: string; status: ReceiptStatus }> = {
      handler: async (payload) => {
        await this.applyReceipt(payload.messageId, payload.status).catch((error) => {
          // A receipt that no longer applies (the message moved on) is dropped, as a carrier's duplicate is.
          if (!(error instanceof ApiError)) throw error;
        });
      },
    };
    return { [DISPATCH_QUEUE]: dispatch, [RECEIPT_QUEUE]: receipt } as Record<string, JobSpec<never>>;
  }

  // -------------------------------------------------------------------------------------------------------
  // Sending

  /** Counts a text as send would, without sending. */
  segments(text: string) {
    const count = countSegments(text);
    return { segments: count.segments, encoding: count.encoding, characters: count.characters };
  }

  /**
   * Sends one message for `organization`. With an idempotency key, the same key and body within 24 hours
   * answer the first result again (`replayed`), and the same key with another body is a 422.
   */
  async send(
    organization: Organization,
    input: SendInput,
    origin: 'api' | 'portal',
    idempotencyKey?: string,
  ): Promise<{ result: SendResult; replayed: boolean }> {
    const to = normalisePhone(input.to, organization.region);
    if (!to) throw ApiError.badRequest('to must be a valid phone number, e.g. +12025550123');
    const sender = await this.pickSender(organization, input.from);

    const text = input.message ?? '';
    const unsupported = findUnsupported(text);
    if (unsupported.length > 0) {
      throw new ApiError(
        422,
        `Unsupported merge variables: ${unsupported.map((n) => `{{${n}}}`).join(', ')}; supported are ` +
          '{{first_name}}, {{last_name}}, {{full_name}}, {{company}}, {{email}}, {{phone}}',
        { code: 'UNSUPPORTED_MERGE_VARS' },
      );
    }
    const media = await validateMedia(input);
    if (text.trim() === '' && media.count === 0) {
      throw ApiError.badRequest('A message needs text (message) or media (media or mediaFiles)');
    }

    const write = {
      organizationId: organization.id,
      operation: 'messages.send',
      key: idempotencyKey,
      request: input,
    };
    return this.idempotency.run(write, async (tx): Promise<SendResult> => {
      if (await this.contacts.isOptedOut(organization.id, to, tx)) {
        throw new ApiError(
          403,
          `${to} has opted out of messages from this organization (texted STOP or was opted out); ` +
            'opt the contact back in first',
          { code: 'RECIPIENT_OPTED_OUT' },
        );
      }
      const contact = await this.contacts.findByPhone(organization.id, to, tx);
      const body = render(text, contact);
      const count = countSegments(body);
      const segments = chargeableSegments(count.segments, media.count);

      await this.limits.reserve(tx, organization, segments);

      const now = this.clock.now();
      const id = newId('msg', now.getTime());
      const files = media.files.map((file, position) => ({
        id: newId('med', now.getTime()),
        position,
        contentType: file.contentType,
        size: file.bytes.length,
        filename: file.filename ?? null,
        bytes: file.bytes,
      }));
      await tx.query(
        `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                               encoding, media_urls, media_files, media_count, status, idempotency_key,
                               status_updated_at, created_at)
         VALUES ($1, $2, 'outbound', $3, $4, $5, $6, $7, $8, $9::jsonb, $10::jsonb, $11, 'queued', $12, $13, $13)`,
        [
          id,
          organization.id,
          origin,
          sender.number,
          to,
          body,
          segments,
          count.encoding,
          JSON.stringify(media.urls),
          JSON.stringify(
            files.map(({ id, contentType, size, filename }) => ({ id, contentType, size, filename })),
          ),
          media.count,
          idempotencyKey ?? null,
          now,
        ],
      );
      for (const file of files) {
        await tx.query(
          `INSERT INTO message_media (id, message_id, position, content_type, filename, size, bytes)
           VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [file.id, id, file.position, file.contentType, file.filename, file.size, file.bytes],
        );
      }
      await this.schedule(tx, id, sender);

      const result: SendResult = {
        id,
        status: 'queued',
        from: sender.number,
        to,
        body,
        segments,
        encoding: count.encoding,
        mediaCount: media.count,
        createdAt: now.toISOString(),
      };
      return result;
    });
  }

  private async pickSender(organization: Organization, from: string | undefined): Promise<PhoneNumber> {
    const owned = await this.numbers.list(organization.id);
    if (owned.length === 0) {
      throw ApiError.badRequest(
        'This organization has no phone number to send from; get a number first, then send',
      );
    }
    if (from === undefined) return owned.find((n) => n.isDefault) ?? owned[0]!;
    const normalised = normalisePhone(from, organization.region);
    const match = normalised && owned.find((n) => n.number === normalised);
    if (!match) {
      throw ApiError.badRequest(
        `from must be one of this organization's numbers (${owned.map((n) => n.number).join(', ')})`,
      );
    }
    return match;
  }

  /**
   * Books the sending number's next free slot at the carrier's throughput for its type and enqueues the
   * dispatch for that moment: excess is queued, never dropped.
   */
  private async schedule(tx: Queryable, messageId: string, sender: PhoneNumber): Promise<void> {
    const now = this.clock.now();
    const intervalMs = Math.ceil(1000 / this.carrier.messagesPerSecond(sender.type));
    const [slot] = await tx.query<{ slot: Date }>(
      `INSERT INTO carrier_pacing (number, next_free_at) VALUES ($1, $2::timestamptz + make_interval(secs => $3))
       ON CONFLICT (number) DO UPDATE
         SET next_free_at = GREATEST(carrier_pacing.next_free_at, $2::timestamptz) + make_interval(secs => $3)
       RETURNING next_free_at - make_interval(secs => $3) AS slot`,
      [sender.number, now, intervalMs / 1000],
    );
    await this.jobs.enqueue(
      tx,
      DISPATCH_QUEUE,
      { messageId },
      { runAt: slot!.slot, dedupeKey: `dispatch:${messageId}` },
    );
  }

  // -------------------------------------------------------------------------------------------------------
  // The carrier

  /** The dispatch job: hands a queued message to the carrier and records what it said. Idempotent. */
  async dispatch(messageId: string): Promise<void> {
    const row = await this.row(messageId);
    if (row?.status !== 'queued') return;
    // A STOP that arrived after the message was queued still wins (automatic replies excepted: they are
    // the confirmation of that STOP).
    if (row.origin !== 'auto_reply' && (await this.contacts.isOptedOut(row.organization_id, row.to_number))) {
      await this.finish(row, 'cancelled', {
        errorCode: 'RECIPIENT_OPTED_OUT',
        errorMessage: 'The recipient opted out before the message was sent',
      });
      return;
    }
    const outbound = toCarrierMessage(row);
    const result = await this.carrier.send(outbound);
    if (!result.accepted) {
      await this.finish(row, 'failed', { errorCode: result.errorCode, errorMessage: result.errorMessage });
      return;
    }
    await this.db.transaction(async (tx) => {
      const now = this.clock.now();
      const [updated] = await tx.query<MessageRow>(
        `UPDATE messages SET status = 'sent', carrier = $2, carrier_message_id = $3, sent_at = $4,
                status_updated_at = $4
          WHERE id = $1 AND status = 'queued' RETURNING *`,
        [messageId, this.carrier.name, result.carrierMessageId, now],
      );
      if (!updated) return;
      await this.events.record(tx, MessageSent, {
        organizationId: updated.organization_id,
        data: toMessage(updated, this.clock.now()),
      });
      const planned = this.options.automaticReceipts ? this.carrier.plannedReceipt?.(outbound) : undefined;
      if (planned) {
        await this.jobs.enqueue(
          tx,
          RECEIPT_QUEUE,
          { messageId, status: planned.status },
          { runAt: new Date(now.getTime() + planned.afterSeconds * 1000), dedupeKey: `receipt:${messageId}` },
        );
      }
    });
  }

  private async finish(
    row: MessageRow,
    status: 'failed' | 'cancelled',
    error: { errorCode: string; errorMessage: string },
  ): Promise<void> {
    await this.db.transaction(async (tx) => {
      const [updated] = await tx.query<MessageRow>(
        `UPDATE messages SET status = $2, error_code = $3, error_message = $4, status_updated_at = $5
          WHERE id = $1 AND status = 'queued' RETURNING *`,
        [row.id, status, error.errorCode, error.errorMessage, this.clock.now()],
      );
      if (updated && status === 'failed') {
        await this.events.record(tx, MessageFailed, {
          organizationId: updated.organization_id,
          data: toMessage(updated, this.clock.now()),
        });
      }
    });
  }

  /**
   * A delivery receipt from the carrier: `sent` becomes delivered, failed or undelivered, with its event.
   * The same receipt twice is harmless; a receipt for a message not (yet) sent, or already final with
   * another status, is a 409.
   */
  async applyReceipt(messageId: string, status: ReceiptStatus): Promise<Message> {
    return this.db.transaction(async (tx) => {
      const now = this.clock.now();
      const [updated] = await tx.query<MessageRow>(
        `UPDATE messages SET status = $2, status_updated_at = $3,
                delivered_at = CASE WHEN $2 = 'delivered' THEN $3::timestamptz ELSE delivered_at END,
                error_code = CASE WHEN $2 = 'delivered' THEN NULL ELSE $4 END,
                error_message = CASE WHEN $2 = 'delivered' THEN NULL ELSE $5 END
          WHERE id = $1 AND status = 'sent' RETURNING *`,
        [
          messageId,
          status,
          now,
          status === 'failed' ? 'carrier_failed' : 'carrier_undelivered',
          status === 'failed'
            ? 'The carrier reported the message failed'
            : 'The carrier could not deliver the message to the handset',
        ],
      );
      if (updated) {
        await this.events.record(tx, RECEIPT_EVENTS[status], {
          organizationId: updated.organization_id,
          data: toMessage(updated, this.clock.now()),
        });
        return toMessage(updated, this.clock.now());
      }
      const [current] = await tx.query<MessageRow>('SELECT * FROM messages WHERE id = $1', [messageId]);
      if (current?.direction !== 'outbound') throw ApiError.notFound('Message');
      if (current.status === status) return toMessage(current, this.clock.now());
      throw ApiError.conflict(
        current.status === 'queued'
          ? 'The message has not been handed to the carrier yet; a receipt can only follow a sent message'
          : `The message is already ${current.status}`,
      );
    });
  }

  // -------------------------------------------------------------------------------------------------------
  // Inbound

  /**
   * A text arrived at one of our numbers. Stored as `received`; opt-out, opt-in and help keywords act on the
   * sender and answer with one automatic reply. The carrier's webhook and the test endpoint both call this.
   */
  async receiveInbound(input: { from: string; to: string; text: string }): Promise<{
    message: Message;
    keyword: 'stop' | 'start' | 'help' | null;
    reply: Message | null;
  }> {
    const ours = await this.numbers.findByNumber(normalisePhone(input.to, 'us') ?? input.to.trim());
    if (!ours) throw ApiError.notFound('Number');
    const organization = await this.organizations.get(ours.organizationId);
    const from = normalisePhone(input.from, organization.region);
    if (!from) throw ApiError.badRequest('from must be a valid phone number');
    const word = input.text.trim().toUpperCase();
    const keyword = STOP_KEYWORDS.includes(word)
      ? 'stop'
      : START_KEYWORDS.includes(word)
        ? 'start'
        : HELP_KEYWORDS.includes(word)
          ? 'help'
          : null;

    return this.db.transaction(async (tx) => {
      const now = this.clock.now();
      const count = countSegments(input.text);
      const [row] = await tx.query<MessageRow>(
        `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                               encoding, status, status_updated_at, created_at)
         VALUES ($1, $2, 'inbound', 'carrier', $3, $4, $5, $6, $7, 'received', $8, $8) RETURNING *`,
        [
          newId('msg', now.getTime()),
          organization.id,
          from,
          ours.number,
          input.text,
          count.segments,
          count.encoding,
          now,
        ],
      );
      const message = toMessage(row!, this.clock.now());
      await this.events.record(tx, MessageReceived, {
        organizationId: organization.id,
        data: message,
      });

      let replyText: string | null = null;
      const actor = `sms:${from}`;
      if (keyword === 'stop') {
        const contactId = await this.contacts.ensureContact(tx, organization.id, from);
        const changed = await this.contacts.optOutPhone(
          tx,
          organization.id,
          from,
          contactId,
          'sms_stop',
          `Texted ${word}`,
          actor,
        );
        if (changed) {
          replyText = `${organization.name}: You are unsubscribed and will get no more messages from this number. Reply START to resubscribe.`;
        }
      } else if (keyword === 'start') {
        const contact = await this.contacts.findByPhone(organization.id, from, tx);
        const changed = await this.contacts.optInPhone(
          tx,
          organization.id,
          from,
          contact?.id ?? null,
          'sms_keyword',
          `Texted ${word}`,
          actor,
        );
        if (changed) {
          replyText = `${organization.name}: You are subscribed again. Reply STOP to unsubscribe, HELP for help.`;
        }
      } else if (keyword === 'help') {
        replyText = `${organization.name}: Reply STOP to unsubscribe, START to resubscribe. Msg & data rates may apply.`;
      }

      const reply = replyText ? await this.insertAutoReply(tx, organization.id, ours, from, replyText) : null;
      return { message, keyword, reply };
    });
  }

  /**
   * An automatic keyword reply. It is the confirmation the carriers require, so it is sent even to a number
   * that has just opted out, and it counts against no plan limit (docs/messaging.md).
   */
  private async insertAutoReply(
    tx: Queryable,
    organizationId: string,
    sender: PhoneNumber,
    to: string,
    text: string,
  ): Promise<Message> {
    const now = this.clock.now();
    const count = countSegments(text);
    const [row] = await tx.query<MessageRow>(
      `INSERT INTO messages (id, organization_id, direction, origin, from_number, to_number, body, segments,
                             encoding, status, status_updated_at, created_at)
       VALUES ($1, $2, 'outbound', 'auto_reply', $3, $4, $5, $6, $7, 'queued', $8, $8) RETURNING *`,
      [
        newId('msg', now.getTime()),
        organizationId,
        sender.number,
        to,
        text,
        count.segments,
        count.encoding,
        now,
      ],
    );
    await this.schedule(tx, row!.id, sender);
    return toMessage(row!, this.clock.now());
  }

  // -------------------------------------------------------------------------------------------------------
  // History

  async get(organizationId: string, id: string): Promise<Message> {
    const [row] = await this.db.query<MessageRow>(
      'SELECT * FROM messages WHERE organization_id = $1 AND id = $2',
      [organizationId, id],
    );
    if (!row) throw ApiError.notFound('Message');
    return toMessage(row, this.clock.now());
  }

  list(
    organizationId: string,
    query: PageQueryInput & MessageFilters,
    surface: string,
    region: Region = 'us',
  ): Promise<Page<Message>> {
    const since = parseInstant(query.since, 'since');
    const until = parseInstant(query.until, 'until');
    const number = query.number?.trim()
      ? (normalisePhone(query.number, region) ?? query.number.trim())
      : null;
    const filters = {
      direction: query.direction ?? null,
      status: query.status ?? null,
      number,
      since: since ?? null,
      until: until ?? null,
    };
    const now = this.clock.now();
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.messages.list`,
      keyset: true,
      organizationId,
      filters,
      select: MESSAGE_COLUMNS,
      from: 'messages',
      where: `organization_id = $1
        AND ($2::text IS NULL OR direction = $2)
        AND ($3::text IS NULL OR status = $3)
        AND ($4::text IS NULL OR from_number = $4 OR to_number = $4)
        AND ($5::timestamptz IS NULL OR created_at >= $5)
        AND ($6::timestamptz IS NULL OR created_at < $6)`,
      params: [organizationId, filters.direction, filters.status, number, since ?? null, until ?? null],
      map: (row: MessageRow) => toMessage(row, now),
    });
  }

  private async row(id: string): Promise<MessageRow | undefined> {
    const [row] = await this.db.query<MessageRow>('SELECT * FROM messages WHERE id = $1', [id]);
    return row;
  }
}

// Every column a Message needs; the media bytes stay in message_media.
const MESSAGE_COLUMNS = `id, organization_id, direction, origin, from_number, to_number, body, segments, encoding,
  media_urls, media_files, media_count, status, error_code, error_message, sent_at, delivered_at,
  status_updated_at, created_at`;

function parseInstant(value: string | undefined, name: string): Date | undefined {
  if (value === undefined || value === '') return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw ApiError.badRequest(`${name} must be an ISO 8601 date-time`);
  return date;
}

function toCarrierMessage(row: MessageRow): OutboundForCarrier {
  return {
    id: row.id,
    from: row.from_number,
    to: row.to_number,
    body: row.body,
    mediaUrls: row.media_urls,
    mediaFiles: row.media_files.map(({ contentType, size, filename }) => ({ contentType, size, filename })),
  };
}

/**
 * A `sent` message without a receipt is awaiting its receipt for 72 hours after it was sent, then has none
 * (CONTRACT section 6); every other status has no receipt state.
 */
export function receiptState(row: Pick<MessageRow, 'status' | 'sent_at'>, now: Date): ReceiptState | null {
  if (row.status !== 'sent' || !row.sent_at) return null;
  return now.getTime() - row.sent_at.getTime() < RECEIPT_WAIT_MS ? 'awaiting_receipt' : 'no_receipt';
}

export function toMessage(row: MessageRow, now: Date): Message {
  return {
    id: row.id,
    direction: row.direction,
    status: row.status,
    from: row.from_number,
    to: row.to_number,
    body: row.body,
    segments: row.segments,
    encoding: row.encoding,
    mediaCount: row.media_count,
    media: { urls: row.media_urls ?? [], files: row.media_files ?? [] },
    errorCode: row.error_code,
    errorMessage: row.error_message,
    sentAt: row.sent_at?.toISOString() ?? null,
    deliveredAt: row.delivered_at?.toISOString() ?? null,
    receiptState: receiptState(row, now),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.status_updated_at.toISOString(),
  };
}

export interface MessagingServices {
  messages: MessagingService;
  carrier: Carrier;
}
