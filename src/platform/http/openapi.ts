// The OpenAPI document's `webhooks` section (OpenAPI 3.1): one entry per declared event, describing the
// signed POST we make to a subscriber's endpoint. Built from the event declarations, never by hand.
import type { EventDefinition } from '../events.ts';

export function webhooksDocument(definitions: readonly EventDefinition[]): Record<string, unknown> {
  const document: Record<string, unknown> = {};
  for (const definition of definitions) {
    document[definition.type] = {
      post: {
        operationId: `events.${definition.type}`,
        tags: ['Events'],
        summary: definition.description,
        description:
          (definition.status === 'coming'
            ? 'Coming: subscribable now, emitted once its product ships. '
            : '') +
          'Signed per Standard Webhooks: verify `webhook-signature` over `webhook-id.webhook-timestamp.body` ' +
          "with the endpoint's secret.",
        parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({
          name,
          in: 'header',
          required: true,
          schema: { type: 'string' },
        })),
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['type', 'timestamp', 'data'],
                properties: {
                  type: { type: 'string', const: definition.type },
                  timestamp: { type: 'string', format: 'date-time', description: 'When the event happened' },
                  data: JSON.parse(JSON.stringify(definition.schema)),
                },
              },
              example: {
                type: definition.type,
                timestamp: '2026-06-10T12:00:00.000Z',
                data: definition.example,
              },
            },
          },
        },
        responses: { '2XX': { description: 'Received; any other answer is retried on the schedule' } },
      },
    };
  }
  return document;
}

/**
 * A route's request body as the document shows it, where Fastify must not validate one: uploads are read from
 * the multipart stream by the route itself (a `body` schema would make Fastify parse and check them). A route
 * names it in its schema as `'x-request-body'` (an OpenAPI Request Body Object, passed through by the swagger
 * plugin as an extension); `withDocumentedRequestBodies` moves it to `requestBody`, so SDK generators see the
 * multipart field names.
 */
export const REQUEST_BODY_DOC = 'x-request-body';

/** A multipart upload with a file in `file` and optional text fields. */
export function multipartUpload(
  fileDescription: string,
  fields: Record<string, string> = {},
  json?: object,
): Record<string, unknown> {
  const content: Record<string, unknown> = {
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['file'],
        properties: {
          file: { type: 'string', format: 'binary', description: fileDescription },
          ...Object.fromEntries(
            Object.entries(fields).map(([name, description]) => [name, { type: 'string', description }]),
          ),
        },
      },
    },
  };
  if (json) content['application/json'] = { schema: json };
  return { required: true, content };
}

/** Moves each operation's `x-request-body` to its `requestBody` (see REQUEST_BODY_DOC). */
export function withDocumentedRequestBodies<T extends { paths?: object }>(document: T): T {
  for (const item of Object.values((document.paths ?? {}) as Record<string, object>)) {
    for (const operation of Object.values(item) as Record<string, unknown>[]) {
      if (operation && typeof operation === 'object' && REQUEST_BODY_DOC in operation) {
        operation.requestBody = operation[REQUEST_BODY_DOC];
        delete operation[REQUEST_BODY_DOC];
      }
    }
  }
  return document;
}
