// Link tracking (CONTRACT section 14): the http(s) links of a message become `PUBLIC_URL/l/{code}`, one code per
// link per message, and following a code redirects to exactly the URL it was made for and records the click.
//
// A code is 96 random bits (randomSecret, base64url: 16 characters), so codes cannot be guessed or walked, and
// the public route redirects only to URLs stored for codes we issued: it is not an open redirect. Codes live
// LINK_RETENTION_DAYS after their message was made, then the hourly retention removes them and they answer
// 404. A HEAD request, a request without a User-Agent and a known unfurler's GET (unfurlers.ts) are
// redirected but not counted: previews and prefetches are not people.
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { newId, randomSecret } from '../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import type { RateLimiter, RateLimitRule } from '../../platform/rate-limit.ts';
import { LinkClicked } from './events.ts';
import { findLinks } from './matcher.ts';
import { type ClickRow, LinkStore } from './store.ts';
import { isUnfurler } from './unfurlers.ts';

/** How long a tracked link redirects after its message was made (Twilio's shortened links: 90 days). */
export const LINK_RETENTION_DAYS = 90;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Random bytes of a code: 96 bits, 16 base64url characters. */
const CODE_BYTES = 12;
const CODE_PATTERN = /^[A-Za-z0-9_-]{16}$/;

/** A text with its links replaced, and the links to store once its message has an id. */
export interface ShortenedText {
  body: string;
  links: { code: string; url: string }[];
}

/** Whose message a text's links belong to. */
export interface LinkOwner {
  organizationId: string;
  campaignId: string | null;
  messageId: string;
  recipientPhone: string;
}

export interface Click {
  recipientPhone: string;
  url: string;
  at: string;
  userAgent: string | null;
}

/**
 * Taps of one code counted in any minute. A code is one recipient's link, and a person does not tap faster;
 * past this a burst on one code (a leaked link replayed by a script) is redirected all the same but counted
 * nowhere, so it cannot flood a campaign's figures, its `link.clicked` webhooks or the database. Sliding, so a
 * burst straddling a minute's turn gets no second budget.
 */
export const LINK_CLICKS_PER_CODE_RULE: RateLimitRule = {
  name: 'link-clicks-code',
  limit: 5,
  windowSeconds: 60,
  sliding: true,
};

export class LinkService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly pagination: Paginator;
  private readonly base: string;
  private readonly rateLimiter: RateLimiter;
  private readonly store = new LinkStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    events: EventOutbox;
    pagination: Paginator;
    publicUrl: string;
    rateLimiter: RateLimiter;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.events = deps.events;
    this.pagination = deps.pagination;
    this.rateLimiter = deps.rateLimiter;
    this.base = `${deps.publicUrl.replace(/\/+$/, '')}/l/`;
  }

  /** `text` with every http(s) link replaced by a fresh short link; nothing is stored yet (see `save`). */
  shorten(text: string): ShortenedText {
    const found = findLinks(text);
    if (found.length === 0) return { body: text, links: [] };
    const links: ShortenedText['links'] = [];
    let body = '';
    let from = 0;
    for (const link of found) {
      const url = redirectTarget(link.url);
      if (url === undefined) continue;
      const code = randomSecret(CODE_BYTES);
      links.push({ code, url });
      body += text.slice(from, link.start) + this.base + code;
      from = link.end;
    }
    return { body: body + text.slice(from), links };
  }

  /** Stores the links of messages just made, in their transaction. */
  async save(tx: Queryable, messages: { owner: LinkOwner; links: ShortenedText['links'] }[]): Promise<void> {
    const now = this.clock.now();
    const rows = messages.flatMap(({ owner, links }) =>
      links.map((link) => ({
        code: link.code,
        organization_id: owner.organizationId,
        campaign_id: owner.campaignId,
        message_id: owner.messageId,
        recipient_phone: owner.recipientPhone,
        url: link.url,
      })),
    );
    await this.store.insertMany(tx, rows, now, new Date(now.getTime() + LINK_RETENTION_DAYS * DAY_MS));
  }

  /**
   * Where a code redirects, or undefined for a code we did not issue or that expired. A GET by a person is
   * recorded as a click with its `link.clicked` event; a HEAD, a browser's prefetch, a request without a
   * User-Agent and a known unfurler are not.
   */
  async follow(
    code: string,
    request: { method: string; userAgent?: string; prefetch?: boolean },
  ): Promise<string | undefined> {
    if (!CODE_PATTERN.test(code)) return undefined;
    const now = this.clock.now();
    const link = await this.store.find(this.db, code, now);
    if (!link) return undefined;
    const userAgent = request.userAgent?.slice(0, 1000) || null;
    if (request.method !== 'GET' || request.prefetch || userAgent === null || isUnfurler(userAgent)) {
      return link.url;
    }
    if (!(await this.rateLimiter.consume(LINK_CLICKS_PER_CODE_RULE, code)).allowed) return link.url;
    await this.db.transaction(async (tx) => {
      await this.store.insertClick(tx, { id: newId('clk', now.getTime()), link, userAgent, at: now });
      await this.events.record(tx, LinkClicked, {
        organizationId: link.organization_id,
        data: {
          campaignId: link.campaign_id,
          messageId: link.message_id,
          recipientPhone: link.recipient_phone,
          url: link.url,
          at: now.toISOString(),
          userAgent,
        },
      });
    });
    return link.url;
  }

  /** A campaign's click counts: every click, and the recipients who clicked. */
  async campaignClicks(db: Queryable, campaignId: string): Promise<{ clicks: number; uniqueClicks: number }> {
    const counts = await this.store.campaignCounts(db, campaignId);
    return { clicks: counts.clicks, uniqueClicks: counts.unique_clicks };
  }

  /** A campaign's clicks, newest first (offset paging); the caller has checked the campaign is the organization's. */
  listCampaignClicks(organizationId: string, campaignId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.campaigns.clicks`,
      keyset: false,
      organizationId,
      filters: { campaign: campaignId },
      ...this.store.clicksQuery(campaignId, organizationId),
      map: (row: ClickRow): Click => ({
        recipientPhone: row.recipient_phone,
        url: row.url,
        at: row.created_at.toISOString(),
        userAgent: row.user_agent,
      }),
    });
  }

  removeExpired(now: Date): Promise<number> {
    return this.store.removeExpired(this.db, now);
  }
}

/**
 * The URL a found link redirects to: the text as written when it is plain ASCII (so Location is exactly what
 * the sender wrote), else its ASCII form (punycode host, percent-encoded path), since a header holds only
 * ASCII. Undefined for text that is not a URL.
 */
function redirectTarget(found: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(found);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  for (let index = 0; index < found.length; index++) {
    const code = found.charCodeAt(index);
    if (code <= 0x20 || code >= 0x7f) return parsed.href;
  }
  return found;
}
