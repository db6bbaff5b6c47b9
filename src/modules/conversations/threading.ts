// Threading: every text, call, voicemail and AI agent call between a phone and one of our numbers joins the
// thread of that pair as its event is recorded, in the recording transaction (an EventObserver), so a thread
// and its items commit or roll back with the change itself. The conversations module reads only the events'
// declared data, never the messaging, voice or agents modules' tables.
//
// Which events: a message when received, handed to the carrier (sent), or refused at dispatch (failed), and
// its receipts (delivered, undelivered) update the item; a call when it ended (call.completed; a call an AI
// agent took is threaded as the agent call instead); a voicemail when left; an agent call when it ended.
// An inbound item reopens a closed thread: the customer wrote or called again.
import type { Clock } from '../../platform/clock.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { EventObserver, EventOutbox, ObservedEvent } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import { ConversationCreated } from './events.ts';
import type { ConversationStore, NewThreadRow, ThreadActivity, ThreadItem } from './store.ts';

export const THREADED_EVENTS = [
  'message.received',
  'message.sent',
  'message.failed',
  'message.delivered',
  'message.undelivered',
  'call.completed',
  'voicemail.created',
  'agent_call.completed',
] as const;

const RECEIPTS = new Set(['message.delivered', 'message.undelivered']);
const E164 = /^\+[1-9]\d{6,14}$/;

type Data = Record<string, unknown>;
/** The contact id of each of these phones of an organization that has a contact (phone → id). */
export type ContactLookup = (
  tx: Queryable,
  organizationId: string,
  phones: string[],
) => Promise<Map<string, string>>;
const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const integer = (value: unknown): number | null => (typeof value === 'number' ? value : null);

/** The thread item an event stands for, or null when it is not between a phone and our number. */
export function itemOf(type: string, organizationId: string, data: Data): ThreadItem | null {
  const direction = data.direction === 'outbound' ? 'outbound' : 'inbound';
  const from = text(data.from);
  const to = text(data.to);
  const id = text(data.id);
  if (!from || !to || !id) return null;
  // Inbound: the phone called or wrote our number; outbound: our number called or wrote the phone.
  const phone = direction === 'inbound' ? from : to;
  const number = direction === 'inbound' ? to : from;
  // An extension-to-extension call, or a call to a SIP address, is not a conversation with a phone.
  if (!E164.test(phone) || !E164.test(number)) return null;
  const base = { organizationId, phone, number, itemId: id, direction } as const;
  const at = (value: unknown) => new Date(String(value));
  if (type.startsWith('message.')) {
    return {
      ...base,
      kind: 'message',
      at: at(data.createdAt),
      details: {
        status: text(data.status),
        body: text(data.body) ?? '',
        mediaCount: integer(data.mediaCount) ?? 0,
      },
    };
  }
  if (type === 'call.completed') {
    if (data.agentId) return null;
    return {
      ...base,
      kind: 'call',
      at: at(data.startedAt),
      details: { status: text(data.status), durationSeconds: integer(data.durationSeconds) },
    };
  }
  if (type === 'voicemail.created') {
    return {
      ...base,
      direction: 'inbound',
      phone: from,
      number: to,
      kind: 'voicemail',
      at: at(data.createdAt),
      details: { durationSeconds: integer(data.durationSeconds) },
    };
  }
  if (type === 'agent_call.completed') {
    return {
      ...base,
      kind: 'agent_call',
      at: at(data.startedAt),
      details: {
        status: text(data.status),
        durationSeconds: integer(data.durationSeconds),
        agentId: text(data.agentId),
        summary: text(data.summary),
      },
    };
  }
  return null;
}

export class Threading {
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly store: ConversationStore;
  /** Names the contact of a new thread (its conversation.created carries contactId). */
  private readonly contactsOf: ContactLookup;

  constructor(deps: {
    clock: Clock;
    events: EventOutbox;
    store: ConversationStore;
    contactsOf: ContactLookup;
  }) {
    this.clock = deps.clock;
    this.events = deps.events;
    this.store = deps.store;
    this.contactsOf = deps.contactsOf;
  }

