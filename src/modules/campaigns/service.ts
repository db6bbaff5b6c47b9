// Campaigns: a text sent to the members of contact lists (CONTRACT section 8). This file holds what a person
// does with a campaign (create, edit, launch, pause, resume, cancel, delete, read its statistics); engine.ts
// holds the sending. Every state change and its event are written in one transaction under the campaign's
// row lock, so two requests (or a request and the engine) never both act on one state.
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import type { JobQueue } from '../../platform/jobs.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import { canonicalTimeZone, quietHoursWindow } from '../../platform/time-zones.ts';
import type { LinkService } from '../links/index.ts';
import {
  checkHostedMediaUrl,
  type MessagingService,
  parseMergeTags,
  render,
  unsupportedMergeVariables,
} from '../messaging/index.ts';
import type { NumberService, PhoneNumber } from '../numbers/index.ts';
import type { Organization, OrganizationService } from '../organizations/index.ts';
import { CampaignCancelled, CampaignPaused, CampaignStarted } from './events.ts';
import { FollowUpStore, type RetryInclude } from './follow-up-store.ts';
import type {
  Campaign,
  CampaignAnalytics,
  CampaignCreateInput,
  CampaignListItem,
  CampaignRecipient,
  CampaignUpdateInput,
  DeliveryStatsValue,
} from './schemas.ts';
import {
  type CampaignRow,
  CampaignStore,
  type CampaignValues,
  type CampaignWithCounts,
  type CountsRow,
  type RecipientRow,
} from './store.ts';

export const RUN_QUEUE = 'campaigns.run';
export const START_QUEUE = 'campaigns.start';
/** A sent message with no receipt after this long is "no receipt" rather than "awaiting" (spec). */
export const RECEIPT_WAIT_MS = 72 * 60 * 60 * 1000;
const DEFAULT_QUIET_HOURS = { start: '08:00', end: '21:00' };
/** What a retry takes when the request does not say: the recipients whose message did not arrive. */
const DEFAULT_RETRY_INCLUDE: RetryInclude[] = ['failed', 'undelivered'];
/** The longest campaign name (CampaignCreate's). */
const MAX_NAME = 200;
/** Recipients whose segments are counted per read while checking a launch against the limits. */
const LAUNCH_CHUNK = 5000;

export interface RunPayload {
  campaignId: string;
  token: string;
}

