// Sending: a message is checked (recipient, sender, merge variables, media, opt-out), counted against the
// plan limits and queued for its paced slot, all in the one transaction the idempotency key guards, so a
// refused or replayed send leaves nothing behind. A send with `sendAt` (or its own quiet hours, closed now) is
// stored as scheduled instead and counted against the limits only when it leaves (scheduled.ts). With
// `trackLinks`, its links are shortened to tracked links before it is counted, so it is charged as sent.
// A plain send (due now, none of those, no idempotency key) is first tried as one statement without a
// transaction (sendPlainly); whatever that statement cannot send, it leaves untouched for the path above.
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Idempotency } from '../../platform/idempotency.ts';
import { newId } from '../../platform/ids.ts';
import { normalisePhone } from '../../platform/phone.ts';
import { quietHoursWindow } from '../../platform/time-zones.ts';
import type { ContactService } from '../contacts/index.ts';
import type { LinkService } from '../links/index.ts';
import type { NumberService, Sender } from '../numbers/index.ts';
import type { Organization } from '../organizations/index.ts';
import type { MessageDispatcher } from './dispatch.ts';
import { isPlainSendUncounted, type SendLimits, uncheckedRefusal } from './limits.ts';
import { validateMedia } from './media.ts';
import { render, unsupportedMergeVariables } from './merge-variables.ts';
import { quietOpening, type ScheduledMessages, scheduledTime } from './scheduled.ts';
import type { SendInput, SendResult } from './schemas.ts';
import { chargeableSegments, countSegments } from './segments.ts';
import type { MessageStore, OutboundValues } from './store.ts';

export class MessageSender {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly idempotency: Idempotency;
  private readonly numbers: NumberService;
  private readonly contacts: ContactService;
  private readonly limits: SendLimits;
  private readonly dispatcher: MessageDispatcher;
  private readonly store: MessageStore;
  private readonly scheduled: ScheduledMessages;
  private readonly links: LinkService;

  constructor(deps: {
    db: Database;
    clock: Clock;
    idempotency: Idempotency;
    numbers: NumberService;
    contacts: ContactService;
    limits: SendLimits;
    dispatcher: MessageDispatcher;
    store: MessageStore;
    scheduled: ScheduledMessages;
    links: LinkService;
  }) {
    this.db = deps.db;
    this.links = deps.links;
    this.scheduled = deps.scheduled;
    this.clock = deps.clock;
    this.idempotency = deps.idempotency;
    this.numbers = deps.numbers;
    this.contacts = deps.contacts;
    this.limits = deps.limits;
    this.dispatcher = deps.dispatcher;
    this.store = deps.store;
  }

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
    const unsupported = unsupportedMergeVariables(text);
    if (unsupported) throw unsupported;
    const media = await validateMedia(input);
    if (text.trim() === '' && media.count === 0) {
      throw ApiError.badRequest('A message needs text (message) or media (media or mediaFiles)');
    }
    const requestedAt =
      input.sendAt === undefined ? undefined : scheduledTime(input.sendAt, this.clock.now());
    const quiet = quietHoursWindow(input.quietHours);
    const plain =
      requestedAt === undefined &&
      quiet === undefined &&
      media.count === 0 &&
      !input.trackLinks &&
      idempotencyKey === undefined &&
      !text.includes('{{');
    if (plain) {
      const result = await this.sendPlainly(organization, sender, to, text, origin);
      if (result) return { result, replayed: false };
    }

