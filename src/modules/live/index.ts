// The live module: the organization's events as they happen, for the web console (GET /v2/portal/events,
// server-sent events; CONTRACT section 14, docs/live-events.md). It owns no tables: it reads the event
// outbox, which every module already writes, through the platform's LiveEvents.
import { LiveEvents } from '../../platform/live-events.ts';
import { defineModule } from '../../platform/module.ts';
import { type LiveServices, liveRoutes } from './routes.ts';

export const liveModule = defineModule({
  name: 'live',
  create: ({ platform }): LiveServices => ({
    live: new LiveEvents(platform.db, platform.clock, (error) =>
      platform.log.warn({ err: error }, 'live events: a read or the listening connection failed'),
    ),
  }),
  routes: { portal: [liveRoutes] },
});
