// Cross-site request forgery protection for the interfaces a browser signs in to (portal, key and webhook
// management), the way browsers now make possible without a custom header (Go's http.CrossOriginProtection,
// Rails, the Fetch Metadata standard): a state-changing request is refused when the browser says it comes
// from another site.
//   - `Sec-Fetch-Site` (every current browser sends it): `same-origin` or `none` (typed in, a bookmark) pass;
//     `same-site` and `cross-site` are refused (a sibling subdomain is another origin too).
//   - Without it, `Origin` (older browsers send it on every POST): it must name this server (its Host, or
//     PUBLIC_URL's origin when a proxy rewrites Host).
//   - With neither, the request is not from a browser page (curl, a server, an SDK): nothing to forge.
// GET, HEAD and OPTIONS change nothing and are not checked. SameSite=Lax on the cookie stays as a second wall.
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The refusal for a cross-site state-changing request, or undefined when it may go on. */
export function crossOriginRefusal(request: FastifyRequest, publicOrigin?: string): ApiError | undefined {
  if (SAFE_METHODS.has(request.method)) return undefined;
  const site = single(request.headers['sec-fetch-site']);
  if (site !== undefined) {
    if (site === 'same-origin' || site === 'none') return undefined;
    return refusal(`Sec-Fetch-Site is ${site.slice(0, 20)}`);
  }
  const origin = single(request.headers.origin);
  if (origin === undefined) return undefined;
  if (origin === publicOrigin || hostOf(origin) === request.host) return undefined;
  return refusal('its Origin is not this server');
}

function refusal(why: string): ApiError {
  return ApiError.forbidden(
    `Cross-site request refused (${why}): the portal takes changes only from its own pages or from clients that are not browsers`,
    'CROSS_SITE_REQUEST',
  );
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined; // `null` (a sandboxed frame, a redirect chain) or garbage: not this server.
  }
}
