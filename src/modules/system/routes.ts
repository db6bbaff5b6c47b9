// Unauthenticated service routes: the API version and changelog, and a health check for load balancers;
// and the test clock, an operator control that exists only under APP_ENV=test.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { Platform } from '../../platform/module.ts';
import { CHANGELOG, CURRENT_VERSION } from '../../platform/version.ts';

const VersionSchema = Type.Object({
  version: Type.String(),
  changelog: Type.Array(Type.Object({ version: Type.String(), changes: Type.Array(Type.String()) })),
});

export const systemRoutes = (_services: unknown, platform: Platform) => async (app: App) => {
  app.get(
    '/api/version',
    {
      schema: {
        operationId: 'system.version',
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
        operationId: 'system.health',
        tags: ['System'],
        summary: 'Liveness and database reachability',
        response: { 200: Type.Object({ status: Type.Literal('ok'), database: Type.String() }) },
      },
    },
    async () => {
      await platform.db.query('SELECT 1');
      return { status: 'ok' as const, database: platform.db.engine };
    },
  );
};

const CENTURY_SECONDS = 100 * 366 * 24 * 3600;

/** Move the server's one clock (APP_ENV=test only; CONTRACT section 3). */
export const clockTestControl = (_services: unknown, platform: Platform) => async (app: App) => {
  app.post(
    '/test/clock',
    {
      schema: {
        operationId: 'test.clock',
        tags: ['Test controls'],
        summary: 'Move the server clock (APP_ENV=test only)',
        body: Type.Union([
          // At most a century either way: the clock must stay within dates every part can represent.
          Type.Object(
            { advanceSeconds: Type.Number({ minimum: -CENTURY_SECONDS, maximum: CENTURY_SECONDS }) },
            { additionalProperties: false },
          ),
          Type.Object({ now: Type.String({ format: 'date-time' }) }, { additionalProperties: false }),
        ]),
        response: { 200: envelope(Type.Object({ now: Type.String() })) },
      },
    },
    async (request) => {
      const body = request.body as { advanceSeconds?: number; now?: string };
      const now =
        body.now !== undefined
          ? platform.clock.set(new Date(body.now))
          : platform.clock.advance(body.advanceSeconds!);
      return { success: true as const, data: { now: now.toISOString() } };
    },
  );
};
