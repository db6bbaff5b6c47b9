// Developer API routes of this module: GET /api/v2/me, what the presented key is and whose.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf } from '../../platform/http/caller.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { organizationsModule } from '../organizations/index.ts';

const MeSchema = Type.Object({
  organization: Type.Object({ id: Type.String(), name: Type.String(), plan: Type.String() }),
  key: Type.Object({ id: Type.String(), prefix: Type.String(), scopes: Type.Array(Type.String()) }),
});

export const apiKeyDeveloperRoutes: ModuleRoutes<unknown> =
  (_services, _platform, use) => async (app: App) => {
    const { organizations } = use(organizationsModule);
    app.get(
      '/me',
      {
        config: { rateLimit: 'other' },
        schema: {
          operationId: 'me.get',
          tags: ['Account'],
          summary: 'The organization and key behind this request',
          response: { 200: envelope(MeSchema) },
        },
      },
      async (request) => {
        const organization = await organizations.ofCaller(callerOf(request));
        const apiKey = request.apiKey!;
        return {
          success: true as const,
          data: {
            organization: { id: organization.id, name: organization.name, plan: organization.plan },
            key: { id: apiKey.id, prefix: apiKey.prefix, scopes: apiKey.scopes },
          },
        };
      },
    );
  };
