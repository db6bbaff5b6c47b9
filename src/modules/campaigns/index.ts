// The campaigns module: campaigns to the members of contact lists, sent by a paced engine inside each
// recipient's quiet hours and the plan's limits, exactly once per recipient, with live delivery statistics.
import { defineModule } from '../../platform/module.ts';
import { contactsModule } from '../contacts/index.ts';
import { linksModule } from '../links/index.ts';
import { messagingModule } from '../messaging/index.ts';
import { numbersModule } from '../numbers/index.ts';
import { organizationsModule } from '../organizations/index.ts';
import { CampaignEngine } from './engine.ts';
import { CAMPAIGN_EVENTS } from './events.ts';
import { type CampaignsServices, campaignRoutes } from './routes.ts';
import { CampaignService, RECEIPT_WAIT_MS, RUN_QUEUE, type RunPayload, START_QUEUE } from './service.ts';

export { PLAN_MESSAGES_PER_SECOND } from './engine.ts';
export type { CampaignService } from './service.ts';

type Services = CampaignsServices & { engine: CampaignEngine };

export const campaignsModule = defineModule({
  name: 'campaigns',
  create: ({ platform, use }): Services => {
    const { db, clock, jobs, events, pagination } = platform;
    const organizations = use(organizationsModule).organizations;
    const numbers = use(numbersModule).numbers;
    const messaging = use(messagingModule).messages;
    // Contact lists are read by the snapshot's SQL; the module depends on contacts existing first.
    use(contactsModule);
    const campaigns = new CampaignService({
      db,
      clock,
      jobs,
      events,
      pagination,
      organizations,
      numbers,
      messaging,
      links: use(linksModule).links,
    });
    const engine = new CampaignEngine({
      db,
      clock,
      jobs,
      events,
      organizations,
      numbers,
      messaging,
      campaigns,
    });
    return { campaigns, engine };
  },
  routes: { developer: [campaignRoutes], portal: [campaignRoutes] },
  jobs: ({ campaigns, engine }) => ({
    // A run is one batch of at most RUN_BATCH messages: seconds at most, so a dead worker's run is taken up
    // again soon.
    [RUN_QUEUE]: { handler: (payload: RunPayload) => engine.run(payload), options: { leaseSeconds: 15 } },
    [START_QUEUE]: {
      handler: (payload: { campaignId: string }) => campaigns.startScheduled(payload.campaignId),
    },
  }),
  events: CAMPAIGN_EVENTS,
  // A STOP within 72 hours of a campaign message counts as that campaign's opt-out (analytics `optOuts`).
  consumers: ({ campaigns }) => {
    const consumer = Object.assign(
      async (event: { organizationId: string; type: string; data: Record<string, unknown> }) => {
        if (event.type !== 'contact.opted_out' || event.data.method !== 'sms_stop') return;
        const at = new Date(String(event.data.optedOutAt));
        await campaigns.store.recordOptOut(
          campaigns.db,
          event.organizationId,
          String(event.data.phone),
          new Date(at.getTime() - RECEIPT_WAIT_MS),
          at,
        );
      },
      { wants: async (_q: unknown, event: { type: string }) => event.type === 'contact.opted_out' },
    );
    return [consumer];
  },
});
