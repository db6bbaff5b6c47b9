// The partners module: partner organizations, the agreement they accept, their client organizations and
// their clients' usage (CONTRACT section 11, docs/partners.md).
import { defineModule } from '../../platform/module.ts';
import { identityModule } from '../identity/index.ts';
import { organizationsModule } from '../organizations/index.ts';
import { type PartnersServices, partnerOperatorRoutes, partnerPortalRoutes } from './routes.ts';
import { PartnerService } from './service.ts';

export const partnersModule = defineModule({
  name: 'partners',
  create: ({ platform, use }): PartnersServices => {
    const { db, clock, pagination } = platform;
    return {
      partners: new PartnerService({
        db,
        clock,
        pagination,
        organizations: use(organizationsModule).organizations,
        users: use(identityModule).users,
      }),
    };
  },
  routes: { portal: [partnerPortalRoutes], operator: [partnerOperatorRoutes] },
});
