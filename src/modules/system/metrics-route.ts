// GET /metrics (CONTRACT section 15, docs/operations.md): this instance's metrics in the Prometheus text
// format, for a scraper holding METRICS_TOKEN. Without the token configured it answers 404 as a path that
// does not exist would (as the operator API without ADMIN_TOKEN); a missing or wrong token is a 401 in Shape A. It is not part of
// the API's OpenAPI document: it is for the operator's monitoring, not for clients.
import { bearerToken, secretsEqual } from '../../platform/auth/secrets.ts';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import type { Platform } from '../../platform/module.ts';

export const metricsRoute = (_services: unknown, platform: Platform) => async (app: App) => {
  const token = platform.config.metricsToken;
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    // Answered here rather than left unrouted: the web console's fallback would serve its page on this path.
    if (!token) throw ApiError.notFound('Route GET /metrics');
    const given = bearerToken(request.headers.authorization);
    if (!given) throw ApiError.unauthorized('Metrics token required', 'AUTH_REQUIRED');
    if (!secretsEqual(given, token)) throw ApiError.unauthorized('Invalid metrics token', 'TOKEN_INVALID');
    const { contentType, body } = await platform.metrics.render();
    return reply.header('content-type', contentType).header('cache-control', 'no-store').send(body);
  });
};