  observer(): EventObserver {
    return {
      types: THREADED_EVENTS,
      observe: async (tx: Queryable, type: string, events: ObservedEvent[]) => {
        const items = events
          .map((event) => itemOf(type, event.organizationId, event.data))
          // An item without a time cannot be placed in a timeline; it must not fail the change either.
          .filter((item): item is ThreadItem => item !== null && !Number.isNaN(item.at.getTime()));
        // A receipt changes a text already threaded (when it was sent) and moves no thread: its item only.
        if (RECEIPTS.has(type)) await this.store.updateItems(tx, items);
        else await this.thread(tx, items, true);
      },
    };
  }

  /**
   * Threads `items` inside `tx`: makes or moves each pair's thread, records conversation.created for the new
   * ones, and puts the items on the timelines (see ConversationStore.thread for `update`). One statement for
   * the whole batch, and the contacts' read and the events' insert only when threads were made.
   */
  async thread(tx: Queryable, items: ThreadItem[], update: boolean): Promise<void> {
    if (items.length === 0) return;
    const now = this.clock.now();
    const pairs = new Map<string, ThreadActivity>();
    for (const item of items) {
      const key = `${item.organizationId}\n${item.phone}\n${item.number}`;
      const inbound = item.direction === 'inbound' ? item.at : null;
      const pair = pairs.get(key);
      if (!pair) {
        pairs.set(key, {
          id: newId('conv', now.getTime()),
          organizationId: item.organizationId,
          phone: item.phone,
          number: item.number,
          lastActivityAt: item.at,
          lastInboundAt: inbound,
        });
        continue;
      }
      if (item.at > pair.lastActivityAt) pair.lastActivityAt = item.at;
      if (inbound && (!pair.lastInboundAt || inbound > pair.lastInboundAt)) pair.lastInboundAt = inbound;
    }
    // Always in one order, so that two batches sharing threads (two workers' dispatches) lock them in the same
    // order and cannot deadlock.
    const ordered = [...pairs.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, pair]) => pair);
    const made = await this.store.thread(tx, ordered, items, update, now);
    if (made.length === 0) return;
    // A thread this batch made holds only the batch's items: its conversation.created is told from them.
    const contactOf = await this.contactIds(tx, made);
    const itemsOf = new Map<string, ThreadItem[]>();
    for (const item of items) {
      const key = `${item.organizationId}\n${item.phone}\n${item.number}`;
      const same = itemsOf.get(key);
      if (same) same.push(item);
      else itemsOf.set(key, [item]);
    }
    await this.events.recordMany(
      tx,
      ConversationCreated,
      made.map((row) => {
        const own = itemsOf.get(`${row.organization_id}\n${row.phone}\n${row.number}`) ?? [];
        const last = own
          .filter((item) => item.kind === 'message')
          .sort((a, b) => b.at.getTime() - a.at.getTime() || (a.itemId < b.itemId ? 1 : -1))[0];
        return {
          organizationId: row.organization_id,
          data: {
            id: row.id,
            contactId: contactOf.get(`${row.organization_id}\n${row.phone}`) ?? null,
            phone: row.phone,
            number: row.number,
            status: 'open' as const,
            unreadCount: own.filter((item) => item.direction === 'inbound').length,
            assignedTo: null,
            lastActivityAt: row.last_activity_at.toISOString(),
            lastMessage: last
              ? {
                  id: last.itemId,
                  direction: last.direction,
                  body: String(last.details.body ?? ''),
                  status: String(last.details.status ?? ''),
                  mediaCount: Number(last.details.mediaCount ?? 0),
                  at: last.at.toISOString(),
                }
              : null,
            createdAt: row.created_at.toISOString(),
          },
        };
      }),
    );
  }

  /** The contacts of new threads, one read per organization, keyed `organizationId\nphone`. */
  private async contactIds(tx: Queryable, threads: NewThreadRow[]): Promise<Map<string, string>> {
    const phonesOf = new Map<string, string[]>();
    for (const thread of threads) {
      phonesOf.set(thread.organization_id, [...(phonesOf.get(thread.organization_id) ?? []), thread.phone]);
    }
    const found = new Map<string, string>();
    for (const [organizationId, phones] of phonesOf) {
      for (const [phone, id] of await this.contactsOf(tx, organizationId, phones)) {
        found.set(`${organizationId}\n${phone}`, id);
      }
    }
    return found;
  }
}
