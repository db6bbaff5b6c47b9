// The organizations module: the tenant every resource belongs to, its plan and billing state.
import { defineModule } from '../../platform/module.ts';
import { organizationOperatorRoutes } from './routes.ts';
import { OrganizationService } from './service.ts';

export { publicOrganization } from './routes.ts';
export { OrganizationFields, OrganizationSchema } from './schemas.ts';
export type { Organization, OrganizationInput, Plan, Region, SubscriptionState } from './service.ts';
export { OrganizationService, PLANS, REGIONS, SUBSCRIPTION_STATES } from './service.ts';

export const organizationsModule = defineModule({
  name: 'organizations',
  create: ({ platform }) => ({
    organizations: new OrganizationService({ db: platform.db, clock: platform.clock }),
  }),
  routes: { operator: [organizationOperatorRoutes] },
});