export class CampaignService {
  readonly db: Database;
  private readonly clock: Clock;
  private readonly jobs: JobQueue;
  private readonly events: EventOutbox;
  private readonly pagination: Paginator;
  private readonly organizations: OrganizationService;
  private readonly numbers: NumberService;
  private readonly messaging: MessagingService;
  private readonly links: LinkService;
  readonly store = new CampaignStore();
  private readonly followUps = new FollowUpStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    jobs: JobQueue;
    events: EventOutbox;
    pagination: Paginator;
    organizations: OrganizationService;
    numbers: NumberService;
    messaging: MessagingService;
    links: LinkService;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.events = deps.events;
    this.pagination = deps.pagination;
    this.organizations = deps.organizations;
    this.numbers = deps.numbers;
    this.messaging = deps.messaging;
    this.links = deps.links;
  }

  async create(organization: Organization, input: CampaignCreateInput): Promise<Campaign> {
    const values = await this.validate(organization, input);
    const now = this.clock.now();
    const id = newId('cmp', now.getTime());
    await this.store.insert(this.db, { ...values, id, organizationId: organization.id, now });
    return this.get(organization.id, id);
  }

  async get(organizationId: string, id: string): Promise<Campaign> {
    const row = await this.store.find(this.db, organizationId, id, this.receiptCutoff());
    if (!row) throw ApiError.notFound('Campaign');
    const stats = deliveryStats(row);
    return { ...toCampaign(row, stats), deliveryStats: stats };
  }

  list(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.campaigns.list`,
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId, this.receiptCutoff()),
      map: (row: CampaignWithCounts): CampaignListItem => {
        const stats = deliveryStats(row);
        return { ...toCampaign(row, stats), delivery_stats: snakeStats(stats) };
      },
    });
  }

  /** The analytics, and the messages handed to the carrier (what older API versions divide by). */
  async analytics(organizationId: string, id: string): Promise<CampaignAnalytics & { messagesSent: number }> {
    const row = await this.store.find(this.db, organizationId, id, this.receiptCutoff());
    if (!row) throw ApiError.notFound('Campaign');
    const stats = deliveryStats(row);
    const { deliveryRate, failureRate, ...counts } = stats;
    const clicks = await this.links.campaignClicks(this.db, id);
    return {
      ...counts,
      deliveryRate,
      failureRate,
      queued: row.queued,
      cancelled: row.cancelled,
      skipped: row.skipped_count,
      optOuts: row.opt_outs,
      segments: row.segments,
      ...clicks,
      // Unique clickers over the recipients the campaign sent to (a message each): docs/campaigns.md.
      clickRate: rate(clicks.uniqueClicks, messagesSent(row)),
      messagesSent: messagesSent(row),
    };
  }

  async recipients(organizationId: string, id: string, query: PageQueryInput, surface: string) {
    // A 404 for a campaign that is not the organization's, not an empty page.
    if (!(await this.store.exists(this.db, organizationId, id))) throw ApiError.notFound('Campaign');
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.campaigns.recipients`,
      keyset: false,
      organizationId,
      filters: { campaign: id },
      ...this.store.recipientsQuery(id, organizationId),
      map: toRecipient,
    });
  }

  /** Who clicked the campaign's tracked links, newest first; a 404 for another organization's campaign. */
  async clicks(organizationId: string, id: string, query: PageQueryInput, surface: string) {
    if (!(await this.store.exists(this.db, organizationId, id))) throw ApiError.notFound('Campaign');
    return this.links.listCampaignClicks(organizationId, id, query, surface);
  }

  /** Changes a draft or scheduled campaign; a scheduled one takes its new lists, text or time at once. */
  async update(organization: Organization, id: string, input: CampaignUpdateInput): Promise<Campaign> {
    await this.db.transaction(async (tx) => {
      const row = await this.locked(tx, organization.id, id);
      requireState(row, ['draft', 'scheduled'], 'changed');
      const merged: CampaignCreateInput = {
        name: input.name ?? row.name,
        message: input.message ?? row.message,
        contactListIds: input.contactListIds ?? row.contact_list_ids,
        senders: input.senders ?? (row.senders.length > 0 ? row.senders : undefined),
        mediaUrls: input.mediaUrls ?? row.media_urls,
        scheduledAt:
          input.scheduledAt !== undefined ? input.scheduledAt : (row.scheduled_at?.toISOString() ?? null),
        timezone: input.timezone ?? row.timezone,
        trackLinks: input.trackLinks ?? row.track_links,
        quietHours:
          input.quietHours !== undefined
            ? input.quietHours
            : row.quiet_start && row.quiet_end
              ? { start: row.quiet_start, end: row.quiet_end }
              : null,
      };
      const values = await this.validate(organization, merged, tx);
      const now = this.clock.now();
      await this.store.update(tx, id, values, now);
      if (row.status === 'scheduled') {
        // Launched already: the snapshot and the limit check follow a change of who or what is sent, and the
        // start moves with the time (the job for the old time finds nothing to do).
        const resnapshot =
          input.contactListIds !== undefined ||
          input.senders !== undefined ||
          input.message !== undefined ||
          input.mediaUrls !== undefined ||
          input.trackLinks !== undefined;
        if (resnapshot) await this.snapshot(tx, organization, { ...row, ...rowValues(values) });
        if (input.scheduledAt !== undefined) {
          await this.jobs.enqueue(tx, START_QUEUE, { campaignId: id }, { runAt: values.scheduledAt ?? now });
        }
      }
    });
    return this.get(organization.id, id);
  }

  async delete(organizationId: string, id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const row = await this.locked(tx, organizationId, id);
      requireState(row, ['draft'], 'deleted');
      await this.store.delete(tx, id);
    });
  }

  /**
   * Launches a draft: snapshots its recipients, refuses what cannot fit a limit that does not reset soon (the
   * send's own status, code and reason; nothing launches), then starts now or at `scheduledAt`.
   */
  async launch(organization: Organization, id: string): Promise<Campaign> {
    // Hosted media are asked for once, before the transaction (a network answer is not waited for holding locks).
    const media = (await this.get(organization.id, id)).mediaUrls;
    const mediaRefusal = await this.messaging.campaignMessages.mediaRefusal(media);
    if (mediaRefusal) throw mediaRefusal;
    await this.db.transaction(async (tx) => {
      const row = await this.locked(tx, organization.id, id);
      requireState(row, ['draft'], 'launched');
      if (row.media_urls.join('\n') !== media.join('\n')) {
        throw ApiError.conflict(
          'The campaign media changed while it was being launched; launch it again',
          'CAMPAIGN_STATE',
        );
      }
      const org = await this.organizations.get(organization.id, tx);
      await this.snapshot(tx, org, row);
      const now = this.clock.now();
      await this.store.setState(tx, id, { launched_at: now }, now);
      if (row.scheduled_at && row.scheduled_at > now) {
        await this.store.setState(tx, id, { status: 'scheduled' }, now);
        await this.jobs.enqueue(tx, START_QUEUE, { campaignId: id }, { runAt: row.scheduled_at });
      } else {
        await this.start(tx, { ...row, launched_at: now });
      }
    });
    return this.get(organization.id, id);
  }

  /**
   * POST /campaigns/{id}/retry: a draft follow-up to the recipients whose messages ended as `include` says
   * (follow-up-store.ts), with the parent's text and settings. 409 CAMPAIGN_STATE for a draft, which has sent
   * nothing to follow up. The parent's row lock orders it after any state change of the parent under way.
   */
  async retry(
    organizationId: string,
    id: string,
    include: readonly RetryInclude[] = DEFAULT_RETRY_INCLUDE,
  ): Promise<Campaign> {
    const followUpId = await this.db.transaction(async (tx) => {
      const parent = await this.locked(tx, organizationId, id);
      if (parent.status === 'draft') {
        throw new ApiError(409, 'This campaign is a draft: it has sent nothing to follow up', {
          code: 'CAMPAIGN_STATE',
        });
      }
      const now = this.clock.now();
      const followUp = { id: newId('cmp', now.getTime()), parentId: parent.id, organizationId };
      const suffix = ' (follow-up)';
      const name = `${parent.name.slice(0, MAX_NAME - suffix.length)}${suffix}`;
      await this.followUps.insert(tx, { ...followUp, name, now });
      await this.followUps.choose(tx, followUp, include, this.receiptCutoff());
      return followUp.id;
    });
    return this.get(organizationId, followUpId);
  }

  /** The scheduled start: a campaign still scheduled for now or earlier starts sending. */
  async startScheduled(campaignId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const row = await this.store.lockForRun(tx, campaignId);
      if (row?.status !== 'scheduled') return;
      if (row.scheduled_at && row.scheduled_at > this.clock.now()) return; // moved later: its own job comes
      await this.start(tx, row);
    });
  }

  async pause(organizationId: string, id: string): Promise<Campaign> {
    await this.db.transaction(async (tx) => {
      const row = await this.locked(tx, organizationId, id);
      requireState(row, ['sending'], 'paused');
      await this.pauseLocked(tx, row, null);
    });
    return this.get(organizationId, id);
  }

  async resume(organizationId: string, id: string): Promise<Campaign> {
    await this.db.transaction(async (tx) => {
      const row = await this.locked(tx, organizationId, id);
      requireState(row, ['paused'], 'resumed');
      const now = this.clock.now();
      const token = newId('run', now.getTime());
      await this.store.setState(
        tx,
        id,
        { status: 'sending', paused_reason: null, run_token: token, waiting_until: null },
        now,
      );
      await this.jobs.enqueue(tx, RUN_QUEUE, { campaignId: id, token } satisfies RunPayload);
    });
    return this.get(organizationId, id);
  }

  /** Cancels: recipients without a message never get one, queued messages are cancelled, sent ones stand. */
  async cancel(organizationId: string, id: string): Promise<Campaign> {
    await this.db.transaction(async (tx) => {
      const row = await this.locked(tx, organizationId, id);
      requireState(row, ['draft', 'scheduled', 'sending', 'paused'], 'cancelled');
      const now = this.clock.now();
      await this.store.cancelPending(tx, id);
      await this.messaging.campaignMessages.cancelQueued(tx, id);
      await this.store.setState(
        tx,
        id,
        { status: 'cancelled', cancelled_at: now, run_token: null, waiting_until: null },
        now,
      );
      await this.recordChange(tx, organizationId, id, CampaignCancelled);
    });
    return this.get(organizationId, id);
  }

  /** Pauses a locked campaign (`reason`: the limit's code when a limit paused it). */
  async pauseLocked(tx: Queryable, row: CampaignRow, reason: string | null): Promise<void> {
    const now = this.clock.now();
    await this.store.setState(
      tx,
      row.id,
      { status: 'paused', paused_reason: reason, run_token: null, waiting_until: null },
      now,
    );
    await this.recordChange(tx, row.organization_id, row.id, CampaignPaused);
  }

  /** Records a campaign event with its state and counts as they are now in `tx`. */
  async recordChange(
    tx: Queryable,
    organizationId: string,
    id: string,
    definition: typeof CampaignStarted | typeof CampaignPaused | typeof CampaignCancelled,
  ): Promise<void> {
    const row = await this.store.find(tx, organizationId, id, this.receiptCutoff());
    if (!row) return;
    await this.events.record(tx, definition, {
      organizationId: row.organization_id,
      data: eventData(row, this.clock.now()),
    });
  }

  receiptCutoff(): Date {
    return new Date(this.clock.now().getTime() - RECEIPT_WAIT_MS);
  }

  private async start(tx: Queryable, row: CampaignRow): Promise<void> {
    const now = this.clock.now();
    const token = newId('run', now.getTime());
    await this.store.setState(tx, row.id, { status: 'sending', started_at: now, run_token: token }, now);
    await this.recordChange(tx, row.organization_id, row.id, CampaignStarted);
    await this.jobs.enqueue(tx, RUN_QUEUE, { campaignId: row.id, token } satisfies RunPayload);
  }

  private async locked(tx: Queryable, organizationId: string, id: string): Promise<CampaignRow> {
    const row = await this.store.lock(tx, organizationId, id);
    if (!row) throw ApiError.notFound('Campaign');
    return row;
  }

  /**
   * Makes the recipient rows and checks them against the limits that do not reset soon; a refusal throws and
   * the caller's transaction rolls the rows back. The senders are fixed here (the default number when none).
   */
  private async snapshot(tx: Queryable, org: Organization, row: CampaignRow): Promise<void> {
    const owned = await this.numbers.list(org.id, tx);
    const senders = this.resolveSenders(owned, row.senders, org);
    const lists = await this.store.existingLists(tx, org.id, row.contact_list_ids);
    const missing = row.contact_list_ids.filter((list) => !lists.includes(list));
    if (missing.length > 0) {
      throw ApiError.badRequest(`contactListIds: no such contact list: ${missing.join(', ')}`);
    }
    const counts = await this.store.snapshotRecipients(tx, {
      id: row.id,
      organizationId: org.id,
      contactListIds: row.contact_list_ids,
      senders: senders.map((number) => number.number),
    });
    const pending = counts.recipients - counts.skipped;
    const campaignMessages = this.messaging.campaignMessages;
    const media = row.media_urls.length;
    // A campaign that tracks links is counted with its links at their short length.
    const message = row.track_links ? campaignMessages.withShortLinks(row.message) : row.message;
    let refusal: ApiError | undefined;
    if (parseMergeTags(row.message).length === 0 || media > 0) {
      // Every message is the same length (or an MMS, a flat weight): the count is exact.
      const segments = pending * campaignMessages.segments(message, media);
      refusal = await campaignMessages.launchRefusal(tx, org, { messages: pending, segments });
    } else {
      // What each message would cost at most, from the longest of each field (one aggregate); only a campaign
      // that might not fit has every recipient's text rendered and counted.
      const longest = await this.store.longestMergeFields(tx, row.id);
      const atMost = pending * campaignMessages.segmentsAtMost(message, longest, media);
      if (await campaignMessages.launchRefusal(tx, org, { messages: pending, segments: atMost })) {
        const segments = await this.segmentsOf(tx, row);
        refusal = await campaignMessages.launchRefusal(tx, org, { messages: pending, segments });
      }
    }
    if (refusal) throw refusal;
    await this.store.setState(
      tx,
      row.id,
      {
        recipient_count: counts.recipients,
        skipped_count: counts.skipped,
        senders: senders.map((number) => number.number),
      },
      this.clock.now(),
    );
  }

  /** The chargeable segments of every pending recipient's SMS, each text rendered and counted. */
  private async segmentsOf(tx: Queryable, row: CampaignRow): Promise<number> {
    let total = 0;
    for await (const chunk of this.store.pendingWithContacts(tx, row.id, LAUNCH_CHUNK)) {
      for (const recipient of chunk) {
        const text = render(row.message, mergeContact(recipient));
        const sent = row.track_links ? this.messaging.campaignMessages.withShortLinks(text) : text;
        total += this.messaging.campaignMessages.segments(sent, 0);
      }
    }
    return total;
  }

  private resolveSenders(owned: PhoneNumber[], wanted: string[], org: Organization): PhoneNumber[] {
    if (owned.length === 0) {
      throw ApiError.badRequest('This organization has no phone number to send from; get a number first');
    }
    if (wanted.length === 0) return [owned.find((number) => number.isDefault) ?? owned[0]!];
    return wanted.map((number) => {
      const normalised = normalisePhone(number, org.region);
      const match = normalised && owned.find((own) => own.number === normalised);
      if (!match) {
        throw ApiError.badRequest(
          `senders must be this organization's numbers; ${number} is not one (${owned.map((n) => n.number).join(', ')})`,
        );
      }
      return match;
    });
  }

  /** Checks a create (or a change merged onto a campaign) and turns it into column values. */
  private async validate(
    org: Organization,
    input: CampaignCreateInput,
    tx: Queryable = this.db,
  ): Promise<CampaignValues> {
    const unsupported = unsupportedMergeVariables(input.message);
    if (unsupported) throw unsupported;
    const mediaUrls = input.mediaUrls ?? [];
    // The rule a message's hosted media follows (http or https, no credentials, no whitespace, bounded length).
    for (const [index, url] of mediaUrls.entries()) checkHostedMediaUrl(url, `mediaUrls[${index}]`);
    if (input.message.trim() === '' && mediaUrls.length === 0) {
      throw ApiError.badRequest('A campaign needs a message or mediaUrls');
    }
    const lists = [...new Set(input.contactListIds)];
    const found = await this.store.existingLists(tx, org.id, lists);
    const missing = lists.filter((list) => !found.includes(list));
    if (missing.length > 0) {
      throw ApiError.badRequest(`contactListIds: no such contact list: ${missing.join(', ')}`);
    }
    // No senders given: the organization's default number (CONTRACT section 8), shown from the start. With no
    // number yet the list stays empty and launch takes the default it has by then (or refuses: none).
    const owned = await this.numbers.list(org.id, tx);
    const senders =
      input.senders || owned.length > 0
        ? [...new Set(this.resolveSenders(owned, input.senders ?? [], org).map((n) => n.number))]
        : [];
    const timezone = canonicalTimeZone(input.timezone ?? 'UTC');
    if (!timezone) {
      throw ApiError.badRequest(`timezone must be an IANA time zone name such as America/New_York`);
    }
    const quiet = input.quietHours === undefined ? DEFAULT_QUIET_HOURS : input.quietHours;
    quietHoursWindow(quiet);
    let scheduledAt: Date | null = null;
    if (input.scheduledAt) {
      scheduledAt = new Date(input.scheduledAt);
      if (Number.isNaN(scheduledAt.getTime())) throw ApiError.badRequest('scheduledAt must be a date-time');
    }
    return {
      name: input.name.trim(),
      message: input.message,
      mediaUrls,
      contactListIds: lists,
      senders,
      timezone,
      quietStart: quiet?.start ?? null,
      quietEnd: quiet?.end ?? null,
      scheduledAt,
      trackLinks: input.trackLinks ?? false,
    };
  }
}