    const write = {
      organizationId: organization.id,
      operation: 'messages.send',
      key: idempotencyKey,
      request: input,
    };
    return this.idempotency.run(write, async (tx): Promise<SendResult> => {
      const compose = (recipient: ReturnType<ContactService['recipientOf']>) => {
        if (recipient.optedOut) {
          throw new ApiError(
            403,
            `${to} has opted out of messages from this organization (texted STOP or was opted out); ` +
              'opt the contact back in first',
            { code: 'RECIPIENT_OPTED_OUT' },
          );
        }
        const rendered = render(text, recipient.contact);
        const shortened = input.trackLinks ? this.links.shorten(rendered) : { body: rendered, links: [] };
        const count = countSegments(shortened.body);
        return { ...shortened, count, segments: chargeableSegments(count.segments, media.count) };
      };

      let composed: ReturnType<typeof compose>;
      let sendAt: Date | undefined;
      if (requestedAt === undefined && quiet === undefined) {
        // Due now whoever the recipient is: it is read in the account lock's statement, one round trip for both.
        await this.limits.reserveWith(
          tx,
          organization,
          this.contacts.recipientRead(organization.id, to),
          async (row) => {
            composed = compose(this.contacts.recipientOf(row));
            return { messages: 1, segments: composed.segments };
          },
        );
      } else {
        const recipient = await this.contacts.recipient(organization.id, to, tx);
        composed = compose(recipient);
        const now = this.clock.now();
        // Due now or at sendAt, unless the message's quiet hours are closed then: it waits for them to open.
        const dueAt = quietOpening(
          requestedAt ?? now,
          { timezone: recipient.contact?.timezone, phone: to },
          quiet,
        );
        sendAt = dueAt > now ? dueAt : undefined;
        // A scheduled message counts against the limits when it leaves, not now.
        if (!sendAt) await this.limits.reserve(tx, organization, composed.segments);
      }
      const { body, links, count, segments } = composed!;
      const now = this.clock.now();

      const files = media.files.map((file, position) => ({
        id: newId('med', now.getTime()),
        position,
        contentType: file.contentType,
        size: file.bytes.length,
        filename: file.filename ?? null,
        bytes: file.bytes,
      }));
      const message = outbound(
        organization,
        origin,
        sender,
        to,
        { body, segments, encoding: count.encoding },
        now,
        {
          mediaUrls: media.urls,
          mediaFiles: files.map(({ id, contentType, size, filename }) => ({
            id,
            contentType,
            size,
            filename,
          })),
          mediaCount: media.count,
          idempotencyKey: idempotencyKey ?? null,
          schedule: sendAt && { sendAt, quietHours: input.quietHours ?? null },
        },
      );
      const { id } = message;
      // Due now: the message, its paced slot and its dispatch job in one statement.
      if (sendAt) await this.store.insertOutbound(tx, message);
      else await this.dispatcher.insertAndSchedule(tx, this.store.outboundInsert(message), id, sender);
      for (const file of files) await this.store.insertMedia(tx, id, file);
      const owner = { organizationId: organization.id, campaignId: null, messageId: id, recipientPhone: to };
      await this.links.save(tx, [{ owner, links }]);
      if (sendAt) await this.scheduled.schedule(tx, id, sendAt);

      return sendResult(message);
    });
  }

  /**
   * A plain send (due now; no merge variables, media, tracked links or idempotency key) of a paid organization
   * past its first 72 hours, as one statement without a transaction around it: the limit checks with the
   * recipient's opt-out (SendLimits.plainTerms), the message, its paced slot and its dispatch job
   * (docs/messaging.md, "A plain send in one statement"). Undefined when that statement wrote nothing (a
   * limit reached, the recipient opted out, the organization changed since the request read it): the full
   * path then judges the send and answers as it always did.
   */
  private async sendPlainly(
    organization: Organization,
    sender: Sender,
    to: string,
    text: string,
    origin: 'api' | 'portal',
  ): Promise<SendResult | undefined> {
    const count = countSegments(text);
    const segments = chargeableSegments(count.segments, 0);
    const terms = this.limits.plainTerms(organization, segments);
    if (!terms) return undefined;
    const message = outbound(
      organization,
      origin,
      sender,
      to,
      { body: text, segments, encoding: count.encoding },
      terms.now,
    );
    const gate = {
      ctes: this.limits.plainGate(terms, this.contacts.optOutRead(organization.id, to)),
      after: 'plain_send',
    };
    try {
      const insert = this.store.outboundInsert(message, gate.after);
      if (!(await this.dispatcher.insertAndSchedule(this.db, insert, message.id, sender, gate)))
        return undefined;
    } catch (error) {
      if (isPlainSendUncounted(error)) return undefined;
      throw uncheckedRefusal(error, false);
    }
    return sendResult(message);
  }

  private async pickSender(organization: Organization, from: string | undefined): Promise<Sender> {
    const owned = await this.numbers.senders(organization.id);
    if (owned.length === 0) {
      throw ApiError.badRequest(
        'This organization has no phone number to send from; get a number first, then send',
      );
    }
    if (from === undefined) return owned.find((number) => number.isDefault) ?? owned[0]!;
    const normalised = normalisePhone(from, organization.region);
    const match = normalised && owned.find((number) => number.number === normalised);
    if (!match) {
      throw ApiError.badRequest(
        `from must be one of this organization's numbers (${owned.map((number) => number.number).join(', ')})`,
      );
    }
    return match;
  }
}

/** The row of a message of `organization` from `sender` to `to`, without media or key unless `more` gives them. */
function outbound(
  organization: Organization,
  origin: 'api' | 'portal',
  sender: Sender,
  to: string,
  text: Pick<OutboundValues, 'body' | 'segments' | 'encoding'>,
  now: Date,
  more: Partial<
    Pick<OutboundValues, 'mediaUrls' | 'mediaFiles' | 'mediaCount' | 'idempotencyKey' | 'schedule'>
  > = {},
): OutboundValues {
  return {
    id: newId('msg', now.getTime()),
    organizationId: organization.id,
    origin,
    from: sender.number,
    to,
    ...text,
    mediaUrls: [],
    mediaFiles: [],
    mediaCount: 0,
    idempotencyKey: null,
    now,
    ...more,
  };
}

/** What a send answers for the message it wrote: queued, or scheduled when it has a schedule. */
function sendResult(message: OutboundValues): SendResult {
  const sendAt = message.schedule?.sendAt;
  return {
    id: message.id,
    status: sendAt ? 'scheduled' : 'queued',
    from: message.from,
    to: message.to,
    body: message.body,
    segments: message.segments,
    encoding: message.encoding,
    mediaCount: message.mediaCount,
    createdAt: message.now.toISOString(),
    ...(sendAt && { sendAt: sendAt.toISOString() }),
  };
}
