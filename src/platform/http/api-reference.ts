// The browsable API reference at /docs (Scalar), loaded on its first request. `@scalar/fastify-api-reference`
// carries its browser bundle as a 4 MB string, and loading it cost about 0.35 s of CPU at every start of a
// server whose /docs may never be opened (docs/performance.md, issue 35). So the app owns the three routes the
// plugin would register (the page, its script, and the redirect of /docs to /docs/), and the first request to
// any of them loads the plugin into a small Fastify of its own, which answers this and every later request
// through `inject`. The plugin's own handlers stay the single source of the page; we only forward.
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

const PREFIX = '/docs';
/** The plugin's script path under the prefix (RELATIVE_JAVASCRIPT_PATH in its source). */
const SCRIPT = 'js/scalar.js';
/** Headers of the inner answer that describe the body itself; the outer app sets its own for the rest. */
const FORWARDED_HEADERS = ['content-type', 'location', 'content-disposition', 'cache-control'];

export function registerApiReference(app: FastifyInstance, openApiUrl: string): void {
  let inner: Promise<FastifyInstance> | undefined;
  const load = async () => {
    const { default: scalar } = await import('@scalar/fastify-api-reference');
    const docs = Fastify({ logger: false });
    await docs.register(scalar, { routePrefix: PREFIX, configuration: { url: openApiUrl } });
    await docs.ready();
    return docs;
  };
  const forward = async (request: FastifyRequest, reply: FastifyReply) => {
    inner ??= load().catch((error) => {
      inner = undefined; // the next request tries again
      throw error;
    });
    const answer = await (await inner).inject({
      method: 'GET',
      url: request.url,
      headers: { host: request.host },
    });
    for (const name of FORWARDED_HEADERS) {
      const value = answer.headers[name];
      if (value !== undefined) reply.header(name, value);
    }
    return reply.code(answer.statusCode).send(answer.rawPayload);
  };
  // The small Fastify closes with the app (it holds nothing but its routes, yet a closed app leaves nothing open).
  app.addHook('onClose', async () => {
    const loaded = await inner?.catch(() => undefined);
    await loaded?.close();
  });
  const hidden = { schema: { hide: true } };
  for (const url of [PREFIX, `${PREFIX}/`, `${PREFIX}/${SCRIPT}`]) app.get(url, hidden, forward);
}