function rowValues(values: CampaignValues): Partial<CampaignRow> {
  return {
    name: values.name,
    message: values.message,
    media_urls: values.mediaUrls,
    contact_list_ids: values.contactListIds,
    senders: values.senders,
    timezone: values.timezone,
    quiet_start: values.quietStart,
    quiet_end: values.quietEnd,
    scheduled_at: values.scheduledAt,
    track_links: values.trackLinks,
  };
}

function requireState(row: CampaignRow, allowed: CampaignRow['status'][], action: string): void {
  if (!allowed.includes(row.status)) {
    throw new ApiError(
      409,
      `This campaign is ${row.status}; only a campaign that is ${allowed.join(' or ')} can be ${action}`,
      { code: 'CAMPAIGN_STATE' },
    );
  }
}

export function mergeContact(row: {
  first_name: string | null;
  last_name: string | null;
  company: string | null;
  email: string | null;
  phone: string;
}) {
  return {
    firstName: row.first_name,
    lastName: row.last_name,
    company: row.company,
    email: row.email,
    phone: row.phone,
  };
}

/** `part / whole` to 4 decimals, null while `whole` is 0: every rate a campaign shows. */
export const rate = (part: number, whole: number) =>
  whole === 0 ? null : Math.round((part / whole) * 10000) / 10000;

