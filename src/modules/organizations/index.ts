// The organizations module: the tenant every resource belongs to, its plan and billing state.
import { defineModule } from '../../platform/module.ts';
import { organizationOperatorRoutes } from './routes.ts';
import { OrganizationService } from './service.ts';

export {
  ACCOUNT_ACTIONS,
  ACCOUNT_POLICY,
  ACCOUNT_STANDINGS,
  type AccountAction,
  type AccountStanding,
  type AccountVerdict,
  accountPolicyRefusal,
  accountRefusal,
} from './account-policy.ts';
export type { Plan, Product, Region } from './schemas.ts';
export { PLANS, PRODUCTS, REGIONS, SUBSCRIPTION_STATES } from './schemas.ts';
export type { Organization } from './service.ts';
export { OrganizationService, organizationCacheTag } from './service.ts';

export const organizationsModule = defineModule({
  name: 'organizations',
  create: ({ platform }) => ({
    organizations: new OrganizationService({
      db: platform.db,
      clock: platform.clock,
      caches: platform.caches,
    }),
  }),
  routes: { operator: [organizationOperatorRoutes] },
});
