// The events the webhooks module emits itself.
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';

export const WebhookTest = defineEvent(
  'webhook.test',
  Type.Object({
    endpointId: Type.String({ description: 'The endpoint tested (wh_…)' }),
    message: Type.String({ description: 'A fixed text' }),
  }),
  'Sent by POST /api/webhooks/{id}/test to that endpoint only, whatever it subscribes to.',
  { example: { endpointId: 'wh_0mf3k2a9x4q8w7e6r5t4y3u2', message: 'This is a test event.' } },
);

export const EndpointDisabled = defineEvent(
  'webhook.endpoint_disabled',
  Type.Object({
    endpointId: Type.String({ description: 'The endpoint disabled (wh_…)' }),
    url: Type.String({ description: 'Its URL' }),
    reason: Type.String({
      description: '`gone` (answered 410) or `failing` (failed continuously for 5 days)',
    }),
    failingSince: Type.Union([Type.String(), Type.Null()], {
      description: 'Start of the run of failures, or null',
    }),
    disabledAt: Type.String({ description: 'When it was disabled' }),
  }),
  'One of your endpoints was disabled: it answered 410 Gone, or every delivery to it failed for 5 days.',
  {
    example: {
      endpointId: 'wh_0mf3k2a9x4q8w7e6r5t4y3u2',
      url: 'https://example.com/hooks',
      reason: 'failing',
      failingSince: '2026-06-05T12:00:00.000Z',
      disabledAt: '2026-06-10T12:00:00.000Z',
    },
  },
);
