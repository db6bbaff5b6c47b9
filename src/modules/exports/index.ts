// The exports module: an organization's messages, contacts, calls or campaign recipients as a file, built
// by a durable job from the same lists the API answers, kept 7 days (CONTRACT section 11).
import { defineModule } from '../../platform/module.ts';
import { campaignsModule } from '../campaigns/index.ts';
import { contactsModule } from '../contacts/index.ts';
import { messagingModule } from '../messaging/index.ts';
import { voiceModule } from '../voice/index.ts';
import { ExportCompleted } from './events.ts';
import { type ExportsServices, exportRoutes } from './routes.ts';
import { BUILD_QUEUE, ExportService } from './service.ts';
import { exportSources } from './sources.ts';

export const exportsModule = defineModule({
  name: 'exports',
  create: ({ platform, use }): ExportsServices => {
    const { db, clock, jobs, events, pagination, rateLimiter } = platform;
    const sources = exportSources({
      messages: use(messagingModule).messages,
      contacts: use(contactsModule).contacts,
      calls: use(voiceModule).calls,
      campaigns: use(campaignsModule).campaigns,
    });
    return { exports: new ExportService({ db, clock, jobs, events, pagination, rateLimiter, sources }) };
  },
  routes: { developer: [exportRoutes], portal: [exportRoutes] },
  jobs: ({ exports }) => ({
    // A build of a large export takes minutes: its lease outlasts one, so no second worker starts it again
    // meanwhile (a build that did start again begins from the first chunk; the file comes out the same).
    [BUILD_QUEUE]: {
      handler: (payload: { exportId: string }) => exports.build(payload),
      options: { leaseSeconds: 30 * 60 },
    },
  }),
  events: [ExportCompleted],
  retention: ({ exports }) => [{ name: 'exports.expired', run: (now) => exports.removeExpired(now) }],
});
