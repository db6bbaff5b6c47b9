// Unauthenticated service routes: the API version and changelog, and a health check for load balancers.
import { Type } from 'typebox';
import type { App } from '../../app.ts';
import type { AppContext } from '../../context.ts';
import { envelope } from '../../platform/http/schemas.ts';
import { CHANGELOG, CURRENT_VERSION } from '../../platform/version.ts';

const VersionSchema = Type.Object({
  version: Type.String(),
  changelog: Type.Array(Type.Object({ version: Type.String(), changes: Type.Array(Type.String()) })),
});

export async function systemRoutes(app: App, ctx: AppContext) {
  app.get(
    '/api/version',
    {
      schema: {
        tags: ['System'],
        summary: 'Current API version and the changelog, newest first',
        response: { 200: envelope(VersionSchema) },
      },
    },
    async () => ({ success: true as const, data: { version: CURRENT_VERSION, changelog: CHANGELOG } }),
  );

  app.get(
    '/health',
    {
      schema: {
        tags: ['System'],
        summary: 'Liveness and database reachability',
        response: { 200: Type.Object({ status: Type.Literal('ok'), database: Type.String() }) },
      },
    },
    async () => {
      await ctx.db.query('SELECT 1');
      return { status: 'ok' as const, database: ctx.db.engine };
    },
  );
}
