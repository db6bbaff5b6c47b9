// Inbound texts: a text to one of our numbers is stored as `received` with its event, and the carriers'
// opt-out, opt-in and help keywords act on the sender and answer with one automatic reply (docs/messaging.md).
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import { normalisePhone } from '../../platform/phone.ts';
import type { ContactService } from '../contacts/index.ts';
import type { NumberService, PhoneNumber } from '../numbers/index.ts';
import type { OrganizationService } from '../organizations/index.ts';
import type { MessageDispatcher } from './dispatch.ts';
import { MessageReceived } from './events.ts';
import { type CountMessages, toMessage } from './message.ts';
import type { Message } from './schemas.ts';
import { countSegments } from './segments.ts';
import type { MessageStore } from './store.ts';

// CTIA and carrier opt-out keywords; matched on the whole text, trimmed, any case (docs/messaging.md).
export const STOP_KEYWORDS = ['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'REVOKE', 'OPTOUT'];
export const START_KEYWORDS = ['START', 'UNSTOP', 'YES'];
export const HELP_KEYWORDS = ['HELP'];

export type Keyword = 'stop' | 'start' | 'help';

export class InboundMessages {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly organizations: OrganizationService;
  private readonly numbers: NumberService;
  private readonly contacts: ContactService;
  private readonly dispatcher: MessageDispatcher;
  private readonly store: MessageStore;
  private readonly countMessages: CountMessages;

  constructor(deps: {
    db: Database;
    clock: Clock;
    events: EventOutbox;
    organizations: OrganizationService;
    numbers: NumberService;
    contacts: ContactService;
    dispatcher: MessageDispatcher;
    store: MessageStore;
    countMessages?: CountMessages;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.events = deps.events;
    this.organizations = deps.organizations;
    this.numbers = deps.numbers;
    this.contacts = deps.contacts;
    this.dispatcher = deps.dispatcher;
    this.store = deps.store;
    this.countMessages = deps.countMessages ?? (() => {});
  }

  /**
   * A text arrived at one of our numbers. Stored as `received`; opt-out, opt-in and help keywords act on the
   * sender and answer with one automatic reply. The carrier's webhook and the test endpoint both call this.
   */
  async receive(input: {
    from: string;
    to: string;
    text: string;
    /** The carrier and its id of the text: a second report of it changes nothing (`duplicate`). */
    carrier?: { name: string; messageId: string };
  }): Promise<{
    message: Message;
    keyword: Keyword | null;
    reply: Message | null;
    duplicate?: true;
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
      const row = await this.store.insertInbound(tx, {
        id: newId('msg', now.getTime()),
        organizationId: organization.id,
        from,
        to: ours.number,
        body: input.text,
        segments: count.segments,
        encoding: count.encoding,
        now,
        carrier: input.carrier,
      });
      if (!row) {
        // The carrier said this before (a webhook retried): nothing is stored, acted on or answered again.
        const id = await this.store.idByCarrierId(tx, input.carrier!.name, input.carrier!.messageId);
        const first = id && (await this.store.find(tx, id));
        if (!first) throw new Error('a duplicate inbound text whose first report is not found');
        return { message: toMessage(first, now), keyword: null, reply: null, duplicate: true as const };
      }
      const message = toMessage(row, this.clock.now());
      this.countMessages('received');
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
    const row = await this.store.insertAutoReply(tx, {
      id: newId('msg', now.getTime()),
      organizationId,
      from: sender.number,
      to,
      body: text,
      segments: count.segments,
      encoding: count.encoding,
      now,
    });
    await this.dispatcher.schedule(tx, row.id, sender);
    return toMessage(row, this.clock.now());
  }
}
