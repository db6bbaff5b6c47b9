// The messaging module: sending SMS/MMS with plan limits and idempotency, paced dispatch to the carrier,
// receipts, inbound texts with STOP/START/HELP, and message history.
import { defineModule } from '../../platform/module.ts';
import { contactsModule } from '../contacts/index.ts';
import { linksModule } from '../links/index.ts';
import { numbersModule } from '../numbers/index.ts';
import { organizationsModule } from '../organizations/index.ts';
import { MESSAGE_EVENTS } from './events.ts';
import { carrierTestControls, messageRoutes } from './routes.ts';
import { MessagingService, type MessagingServices } from './service.ts';

export const messagingModule = defineModule({
  name: 'messaging',
  create: ({ platform, use }): MessagingServices => {
    const { db, clock, jobs, events, pagination, idempotency, config } = platform;
    const { numbers, carrier } = use(numbersModule);
    const messagesByStatus = platform.metrics.counter({
      name: 'comms_messages_total',
      help: 'Messages reaching a status (scheduled, queued, sent, delivered, undelivered, failed, cancelled, received), by carrier',
      labels: ['status', 'carrier'],
    });
    const messages = new MessagingService({
      db,
      clock,
      jobs,
      events,
      pagination,
      idempotency,
      countMessages: (status, count = 1) => {
        if (count > 0) messagesByStatus.inc({ status, carrier: carrier.name }, count);
      },
      organizations: use(organizationsModule).organizations,
      numbers,
      contacts: use(contactsModule).contacts,
      links: use(linksModule).links,
      carrier,
      options: {
        automaticReceipts: config.appEnv !== 'test',
        guardMediaUrls: config.appEnv === 'production',
      },
    });
    carrier.listen?.(messages.carrierReports(carrier.name));
    return { messages };
  },
  routes: { developer: [messageRoutes], portal: [messageRoutes] },
  testControls: [carrierTestControls],
  jobs: ({ messages }) => messages.queues(),
  events: MESSAGE_EVENTS,
});

export type { CampaignMessageInput, CampaignMessages } from './campaign-messages.ts';
export { checkUrl as checkHostedMediaUrl } from './media.ts';
export {
  type MergeContact,
  type MergeFieldLengths,
  parseMergeTags,
  render,
  unsupportedMergeVariables,
} from './merge-variables.ts';
export { MESSAGE_STATUSES, SendResultSchema } from './schemas.ts';
export type { MessagingService, MessagingServices } from './service.ts';
