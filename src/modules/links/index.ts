// The links module: tracked short links (`PUBLIC_URL/l/{code}`) in campaign messages and, when asked, single
// messages; the public redirect that counts clicks; the `link.clicked` event. Messaging shortens the texts it
// sends through it; campaigns read their click figures from it.
import { defineModule } from '../../platform/module.ts';
import { LinkClicked } from './events.ts';
import { type LinksServices, linkRoutes } from './routes.ts';
import { LinkService } from './service.ts';

export const linksModule = defineModule({
  name: 'links',
  create: ({ platform }): LinksServices => {
    const { db, clock, events, pagination, config, rateLimiter } = platform;
    return {
      links: new LinkService({ db, clock, events, pagination, publicUrl: config.publicUrl, rateLimiter }),
    };
  },
  routes: { public: [linkRoutes] },
  events: [LinkClicked],
  retention: ({ links }) => [{ name: 'links.expired', run: (now) => links.removeExpired(now) }],
});

export { findLinks } from './matcher.ts';
export {
  type Click,
  LINK_CLICKS_PER_CODE_RULE,
  LINK_RETENTION_DAYS,
  type LinkService,
  type ShortenedText,
} from './service.ts';
export { LINK_UNFURLERS } from './unfurlers.ts';
