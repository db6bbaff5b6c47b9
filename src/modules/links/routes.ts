// The public redirect `GET /l/{code}` (and HEAD): what a phone opens when its owner taps a tracked link. No
// credential; not in the OpenAPI document (it is for people, not API clients). An unknown or expired code is a
// 404: a short HTML page for a browser (a person sees it), Shape A JSON for anything else.
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import type { LinkService } from './service.ts';

export interface LinksServices {
  links: LinkService;
}

const NOT_FOUND_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>Link not found</title></head>
<body style="font-family: system-ui, sans-serif; margin: 3rem auto; max-width: 28rem; padding: 0 1rem">
<h1 style="font-size: 1.4rem">This link does not work</h1>
<p>It may have expired, or it was copied incompletely. Ask the sender for a new link.</p>
</body></html>
`;

export const linkRoutes: ModuleRoutes<LinksServices> =
  ({ links }) =>
  async (app: App) => {
    app.route({
      method: ['GET', 'HEAD'],
      url: '/l/:code',
      schema: { hide: true, params: Type.Object({ code: Type.String({ maxLength: 200 }) }) },
      handler: async (request, reply) => {
        const url = await links.follow(request.params.code, {
          method: request.method,
          userAgent: request.headers['user-agent'],
          prefetch: isPrefetch(request.headers),
        });
        // Never cached: each tap must reach us to be counted, and an expired code must stop redirecting.
        reply.header('cache-control', 'private, no-store').header('referrer-policy', 'no-referrer');
        if (url !== undefined) return reply.redirect(url, 302);
        if (!(request.headers.accept ?? '').includes('text/html')) throw ApiError.notFound('Link');
        return reply.status(404).type('text/html; charset=utf-8').send(NOT_FOUND_PAGE);
      },
    });
  };

/**
 * A browser fetching ahead of a tap (Chrome's `Sec-Purpose: prefetch`, the older `Purpose: prefetch`, Firefox's
 * `X-Moz: prefetch`): answered, not counted, since nobody tapped yet.
 */
function isPrefetch(headers: Record<string, string | string[] | undefined>): boolean {
  return ['sec-purpose', 'purpose', 'x-moz'].some((name) => {
    const value = headers[name];
    return typeof value === 'string' && value.toLowerCase().includes('prefetch');
  });
}
