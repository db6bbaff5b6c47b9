// The web console (console/, a single-page app built into console/dist by the prepare step of `npm ci`) is
// served by this server at `/` (CONTRACT section 12). Hashed assets are cached for a year; the HTML shell is
// revalidated on every load so a deploy shows at once; any other path that is not an API path answers the
// shell (the app routes in the browser), so /login or /campaigns/cmp_… can be reloaded or linked to.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from './app-type.ts';

export const CONSOLE_DIST = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

/**
 * What the console's pages may load: only this origin's scripts, styles and API; images and audio also from
 * blob: and data: URLs (the QR code, recordings played from a fetched blob). No inline script or style, no
 * framing, no plugins, forms post only here.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SHELL_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-cache',
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
};

/** Paths that belong to the APIs: an unknown one stays a 404 in the API's shape, never the console's shell. */
const API_PATHS = /^\/(api|v2|admin|docs|openapi\.json|health)(\/|$|\?)/;

export interface ConsoleServing {
  /** Answers the console's shell for a browser's GET of a path that is not an API path; false otherwise. */
  fallback(request: FastifyRequest, reply: FastifyReply): boolean;
}

export async function serveConsole(app: App, dist = CONSOLE_DIST): Promise<ConsoleServing> {
  const indexFile = path.join(dist, 'index.html');
  const shell = existsSync(indexFile) ? readFileSync(indexFile) : null;
  const sendShell = (reply: FastifyReply) => {
    if (!shell) {
      return reply
        .status(503)
        .header('content-type', 'text/plain; charset=utf-8')
        .send('The console is not built: run `npm run build --workspace console` (npm ci does it).\n');
    }
    return reply.status(200).headers(SHELL_HEADERS).send(shell);
  };

  if (shell) {
    await app.register(fastifyStatic, {
      root: dist,
      prefix: '/',
      index: false,
      wildcard: false,
      // Vite names every asset after its content's hash: a changed file is a new name, so it never goes stale.
      cacheControl: false,
      setHeaders: (res, filePath) => {
        const immutable = filePath.startsWith(path.join(dist, 'assets') + path.sep);
        res.setHeader('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
        res.setHeader('x-content-type-options', 'nosniff');
        res.setHeader('content-security-policy', CONSOLE_CSP);
      },
    });
  }
  app.get('/', { schema: { hide: true } }, (_request, reply) => sendShell(reply));

  return {
    fallback(request, reply) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return false;
      if (API_PATHS.test(request.url)) return false;
      // A file that does not exist (a stale hashed asset, favicon) is a real 404, not the shell.
      if (request.url.startsWith('/assets/') || /\.[a-z0-9]{1,5}(\?|$)/i.test(request.url)) return false;
      sendShell(reply);
      return true;
    },
  };
}
