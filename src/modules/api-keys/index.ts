// The API keys module: keys for the developer API (stored only as SHA-256), their management by people,
// and the developer API's guard.
import { defineModule } from '../../platform/module.ts';
import { organizationsModule } from '../organizations/index.ts';
import { apiKeyDeveloperRoutes } from './developer-routes.ts';
import { DeveloperGuard } from './guard.ts';
import { apiKeyRoutes } from './routes.ts';
import { ApiKeyService } from './service.ts';

export type { Scope } from './scopes.ts';

export const apiKeysModule = defineModule({
  name: 'apiKeys',
  create: ({ platform, use }) => {
    const { db, clock, config, pagination, rateLimiter, caches } = platform;
    const apiKeys = new ApiKeyService({
      db,
      clock,
      production: config.appEnv === 'production',
      pagination,
      caches,
    });
    const developerGuard = new DeveloperGuard({
      apiKeys,
      organizations: use(organizationsModule).organizations,
      rateLimiter,
      clock: platform.clock,
    });
    return { apiKeys, developerGuard };
  },
  routes: { developer: [apiKeyDeveloperRoutes], management: [apiKeyRoutes] },
});
