// Where an export's rows come from: each resource's own list, walked page by page exactly as a client of its
// endpoint would (keyset where the endpoint has it, offset for campaign recipients), so every row of a file is
// the row its list endpoint answers, in the same order, and building holds one page at a time.
import { ApiError } from '../../platform/errors.ts';
import type { Page, PageQueryInput } from '../../platform/pagination.ts';
import { parseInstant } from '../../platform/time-window.ts';
import type { CampaignService } from '../campaigns/index.ts';
import type { ContactService } from '../contacts/index.ts';
import { MESSAGE_STATUSES, type MessagingService } from '../messaging/index.ts';
import type { CallService } from '../voice/index.ts';
import type { ExportFiltersInput, ExportResource } from './schemas.ts';

/** Rows per page while walking a list (the lists' own maximum). */
const PAGE = 100;
const SURFACE = 'export';

type Filters = ExportFiltersInput;
type Fetch = (query: PageQueryInput) => Promise<Page<unknown>>;

export interface RowSource {
  /** The filters this resource takes (anything else is a 400 naming the filter). */
  filters: readonly (keyof Filters)[];
  /** Fetches one page of the list with these filters: `{limit, cursor}` or `{limit, page}`. */
  fetch(organizationId: string, filters: Filters): Fetch;
  keyset: boolean;
}

export function exportSources(deps: {
  messages: MessagingService;
  contacts: ContactService;
  calls: CallService;
  campaigns: CampaignService;
}): Record<ExportResource, RowSource> {
  return {
    messages: {
      filters: ['direction', 'status', 'number', 'since', 'until'],
      keyset: true,
      fetch: (organizationId, f) => (query) =>
        deps.messages.list(
          organizationId,
          {
            ...query,
            direction: f.direction,
            status: f.status as never,
            number: f.number,
            since: f.since,
            until: f.until,
          },
          SURFACE,
        ) as Promise<Page<unknown>>,
    },
    contacts: {
      filters: ['optedOut', 'search'],
      keyset: true,
      fetch: (organizationId, f) => (query) =>
        deps.contacts.list(
          organizationId,
          { ...query, optedOut: f.optedOut, search: f.search },
          SURFACE,
        ) as Promise<Page<unknown>>,
    },
    calls: {
      filters: ['since'],
      keyset: true,
      fetch: (organizationId, f) => (query) =>
        deps.calls.page(organizationId, { ...query, since: f.since }, SURFACE) as Promise<Page<unknown>>,
    },
    campaign_recipients: {
      filters: ['campaignId'],
      keyset: false,
      fetch: (organizationId, f) => (query) =>
        deps.campaigns.recipients(organizationId, f.campaignId!, query, SURFACE) as Promise<Page<unknown>>,
    },
  };
}

/**
 * Refuses filters the resource does not take or cannot read, with the 400 its list endpoint would give, before
 * anything is queued; then asks the list for one row, so a refusal the list itself makes (a campaign that is
 * not the organization's: 404) comes now rather than from the job.
 */
export async function checkFilters(
  source: RowSource,
  resource: ExportResource,
  organizationId: string,
  filters: Filters,
): Promise<void> {
  for (const name of Object.keys(filters) as (keyof Filters)[]) {
    if (filters[name] !== undefined && !source.filters.includes(name)) {
      throw ApiError.badRequest(`filters.${name} does not apply to ${resource}`);
    }
  }
  if (resource === 'campaign_recipients' && !filters.campaignId) {
    throw ApiError.badRequest('filters.campaignId is required for campaign_recipients');
  }
  for (const name of ['since', 'until'] as const) parseInstant(filters[name], `filters.${name}`);
  if (filters.status !== undefined && !(MESSAGE_STATUSES as readonly string[]).includes(filters.status)) {
    throw ApiError.badRequest(`filters.status must be one of ${MESSAGE_STATUSES.join(', ')}`);
  }
  const fetch = source.fetch(organizationId, filters);
  await fetch(source.keyset ? { limit: 1, cursor: '' } : { limit: 1, page: 1 });
}

/** Every row of the list, newest first, one page in memory at a time. */
export async function* walk(
  source: RowSource,
  organizationId: string,
  filters: Filters,
): AsyncGenerator<unknown> {
  const fetch = source.fetch(organizationId, filters);
  if (source.keyset) {
    let cursor = '';
    for (;;) {
      const page = await fetch({ limit: PAGE, cursor });
      yield* page.data;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }
  for (let number = 1; ; number++) {
    const page = await fetch({ limit: PAGE, page: number });
    yield* page.data;
    if (page.pagination.totalPages === null || number >= page.pagination.totalPages) return;
  }
}