/** Messages handed to the carrier: sent (awaiting or no receipt), delivered, failed, undelivered. */
const messagesSent = (counts: CountsRow) =>
  counts.sent + counts.delivered + counts.failed + counts.undelivered;

/** The spec's delivery statistics from the counters. */
export function deliveryStats(counts: CountsRow): DeliveryStatsValue {
  const noReceipt = counts.no_receipt;
  const awaiting = Math.max(0, counts.sent - noReceipt);
  const attempted = counts.delivered + counts.failed + counts.undelivered + awaiting;
  const failedTotal = counts.failed + counts.undelivered;
  return {
    attempted,
    delivered: counts.delivered,
    failed: counts.failed,
    undelivered: counts.undelivered,
    failedTotal,
    awaiting,
    noReceipt,
    deliveryRate: rate(counts.delivered, attempted),
    failureRate: rate(failedTotal, attempted),
    provisional: awaiting > 0,
  };
}

function snakeStats(stats: DeliveryStatsValue) {
  return {
    attempted: stats.attempted,
    delivered: stats.delivered,
    failed: stats.failed,
    undelivered: stats.undelivered,
    failed_total: stats.failedTotal,
    awaiting: stats.awaiting,
    no_receipt: stats.noReceipt,
    delivery_rate: stats.deliveryRate,
    failure_rate: stats.failureRate,
    provisional: stats.provisional,
  };
}

