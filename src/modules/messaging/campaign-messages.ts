// Messages made by the campaign engine. Each is checked against the plan limits, counted, stored and booked
// a paced dispatch exactly as a send is, in the engine's transaction (which also marks its recipient done),
// so a message exists if and only if its recipient is marked. The SQL is in campaign-store.ts.
import type { PacedNumber } from '../../carriers/pacing.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Organization } from '../organizations/index.ts';
import { CampaignMessageStore } from './campaign-store.ts';
import type { MessageDispatcher } from './dispatch.ts';
import {
  beyondAllowanceRefusal,
  MONTHLY_ABSOLUTE_MULTIPLE,
  type SendLimits,
  utcDay,
  utcMonth,
  VELOCITY_WINDOW_SECONDS,
} from './limits.ts';
import { chargeableSegments, countSegments } from './segments.ts';

export interface CampaignMessageInput {
  campaignId: string;
  from: PacedNumber;
  to: string;
  /** The text with the recipient's merge variables filled in. */
  body: string;
  mediaUrls: string[];
  /** The plan's slot: the message is handed over at this time or later (its number's next free slot). */
  notBefore: Date;
}

export class CampaignMessages {
  private readonly clock: Clock;
  private readonly limits: SendLimits;
  private readonly dispatcher: MessageDispatcher;
  private readonly store = new CampaignMessageStore();

  constructor(deps: { clock: Clock; limits: SendLimits; dispatcher: MessageDispatcher }) {
    this.clock = deps.clock;
    this.limits = deps.limits;
    this.dispatcher = deps.dispatcher;
  }

  /** Chargeable segments of one campaign message (an MMS counts a flat 3, as a send does). */
  segments(body: string, mediaCount: number): number {
    return chargeableSegments(countSegments(body).segments, mediaCount);
  }

  /**
   * Whether `messages` more messages of `segments` in all can ever fit the limits that do not reset soon
   * (CONTRACT 8): the trial lifetime, the monthly ceiling, and going beyond the allowance while past due,
   * scheduled to cancel or without a verified card. Returns the refusal a send would get, or undefined.
   * Daily and new-account limits are not checked here: they spread a campaign over time instead.
   */
  async launchRefusal(
    db: Queryable,
    org: Organization,
    total: { messages: number; segments: number },
  ): Promise<ApiError | undefined> {
    if (total.messages === 0) return undefined;
    const now = this.clock.now();
    const used = await this.store.usage(db, org.id, utcMonth(now).start);
    if (org.subscriptionState === 'trial' && used.trialMessages + total.messages > org.trialMessageLimit) {
      return new ApiError(
        429,
        `The campaign's ${total.messages} messages do not fit the trial's ${org.trialMessageLimit} ` +
          `(${used.trialMessages} sent); subscribe to send more`,
        { code: 'TRIAL_LIMIT_REACHED', reason: 'lifetime' },
      );
    }
    const month = used.monthSegments + total.segments;
    const ceiling = MONTHLY_ABSOLUTE_MULTIPLE * org.monthlyAllowanceSegments;
    if (month > ceiling) {
      const next = utcMonth(now).next;
      return new ApiError(
        429,
        `The campaign's ${total.segments} segments would pass the monthly ceiling of ${ceiling} segments ` +
          `(${used.monthSegments} used this month)`,
        {
          code: 'PAID_LIMIT_REACHED',
          reason: 'monthly_absolute',
          headers: {
            'Retry-After': String(Math.max(1, Math.ceil((next.getTime() - now.getTime()) / 1000))),
          },
        },
      );
    }
    return beyondAllowanceRefusal(org, month, 'The campaign');
  }

  /**
   * Makes one campaign message in `tx`: limits checked and counted (a refusal throws the send's own ApiError
   * and the caller rolls back), the message stored `queued`, and its dispatch booked at its number's next free
   * slot at or after `notBefore`. Returns the message's id and that slot.
   */
  async queue(
    tx: Queryable,
    org: Organization,
    input: CampaignMessageInput,
  ): Promise<{ messageId: string; slot: Date }> {
    const count = countSegments(input.body);
    const segments = chargeableSegments(count.segments, input.mediaUrls.length);
    await this.limits.reserve(tx, org, segments);
    const now = this.clock.now();
    const id = newId('msg', now.getTime());
    await this.store.insert(tx, {
      id,
      organizationId: org.id,
      campaignId: input.campaignId,
      from: input.from.number,
      to: input.to,
      body: input.body,
      segments,
      encoding: count.encoding,
      mediaUrls: input.mediaUrls,
      now,
    });
    const slot = await this.dispatcher.schedule(tx, id, input.from, input.notBefore);
    return { messageId: id, slot };
  }

  /**
   * When a refusal met while sending lifts by itself, for the limits that spread a campaign rather than pause
   * it (CONTRACT 8): the daily limit at the next UTC midnight, the new-account limit when its 72 hours end.
   * Undefined for every other refusal.
   */
  resetsAt(org: Organization, refusal: ApiError): Date | undefined {
    if (refusal.reason === 'daily') return utcDay(this.clock.now()).next;
    if (refusal.reason === 'new_account_velocity') {
      return new Date(org.createdAt.getTime() + VELOCITY_WINDOW_SECONDS * 1000);
    }
    return undefined;
  }

  /** Cancels the campaign's messages still waiting for their slot; returns how many. */
  cancelQueued(tx: Queryable, campaignId: string): Promise<number> {
    return this.store.cancelQueued(tx, campaignId, this.clock.now());
  }
}
