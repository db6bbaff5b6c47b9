// Conversations: the inbox (threads newest activity first, filtered), a thread and its timeline, a reply in
// the thread (a send through the messaging module, so its rules, limits and opt-out refusals apply exactly as
// to any send), mark read, assign to a member, close and reopen. Every method takes the organization first;
// the console's inbox calls the same methods through the portal twin.
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import type { ContactService } from '../contacts/index.ts';
import type { UserService } from '../identity/index.ts';
import type { MessagingService } from '../messaging/index.ts';
import type { Organization, Region } from '../organizations/index.ts';
import { ConversationAssigned, ConversationClosed } from './events.ts';
import type {
  Conversation,
  ConversationFilterInput,
  ReplyInput,
  TimelineItem,
  UpdateInput,
} from './schemas.ts';
import type { ConversationRow, ConversationStore, ItemRow } from './store.ts';
import { Threading } from './threading.ts';

const iso = (value: Date | string) => new Date(value).toISOString();

export function toConversation(row: ConversationRow, contactId: string | null): Conversation {
  const last = row.last_message;
  return {
    id: row.id,
    contactId,
    phone: row.phone,
    number: row.number,
    status: row.status,
    unreadCount: row.unread_count,
    assignedTo: row.assigned_to,
    lastActivityAt: iso(row.last_activity_at),
    lastMessage: last && {
      id: last.id,
      direction: last.direction,
      body: String(last.details.body ?? ''),
      status: String(last.details.status ?? ''),
      mediaCount: Number(last.details.mediaCount ?? 0),
      at: iso(last.at),
    },
    createdAt: iso(row.created_at),
  };
}

function toItem(row: ItemRow): TimelineItem {
  const details = row.details;
  const field = <T>(name: string) => (details[name] ?? null) as T | null;
  return {
    type: row.kind,
    id: row.item_id,
    at: iso(row.at),
    direction: row.direction,
    status: field<string>('status'),
    body: field<string>('body'),
    mediaCount: field<number>('mediaCount'),
    durationSeconds: field<number>('durationSeconds'),
    agentId: field<string>('agentId'),
    summary: field<string>('summary'),
  };
}

export class ConversationService {
  readonly threading: Threading;
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly pagination: Paginator;
  private readonly store: ConversationStore;
  private readonly messages: MessagingService;
  private readonly contacts: ContactService;
  private readonly users: UserService;

