// The webhooks module: endpoints, Standard Webhooks signing, durable delivery with retries, delivery logs.
// It consumes every recorded event and fans it out to the endpoints subscribed to it.
import { defineModule } from '../../platform/module.ts';
import { WebhookDelivery } from './delivery.ts';
import { EndpointDisabled, WebhookTest } from './events.ts';
import { type WebhooksServices, webhookListRoute, webhookRoutes } from './routes.ts';
import { DELIVER_QUEUE, WebhookService } from './service.ts';
import { WebhookTransport } from './transport.ts';

/** Signing (Standard Webhooks) and secrets, for what else the platform signs: a call flow's requests to an app. */
export { newWebhookSecret, ROTATION_OVERLAP_MS, type WebhookService } from './service.ts';
export { signedHeaders } from './signature.ts';
/** The guarded HTTP client webhooks are sent with; agents call their tools with it too. */
export { type PostResult, WebhookTransport } from './transport.ts';

/** The delivery log keeps a finished delivery this long after its last attempt (docs/webhooks.md). */
const DELIVERY_LOG_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export const webhooksModule = defineModule({
  name: 'webhooks',
  create: ({ platform }): WebhooksServices => {
    const { db, clock, jobs, events, pagination, config } = platform;
    const production = config.appEnv === 'production';
    // Delivery and management refer to each other (a test event is enqueued on the delivery queue; delivery
    // opens the sealed secrets), so the service is handed to delivery lazily.
    let webhooks: WebhookService | undefined;
    const webhookDelivery = new WebhookDelivery({
      db,
      clock,
      jobs,
      events,
      service: () => webhooks!,
      transport: new WebhookTransport({ guarded: production }),
      concurrency: config.webhookConcurrency,
      meter: platform.metrics,
    });
    webhooks = new WebhookService({
      db,
      clock,
      secrets: platform.secretBox('webhook-secret'),
      pagination,
      events,
      options: {
        production,
        enqueue: webhookDelivery.enqueue,
        isQueued: webhookDelivery.isQueued,
        resetPace: webhookDelivery.resetPace,
      },
    });
    return { webhooks, webhookDelivery };
  },
  routes: { developer: [webhookListRoute], management: [webhookRoutes, webhookListRoute] },
  jobs: ({ webhookDelivery }) => ({ [DELIVER_QUEUE]: webhookDelivery.queue }),
  consumers: ({ webhookDelivery }) => [webhookDelivery.consumer],
  retention: ({ webhookDelivery }) => [
    {
      name: 'webhooks.deliveries',
      run: (now) => webhookDelivery.removeFinished(new Date(now.getTime() - DELIVERY_LOG_RETENTION_MS)),
    },
  ],
  events: [WebhookTest, EndpointDisabled],
  // Signing secrets, bound to their endpoint's id.
  sealed: [
    {
      table: 'webhook_endpoints',
      key: 'id',
      columns: ['secret_sealed', 'previous_secret_sealed'],
      purpose: 'webhook-secret',
      associatedData: 'id',
    },
  ],
});
