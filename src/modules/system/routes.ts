// Unauthenticated service routes: the API version and changelog, and a health check for load balancers;
// and the test clock, an operator control that exists only under APP_ENV=test.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { Platform } from '../../platform/module.ts';
import { CHANGELOG, CURRENT_VERSION, versionTable } from '../../platform/version.ts';

const nullableDate = Type.Union([Type.String(), Type.Null()]);
const VersionSchema = Type.Object({
  version: Type.String({ description: 'The current version' }),
  changelog: Type.Array(Type.Object({ version: Type.String(), changes: Type.Array(Type.String()) })),
  versions: Type.Array(
    Type.Object({
      version: Type.String(),
      status: Type.Enum(['current', 'deprecated', 'sunset']),
      deprecatedAt: nullableDate,
      successor: nullableDate,
      sunsetAt: Type.Union([Type.String(), Type.Null()], {
        description: 'The first day it is no longer served (at least 180 days after deprecation)',
      }),
    }),
    { description: 'Every version with its status (docs/versioning.md), newest first' },
  ),
});

export const systemRoutes = (_services: unknown, platform: Platform) => async (app: App) => {
  app.get(
    '/api/version',
    {
      schema: {
        operationId: 'system.version',
        tags: ['System'],
        summary: 'Current API version, every version with its status and sunset date, and the changelog',
        response: { 200: envelope(VersionSchema) },
      },
    },
    async () => ({
      success: true as const,
      data: { version: CURRENT_VERSION, changelog: CHANGELOG, versions: versionTable(platform.clock.now()) },
    }),
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
