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
