// Message history: one message, or an organization's messages newest first, filtered by direction, status,
// number and time, through the one paginator (keyset-capable, so a cursor survives new messages arriving).
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import { hourlyBuckets, parseInstant, timeWindow } from '../../platform/time-window.ts';
import type { Region } from '../organizations/index.ts';
import { toMessage } from './message.ts';
import type { Direction, Message, MessageHourly, MessageStats, MessageStatus } from './schemas.ts';
import type { MessageStore, MessageViewRow } from './store.ts';

export interface MessageFilters {
  direction?: Direction;
  status?: MessageStatus;
  number?: string;
  since?: string;
  until?: string;
}

export class MessageHistory {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly store: MessageStore;

  constructor(deps: { db: Database; clock: Clock; pagination: Paginator; store: MessageStore }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
    this.store = deps.store;
  }

  async get(organizationId: string, id: string): Promise<Message> {
    const row = await this.store.findInOrganization(this.db, organizationId, id);
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
    // Also what a cursor is bound to: a cursor from one filtering is refused by another.
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
      ...this.store.historyQuery(organizationId, filters),
      map: (row: MessageViewRow) => toMessage(row, now),
    });
  }

  /**
   * Counts of the messages created in [since, until) (default: the last 24 hours up to now), by status for
   * outbound and in all for inbound, with the delivery rate of those whose fate is known.
   */
  async stats(organizationId: string, query: { since?: string; until?: string }): Promise<MessageStats> {
    const { since, until } = timeWindow(query, this.clock.now(), { defaultDays: 1, maxDays: STATS_MAX_DAYS });
    const outbound = { total: 0, queued: 0, sent: 0, delivered: 0, failed: 0, undelivered: 0, cancelled: 0 };
    let inbound = 0;
    for (const row of await this.store.countsByStatus(this.db, organizationId, since, until)) {
      if (row.direction === 'inbound') {
        inbound += row.n;
        continue;
      }
      // A scheduled message counts nowhere until it leaves (docs/messaging.md, "Scheduled messages").
      if (row.status === 'scheduled') continue;
      outbound.total += row.n;
      if (row.status in outbound) outbound[row.status as keyof typeof outbound] += row.n;
    }
    const settled = outbound.delivered + outbound.failed + outbound.undelivered;
    return {
      since: since.toISOString(),
      until: until.toISOString(),
      outbound,
      inbound: { total: inbound },
      deliveryRate: settled === 0 ? null : outbound.delivered / settled,
    };
  }

  /** The same counts hour by hour (GET /messages/stats/hourly), for the dashboard's charts. */
  async hourly(organizationId: string, query: { since?: string; until?: string }): Promise<MessageHourly> {
    const window = timeWindow(query, this.clock.now(), { defaultDays: 1, maxDays: STATS_MAX_DAYS });
    const buckets = hourlyBuckets(window, () => ({ outbound: 0, inbound: 0, delivered: 0, failed: 0 }));
    for (const row of await this.store.countsByHour(this.db, organizationId, window.since, window.until)) {
      const bucket = buckets[row.hour];
      if (!bucket) continue;
      if (row.direction === 'inbound') bucket.inbound += row.n;
      else if (row.status !== 'scheduled') {
        bucket.outbound += row.n;
        if (row.status === 'delivered') bucket.delivered += row.n;
        if (row.status === 'failed' || row.status === 'undelivered') bucket.failed += row.n;
      }
    }
    return { since: window.since.toISOString(), until: window.until.toISOString(), buckets };
  }
}

/** The longest window GET /messages/stats counts over: an index range scan, kept to what a dashboard asks. */
export const STATS_MAX_DAYS = 31;
