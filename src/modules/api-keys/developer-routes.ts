// Developer API routes of this module: GET /api/v2/me, what the presented key is and whose.
import { Type } from 'typebox';
import type { App } from '../../app.ts';
import { ErrorShapeB, envelope } from '../../platform/http/schemas.ts';

const MeSchema = Type.Object({
  organization: Type.Object({ id: Type.String(), name: Type.String(), plan: Type.String() }),
  key: Type.Object({ id: Type.String(), prefix: Type.String(), scopes: Type.Array(Type.String()) }),
});

export async function apiKeyDeveloperRoutes(app: App) {
  app.get(
    '/me',
    {
      config: { rateLimit: 'other' },
      schema: {
        tags: ['Developer API'],
        summary: 'The organization and key behind this request',
        security: [{ apiKey: [] }],
        response: { 200: envelope(MeSchema), 401: ErrorShapeB, 403: ErrorShapeB, 429: ErrorShapeB },
      },
    },
    async (request) => {
      const { organization, apiKey } = request;
      return {
        success: true as const,
        data: {
          organization: { id: organization!.id, name: organization!.name, plan: organization!.plan },
          key: { id: apiKey!.id, prefix: apiKey!.prefix, scopes: apiKey!.scopes },
        },
      };
    },
  );
}