  constructor(deps: {
    db: Database;
    clock: Clock;
    events: EventOutbox;
    pagination: Paginator;
    store: ConversationStore;
    messages: MessagingService;
    contacts: ContactService;
    users: UserService;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.events = deps.events;
    this.pagination = deps.pagination;
    this.store = deps.store;
    this.messages = deps.messages;
    this.contacts = deps.contacts;
    this.users = deps.users;
    this.threading = new Threading({
      clock: deps.clock,
      events: deps.events,
      store: deps.store,
      contactsOf: (tx, organizationId, phones) => this.contacts.idsByPhone(organizationId, phones, tx),
    });
  }

  /** The inbox, newest activity first (offset or keyset). */
  async list(
    organizationId: string,
    query: PageQueryInput & ConversationFilterInput,
    surface: string,
    region: Region,
  ): Promise<Page<Conversation>> {
    const number = query.number?.trim()
      ? (normalisePhone(query.number, region) ?? query.number.trim())
      : null;
    const filters = {
      status: query.status ?? null,
      unread: query.unread ?? null,
      assignedTo: query.assignedTo ?? null,
      number,
    };
    const page = await this.pagination.list(this.db, query, {
      endpoint: `${surface}.conversations.list`,
      keyset: true,
      organizationId,
      filters,
      ...this.store.inboxQuery(organizationId, filters),
      map: (row: ConversationRow) => row,
    });
    return { ...page, data: await this.withContacts(this.db, organizationId, page.data) };
  }

  async get(organizationId: string, id: string, tx: Queryable = this.db): Promise<Conversation> {
    const row = await this.store.find(tx, organizationId, id);
    if (!row) throw ApiError.notFound('Conversation');
    const [conversation] = await this.withContacts(tx, organizationId, [row]);
    return conversation!;
  }

  /** A thread's items, newest first (offset or keyset). */
  async timeline(
    organizationId: string,
    id: string,
    query: PageQueryInput,
    surface: string,
  ): Promise<Page<TimelineItem>> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Conversation');
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.conversations.timeline`,
      keyset: true,
      organizationId,
      filters: { conversation: id },
      ...this.store.timelineQuery(id),
      map: toItem,
    });
  }

  /**
   * Replies in the thread: a send from the thread's number to its phone through the messaging module (its
   * validation, merge variables, opt-out refusal, plan limits and idempotency). The queued reply joins the
   * timeline at once; its dispatch and receipts update it.
   */
  async reply(
    organization: Organization,
    id: string,
    input: ReplyInput,
    origin: 'api' | 'portal',
    idempotencyKey?: string,
  ) {
    const thread = await this.get(organization.id, id);
    const sent = await this.messages.send(
      organization,
      {
        to: thread.phone,
        from: thread.number,
        message: input.message,
        media: input.mediaUrls,
        mediaFiles: input.mediaFiles,
      },
      origin,
      idempotencyKey,
    );
    const { result } = sent;
    await this.db.transaction((tx) =>
      this.threading.thread(
        tx,
        [
          {
            organizationId: organization.id,
            phone: thread.phone,
            number: thread.number,
            kind: 'message',
            itemId: result.id,
            at: new Date(result.createdAt),
            direction: 'outbound',
            details: { status: result.status, body: result.body, mediaCount: result.mediaCount },
          },
        ],
        false,
      ),
    );
    return sent;
  }

  /** Everything in the thread up to now is read: its unreadCount is 0 until something else comes in. */
  async markRead(organizationId: string, id: string): Promise<Conversation> {
    if (!(await this.store.markRead(this.db, organizationId, id, this.clock.now()))) {
      throw ApiError.notFound('Conversation');
    }
    return this.get(organizationId, id);
  }

  /**
   * Closes or reopens a thread, or assigns it to a member (null: nobody). The assignee must be a member of
   * the organization (400 otherwise). conversation.closed when it closes, conversation.assigned when the
   * assignee changes; a change to what it already is records nothing.
   */
  async update(organizationId: string, id: string, input: UpdateInput): Promise<Conversation> {
    return this.db.transaction(async (tx) => {
      const current = await this.store.lock(tx, organizationId, id);
      if (!current) throw ApiError.notFound('Conversation');
      const assignedTo = input.assignedTo === undefined ? current.assigned_to : input.assignedTo;
      if (input.assignedTo && !(await this.users.roleIn(input.assignedTo, organizationId, tx))) {
        throw ApiError.badRequest('assignedTo must be the user id of a member of this organization');
      }
      const status = input.status ?? current.status;
      const now = this.clock.now();
      const closing = status === 'closed' && current.status === 'open';
      const reopening = status === 'open' && current.status === 'closed';
      await this.store.update(
        tx,
        id,
        { status, assignedTo, closedAt: closing ? now : reopening ? null : undefined },
        now,
      );
      const conversation = await this.get(organizationId, id, tx);
      if (assignedTo !== current.assigned_to) {
        await this.events.record(tx, ConversationAssigned, { organizationId, data: conversation });
      }
      if (closing) await this.events.record(tx, ConversationClosed, { organizationId, data: conversation });
      return conversation;
    });
  }

  private async withContacts(
    db: Queryable,
    organizationId: string,
    rows: ConversationRow[],
  ): Promise<Conversation[]> {
    const contactOf = await this.contacts.idsByPhone(
      organizationId,
      [...new Set(rows.map((row) => row.phone))],
      db,
    );
    return rows.map((row) => toConversation(row, contactOf.get(row.phone) ?? null));
  }
}

export interface ConversationServices {
  conversations: ConversationService;
}
