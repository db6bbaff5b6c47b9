// Message history: one message, or an organization's messages newest first, filtered by direction, status,
// number and time, through the one paginator (keyset-capable, so a cursor survives new messages arriving).
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import type { Region } from '../organizations/index.ts';
import { toMessage } from './message.ts';
import type { Direction, Message, MessageStatus } from './schemas.ts';
import type { MessageRow, MessageStore } from './store.ts';

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
      map: (row: MessageRow) => toMessage(row, now),
    });
  }
}

function parseInstant(value: string | undefined, name: string): Date | undefined {
  if (value === undefined || value === '') return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw ApiError.badRequest(`${name} must be an ISO 8601 date-time`);
  return date;
}
