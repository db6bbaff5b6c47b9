// Messages made by the campaign engine. Each is checked against the plan limits, counted, stored and booked
// a paced dispatch exactly as a send is, in the engine's transaction (which also marks its recipient done),
// so a message exists if and only if its recipient is marked. A campaign that tracks links has each message's
// links shortened before it is counted, so segments and limits see the text that is sent. The SQL is in
// campaign-store.ts.
import type { PacedNumber } from '../../carriers/pacing.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { LinkService } from '../links/index.ts';
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
import { type MergeFieldLengths, renderedUnitsAtMost } from './merge-variables.ts';
import { chargeableSegments, countSegments, segmentsAtMost } from './segments.ts';

/** One message of a campaign's batch. */
export interface CampaignMessageInput {
  from: PacedNumber;
  to: string;
  /** The text with the recipient's merge variables filled in. */
  body: string;
  /** The plan's slot: the message is handed over at this time or later (its number's next free slot). */
  notBefore: Date;
}

export class CampaignMessages {
  private readonly clock: Clock;
  private readonly limits: SendLimits;
  private readonly dispatcher: MessageDispatcher;
  private readonly links: LinkService;
  private readonly store = new CampaignMessageStore();

  constructor(deps: { clock: Clock; limits: SendLimits; dispatcher: MessageDispatcher; links: LinkService }) {
    this.clock = deps.clock;
    this.limits = deps.limits;
    this.dispatcher = deps.dispatcher;
    this.links = deps.links;
  }

  /**
   * `text` as a campaign that tracks links sends it: each link replaced by a short link of the real length
   * (fresh codes, stored nowhere). For counting only.
   */
  withShortLinks(text: string): string {
    return this.links.shorten(text).body;
  }

  /** Chargeable segments of one campaign message (an MMS counts a flat 3, as a send does). */
  segments(body: string, mediaCount: number): number {
    return chargeableSegments(countSegments(body).segments, mediaCount);
  }

  /**
   * At most how many chargeable segments one message of `template` takes for recipients whose fields are no
   * longer than `longest` (segmentsAtMost): a launch that fits with this many fits with the exact count.
   */
  segmentsAtMost(template: string, longest: MergeFieldLengths, mediaCount: number): number {
    return chargeableSegments(segmentsAtMost(renderedUnitsAtMost(template, longest)), mediaCount);
  }

  /**
   * The campaign's hosted media as its messages' dispatch will ask for it (the same probe and SSRF guard): a
   * refusal is a 422 with the message's error code, so a campaign whose every message would fail never
   * launches; a URL that cannot be asked now is a 503 to retry.
   */
  async mediaRefusal(urls: readonly string[]): Promise<ApiError | undefined> {
    let refusal: Awaited<ReturnType<MessageDispatcher['hostedMediaRefusal']>>;
    try {
      refusal = await this.dispatcher.hostedMediaRefusal(urls);
    } catch {
      return new ApiError(503, 'The campaign media could not be reached to check it; try again shortly', {
        code: 'MEDIA_URL_UNREACHABLE',
        headers: { 'Retry-After': '30' },
      });
    }
    return refusal && new ApiError(422, `mediaUrls: ${refusal.errorMessage}`, { code: refusal.errorCode });
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
   * Makes a batch of campaign messages in `tx`, in order: each booked its number's next free slot at or after
   * its `notBefore`, up to and including the first whose slot is later than `until`; the limits checked and
   * counted for those together (a refusal throws the send's own ApiError, for the batch as a whole, and the
   * caller rolls back); the messages stored `queued` and their dispatches enqueued at their slots. A handful
   * of statements whatever the batch's size. With `trackLinks`, each message's links are shortened first.
   * Returns each made message's id and slot, in order.
   */
  async queueMany(
    tx: Queryable,
    org: Organization,
    campaign: { id: string; mediaUrls: string[]; until: Date; trackLinks: boolean },
    inputs: CampaignMessageInput[],
  ): Promise<{ messageId: string; slot: Date }[]> {
    if (inputs.length === 0) return [];
    const now = this.clock.now();
    const prepared = inputs.map((input) => {
      const text = campaign.trackLinks ? this.links.shorten(input.body) : { body: input.body, links: [] };
      const count = countSegments(text.body);
      return {
        messageId: newId('msg', now.getTime()),
        body: text.body,
        links: text.links,
        encoding: count.encoding,
        segments: chargeableSegments(count.segments, campaign.mediaUrls.length),
      };
    });
    let slots: Date[] = [];
    await this.limits.reserveMany(tx, org, async () => {
      slots = await this.dispatcher.bookSlots(
        tx,
        inputs.map((input) => ({ sender: input.from, from: input.notBefore })),
        campaign.until,
      );
      const segments = prepared.slice(0, slots.length).reduce((sum, item) => sum + item.segments, 0);
      return { messages: slots.length, segments };
    });
    const made = slots.map((slot, index) => ({ slot, input: inputs[index]!, ...prepared[index]! }));
    await this.store.insertMany(tx, {
      organizationId: org.id,
      campaignId: campaign.id,
      mediaUrls: campaign.mediaUrls,
      now,
      messages: made.map((message) => ({
        id: message.messageId,
        from: message.input.from.number,
        to: message.input.to,
        body: message.body,
        segments: message.segments,
        encoding: message.encoding,
      })),
    });
    await this.links.save(
      tx,
      made.map((message) => ({
        owner: {
          organizationId: org.id,
          campaignId: campaign.id,
          messageId: message.messageId,
          recipientPhone: message.input.to,
        },
        links: message.links,
      })),
    );
    await this.dispatcher.enqueueDispatches(tx, made);
    return made.map(({ messageId, slot }) => ({ messageId, slot }));
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
