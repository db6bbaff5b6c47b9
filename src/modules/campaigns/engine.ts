// The campaign engine: turns pending recipients into messages, a batch per run, at the campaign's pace.
//
// Exactly once: a run takes the campaign's row lock, picks due pending recipients (SKIP LOCKED), and in one
// transaction makes each one's message (limits counted, dispatch booked), marks the recipients `queued`, and
// enqueues the next run. A worker that dies mid-batch commits nothing, so the job's retry finds the same rows
// still pending; no cursor is kept. A run carries its campaign's `run_token` and hands the next run a new one:
// a pause, cancel or resume changes the token too, so a stale run (pending, retried or run twice) does nothing
// and a campaign never has two chains of runs.
//
// Pacing: each message books the organization's next plan slot (pro 5/s, ultra 25/s, enterprise 100/s, shared
// by its campaigns), then its sender number's next carrier slot at or after it (docs/messaging.md), and is
// handed over at that slot. A run makes messages only a few seconds ahead of their slots, so a pause or cancel
// takes effect at once and a campaign of 100,000 never holds 100,000 jobs.
//
// Quiet hours: a recipient outside its local window is deferred to the moment the window opens (its contact's
// time zone, else the number's, else the campaign's). Limits: a daily or new-account refusal holds the
// campaign until the limit resets; any other refusal pauses it with `pausedReason` set to the refusal's code.
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { inSavepoint } from '../../platform/db/savepoint.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import type { JobQueue } from '../../platform/jobs.ts';
import { type DailyWindow, quietHoursWindow, recipientOpening } from '../../platform/time-zones.ts';
import { type CampaignMessageInput, type MessagingService, render } from '../messaging/index.ts';
import type { NumberService, PhoneNumber } from '../numbers/index.ts';
import {
  accountRefusal,
  type Organization,
  type OrganizationService,
  type Plan,
} from '../organizations/index.ts';
import { CampaignCompleted } from './events.ts';
import { type CampaignService, eventData, mergeContact, RUN_QUEUE, type RunPayload } from './service.ts';
import type { CampaignRow, DueRecipient } from './store.ts';

/** A campaign's plan speed per organization, messages per second (CONTRACT 8; starter: docs/campaigns.md). */
export const PLAN_MESSAGES_PER_SECOND: Record<Plan, number> = {
  starter: 1,
  pro: 5,
  ultra: 25,
  enterprise: 100,
};
/** Recipients one run turns into messages at most. */
export const RUN_BATCH = 100;
/** How far ahead of its slot a message is made. */
export const LOOKAHEAD_MS = 5000;
/** How often a campaign whose every message is made looks whether the last have left the queue. */
const COMPLETION_CHECK_MS = 2000;

export class CampaignEngine {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly jobs: JobQueue;
  private readonly events: EventOutbox;
  private readonly organizations: OrganizationService;
  private readonly numbers: NumberService;
  private readonly messaging: MessagingService;
  private readonly campaigns: CampaignService;