const iso = (value: Date | null) => (value ? value.toISOString() : null);

function toCampaign(row: CampaignWithCounts, stats: DeliveryStatsValue): Campaign {
  return {
    id: row.id,
    name: row.name,
    message: row.message,
    mediaUrls: row.media_urls,
    contactListIds: row.contact_list_ids,
    senders: row.senders,
    timezone: row.timezone,
    quietHours: row.quiet_start && row.quiet_end ? { start: row.quiet_start, end: row.quiet_end } : null,
    trackLinks: row.track_links,
    status: row.status,
    pausedReason: row.paused_reason,
    waitingUntil: iso(row.waiting_until),
    scheduledAt: iso(row.scheduled_at),
    recipientCount: row.recipient_count,
    launchedAt: iso(row.launched_at),
    startedAt: iso(row.started_at),
    completedAt: iso(row.completed_at),
    cancelledAt: iso(row.cancelled_at),
    parentCampaignId: row.parent_campaign_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    messages_sent: messagesSent(row),
    messages_delivered: row.delivered,
    messages_failed: row.failed + row.undelivered,
    message_count: row.messages,
    deliveryRate: stats.deliveryRate,
    failureRate: stats.failureRate,
  };
}

function toRecipient(row: RecipientRow): CampaignRecipient {
  return {
    phone: row.phone,
    contactId: row.contact_id,
    sender: row.sender,
    status: row.message_status ?? row.status,
    messageId: row.message_id,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    notBefore: row.status === 'pending' ? iso(row.not_before) : null,
  };
}

export function eventData(row: CampaignWithCounts, now: Date) {
  const stats = deliveryStats(row);
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    pausedReason: row.paused_reason,
    recipientCount: row.recipient_count,
    attempted: stats.attempted,
    delivered: stats.delivered,
    failed: stats.failedTotal,
    at: now.toISOString(),
  };
}
