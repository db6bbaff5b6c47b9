// Unauthenticated service routes: the API version and changelog, a health check for load balancers that says
// whether the database can be reached, and the test clock, an operator control that exists only under
// APP_ENV=test.
import { Type } from 'typebox';
import { isDatabaseUnavailable } from '../../platform/db/unavailable.ts';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { Platform } from '../../platform/module.ts';
import { CHANGELOG, CURRENT_VERSION, versionTable } from '../../platform/version.ts';
import type { Readiness } from './readiness.ts';

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

export const systemRoutes = (services: SystemServices, platform: Platform) => async (app: App) => {
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
        description:
          '200 while the database answers; 503 with `Retry-After` while it cannot be reached (a restart, a ' +
          'failover): the server reconnects by itself, so a load balancer should only hold traffic back meanwhile.',
        response: {
          200: Type.Object({
            status: Type.Literal('ok'),
            database: Type.String({ description: 'The engine: `pglite` or `postgres`' }),
            databaseState: Type.Literal('reachable'),
          }),
          503: Type.Object({
            status: Type.Literal('unavailable'),
            database: Type.String(),
            databaseState: Type.Literal('unreachable'),
          }),
        },
      },
    },
    async (_request, reply) => {
      const database = platform.db.engine;
      try {
        await platform.db.query('SELECT 1');
      } catch (error) {
        // Anything else (a closed database, a bug) is a fault of ours: the usual 500.
        if (!isDatabaseUnavailable(error)) throw error;
        reply.status(503).header('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
        return { status: 'unavailable' as const, database, databaseState: 'unreachable' as const };
      }
      return { status: 'ok' as const, database, databaseState: 'reachable' as const };
    },
  );

  // The probes of an orchestrator (CONTRACT section 15, docs/operations.md "Health").
  app.get(
    '/health/live',
    {
      schema: {
        operationId: 'system.live',
        tags: ['System'],
        summary: 'Liveness: the process answers',
        description:
          'Always 200 while the process runs and its event loop turns; checks nothing else, so that a database ' +
          'outage never gets healthy instances restarted. Restart the process when this stops answering.',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  const ReadinessParts = {
    database: Type.Union(
      [Type.Literal('ok'), Type.Literal('unreachable'), Type.Literal('migrations_pending')],
      {
        description:
          '`ok`; `unreachable`; or `migrations_pending` when the database lacks a migration of this code',
      },
    ),
    redis: Type.Optional(
      Type.Union([Type.Literal('ok'), Type.Literal('unreachable')], {
        description: 'Only when REDIS_URL is set',
      }),
    ),
    worker: Type.Optional(
      Type.Union([Type.Literal('ok'), Type.Literal('stalled')], {
        description:
          'Only when this process runs the background worker: whether its claim loop keeps turning',
      }),
    ),
  };
  app.get(
    '/health/ready',
    {
      schema: {
        operationId: 'system.ready',
        tags: ['System'],
        summary: 'Readiness: database, migrations, Redis and the worker',
        description:
          '200 when this instance can serve: the database answers and has every migration of this code, Redis ' +
          "answers (when configured), and the worker's claim loop is alive (when this process runs one). 503 with " +
          '`Retry-After` otherwise, each part saying `ok` or what is wrong with it. Take the instance out of the ' +
          'load balancer meanwhile; do not restart it for this.',
        response: { 200: Type.Object(ReadinessParts), 503: Type.Object(ReadinessParts) },
      },
    },
    async (_request, reply) => {
      const { ready, report } = await services.readiness.check();
      if (!ready) reply.status(503).header('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      return report;
    },
  );
};

export interface SystemServices {
  readiness: Readiness;
}

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