  constructor(deps: {
    db: Database;
    clock: Clock;
    jobs: JobQueue;
    events: EventOutbox;
    organizations: OrganizationService;
    numbers: NumberService;
    messaging: MessagingService;
    campaigns: CampaignService;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.events = deps.events;
    this.organizations = deps.organizations;
    this.numbers = deps.numbers;
    this.messaging = deps.messaging;
    this.campaigns = deps.campaigns;
  }

  /** One run: a batch of messages, then the next run booked. */
  async run(payload: RunPayload): Promise<void> {
    await this.db.transaction((tx) => this.batch(tx, payload));
  }

  private async batch(tx: Queryable, payload: RunPayload): Promise<void> {
    const store = this.campaigns.store;
    const campaign = await store.lockForRun(tx, payload.campaignId);
    if (campaign?.status !== 'sending' || campaign.run_token !== payload.token) return;
    const now = this.clock.now();
    // Every run hands the next a fresh token: a run tried again after it committed (its worker died before
    // recording success) or taken by a second worker after its lease ran out finds its token spent.
    campaign.run_token = newId('run', now.getTime());
    await store.setState(tx, campaign.id, { run_token: campaign.run_token }, now);
    const org = await this.organizations.get(campaign.organization_id, tx);
    // Nothing runs for a suspended organization, nor one that gave up messaging (CONTRACT 7): the campaign
    // pauses, and goes on when resumed after that changed.
    const standing = accountRefusal(org, { product: 'messaging' });
    if (standing) {
      await this.campaigns.pauseLocked(tx, campaign, standing.code!);
      return;
    }
    const senders = new Map((await this.numbers.list(org.id, tx)).map((number) => [number.number, number]));
    const window = quietWindow(campaign);

    const due = await store.due(tx, campaign.id, org.id, now, RUN_BATCH);
    const deferred: { position: number; notBefore: Date }[] = [];
    const skipped: number[] = [];
    const sendable: { recipient: DueRecipient; sender: PhoneNumber }[] = [];
    let senderMissing = false;
    for (const recipient of due) {
      // Opted out since the launch: no message at all (one made now would be counted, then cancelled).
      if (recipient.opted_out) {
        skipped.push(recipient.position);
        continue;
      }
      if (window) {
        const opens = opening(now, recipient, campaign.timezone, window);
        if (opens > now) {
          deferred.push({ position: recipient.position, notBefore: opens });
          continue;
        }
      }
      const sender = pickSender(senders, recipient, campaign);
      if (!sender) {
        senderMissing = true;
        break;
      }
      sendable.push({ recipient, sender });
    }

    // Plan slots, one per message from the organization's next free one (its row stays locked until the batch
    // commits, so its campaigns take turns), as far as the lookahead and one beyond it. A run with nothing to
    // send (every recipient deferred or skipped) leaves the row alone.
    const horizon = new Date(now.getTime() + LOOKAHEAD_MS);
    const batch: { position: number; input: CampaignMessageInput }[] = [];
    let made: { messageId: string; slot: Date }[] = [];
    let refusal: ApiError | undefined;
    if (sendable.length > 0) {
      const interval = 1000 / PLAN_MESSAGES_PER_SECOND[org.plan];
      const planFrom = (await store.lockPlanPacing(tx, org.id, now)).getTime();
      for (const [index, { recipient, sender }] of sendable.entries()) {
        const notBefore = new Date(planFrom + index * interval);
        batch.push({
          position: recipient.position,
          input: {
            from: sender,
            to: recipient.phone,
            body: render(campaign.message, mergeContact(recipient)),
            notBefore,
          },
        });
        if (notBefore > horizon) break;
      }
      ({ made, refusal } = await this.make(tx, org, campaign, batch, horizon));
      await store.setPlanPacing(tx, org.id, new Date(planFrom + made.length * interval));
    }
    await store.markQueued(
      tx,
      campaign.id,
      made.map((message, index) => ({ position: batch[index]!.position, messageId: message.messageId })),
    );
    await store.defer(tx, campaign.id, deferred);
    await store.skip(tx, campaign.id, skipped);

    if (refusal) {
      await this.refused(tx, campaign, org, refusal, now);
      return;
    }
    const last = made.at(-1);
    if (last && last.slot > horizon) {
      // Far enough ahead: come back when the queue made so far is half spent.
      await this.next(tx, campaign, new Date(now.getTime() + LOOKAHEAD_MS / 2));
      return;
    }
    if (senderMissing) {
      await this.campaigns.pauseLocked(tx, campaign, 'SENDER_UNAVAILABLE');
      return;
    }
    if (due.length === RUN_BATCH) {
      await this.next(tx, campaign, now);
      return;
    }
    const nextDue = await store.nextDue(tx, campaign.id, now);
    if (nextDue) {
      await this.next(tx, campaign, nextDue);
      return;
    }
    await this.completeIfDone(tx, campaign, now);
  }

  /**
   * Makes the batch's messages, all at once; if the limits refuse the batch as a whole, one at a time up to
   * the first they refuse, which is returned with the messages made before it. Each attempt runs in a
   * savepoint, so a refused one leaves nothing counted, booked or stored.
   */
  private async make(
    tx: Queryable,
    org: Organization,
    campaign: CampaignRow,
    batch: { input: CampaignMessageInput }[],
    horizon: Date,
  ): Promise<{ made: { messageId: string; slot: Date }[]; refusal?: ApiError }> {
    const queue = (inputs: CampaignMessageInput[]) =>
      inSavepoint(tx, 'campaign_batch', () =>
        this.messaging.campaignMessages.queueMany(
          tx,
          org,
          {
            id: campaign.id,
            mediaUrls: campaign.media_urls,
            until: horizon,
            trackLinks: campaign.track_links,
          },
          inputs,
        ),
      );
    const inputs = batch.map((item) => item.input);
    try {
      return { made: await queue(inputs) };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      // A limit that could not be checked, or a batch of one, says all there is to know.
      if (error.status === 503 || inputs.length === 1) return { made: [], refusal: error };
    }
    const made: { messageId: string; slot: Date }[] = [];
    for (const input of inputs) {
      try {
        const [message] = await queue([input]);
        made.push(message!);
        if (message!.slot > horizon) break;
      } catch (error) {
        if (error instanceof ApiError) return { made, refusal: error };
        throw error;
      }
    }
    return { made };
  }

  /** Every recipient has its message: complete once none is still queued, else look again shortly. */
  private async completeIfDone(tx: Queryable, campaign: CampaignRow, now: Date): Promise<void> {
    const row = await this.campaigns.store.find(
      tx,
      campaign.organization_id,
      campaign.id,
      this.campaigns.receiptCutoff(),
    );
    if (!row) return;
    if (row.queued > 0) {
      await this.next(tx, campaign, new Date(now.getTime() + COMPLETION_CHECK_MS));
      return;
    }
    await this.campaigns.store.setState(
      tx,
      campaign.id,
      { status: 'completed', completed_at: now, run_token: null, waiting_until: null },
      now,
    );
    const done = { ...row, status: 'completed' as const, completed_at: now };
    await this.events.record(tx, CampaignCompleted, {
      organizationId: campaign.organization_id,
      data: { ...eventData(done, now), completedAt: now.toISOString() },
    });
  }

  /**
   * What a limit's refusal does to a sending campaign: a daily or new-account limit holds it until the limit
   * resets; a limit that could not be checked (503) is tried again after its Retry-After; anything else pauses it
   * with the refusal's code.
   */
  private async refused(
    tx: Queryable,
    campaign: CampaignRow,
    org: Organization,
    refusal: ApiError,
    now: Date,
  ): Promise<void> {
    const resets = this.messaging.campaignMessages.resetsAt(org, refusal);
    if (resets) {
      await this.campaigns.store.setState(tx, campaign.id, { waiting_until: resets }, now);
      await this.next(tx, campaign, resets);
      return;
    }
    if (refusal.status === 503) {
      const seconds = Number(refusal.headers?.['Retry-After'] ?? 2);
      await this.next(tx, campaign, new Date(now.getTime() + Math.max(1, seconds) * 1000));
      return;
    }
    await this.campaigns.pauseLocked(tx, campaign, refusal.code ?? `HTTP_${refusal.status}`);
  }

  private async next(tx: Queryable, campaign: CampaignRow, at: Date): Promise<void> {
    await this.jobs.enqueue(
      tx,
      RUN_QUEUE,
      { campaignId: campaign.id, token: campaign.run_token! } satisfies RunPayload,
      { runAt: at },
    );
  }
}

function quietWindow(campaign: CampaignRow): DailyWindow | undefined {
  const { quiet_start: start, quiet_end: end } = campaign;
  return quietHoursWindow(start && end ? { start, end } : null);
}

/** When `recipient`'s window is open at or after `now`: its contact's zone, else its number's, else the campaign's. */
function opening(now: Date, recipient: DueRecipient, campaignZone: string, window: DailyWindow): Date {
  return recipientOpening(now, recipient, campaignZone, window);
}

/** The recipient's sticky sender; if that number was released since launch, another of the campaign's. */
function pickSender(
  owned: Map<string, PhoneNumber>,
  recipient: DueRecipient,
  campaign: CampaignRow,
): PhoneNumber | undefined {
  return (
    owned.get(recipient.sender) ??
    campaign.senders.map((number) => owned.get(number)).find((number) => number !== undefined)
  );
}
