// POST /carriers/{name}/webhook: where a provider's HTTP API reports on our messages and hands us texts to
// our numbers. Anonymous, as webhooks are: the carrier adapter checks the provider's signature over the raw
// body (so this route reads the body as bytes, unparsed) and refuses anything unsigned, forged or stale.
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import type { NumbersServices } from './service.ts';

/** Webhook bodies are small JSON documents; anything larger is not a provider's report. */
const WEBHOOK_BODY_LIMIT = 256 * 1024;

export const carrierWebhookRoutes: ModuleRoutes<NumbersServices> =
  ({ carrier }) =>
  async (app: App) => {
    await app.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(
        '*',
        { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT },
        (_request, body, done) => done(null, body),
      );
      scope.post(
        '/carriers/:name/webhook',
        {
          config: { errorStatuses: [401] },
          schema: {
            operationId: 'carriers.webhook',
            tags: ['Carriers'],
            summary: "A carrier's status report or inbound text (signed by the provider; docs/carriers.md)",
            params: Type.Object({ name: Type.String({ minLength: 1, maxLength: 40 }) }),
            response: { 200: Type.Object({ received: Type.Boolean() }) },
          },
        },
        async (request) => {
          const { name } = request.params as { name: string };
          if (name !== carrier.name || !carrier.handleWebhook) throw ApiError.notFound('Carrier');
          const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
          const result = await carrier.handleWebhook({ body, headers: request.headers });
          if (!result.accepted) {
            request.log.warn({ carrier: name, reason: result.reason }, 'carrier webhook refused');
            throw new ApiError(401, `Webhook refused: ${result.reason ?? 'signature'}`, {
              code: 'INVALID_SIGNATURE',
            });
          }
          return { received: true };
        },
      );
    });
  };
