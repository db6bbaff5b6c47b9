// Webhook management for people (`/api/webhooks`, session token, Shape A; CONTRACT section 5): any member
// may read endpoints, their delivery logs and the event catalog; owners and admins create, change, delete,
// test and redeliver, and rotating a secret needs fresh two-factor verification when 2FA is on. The secret
// appears in the creation and rotation responses only. Another organization's webhook is a 404.
// The developer API lists endpoints at `GET /api/v2/webhooks` (scope webhooks:read, offset or keyset paging).
import { Type } from 'typebox';
import { catalogEntry } from '../../platform/events.ts';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf } from '../../platform/http/caller.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, PageQuery, pageResponse } from '../../platform/pagination.ts';
import type { WebhookDelivery } from './delivery.ts';
import {
  CatalogSchema,
  DeliverySchema,
  WebhookCreate,
  WebhookPatch,
  WebhookSchema,
  WebhookWithSecret,
} from './schemas.ts';
import type { WebhookService } from './service.ts';

export interface WebhooksServices {
  webhooks: WebhookService;
  webhookDelivery: WebhookDelivery;
}

const tags = ['Webhooks'];
/** Changing endpoints: owners and admins (CONTRACT section 4). */
const manage = { role: 'manager', errorStatuses: [409] } as const;
const DeliveryParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  deliveryId: Type.String({ minLength: 1, maxLength: 100 }),
});

/** Webhook management (`/api/webhooks`, management interface). */
export const webhookRoutes: ModuleRoutes<WebhooksServices> =
  ({ webhooks }, platform) =>
  async (app: App) => {
    app.get(
      '/webhooks/events',
      {
        schema: {
          operationId: 'webhooks.events',
          tags,
          summary: 'The event catalog: every type an endpoint may subscribe to, with its payload',
          response: { 200: envelope(Type.Array(CatalogSchema)) },
        },
      },
      async () => ({ success: true as const, data: platform.events.definitions().map(catalogEntry) }),
    );

    app.post(
      '/webhooks',
      {
        config: manage,
        schema: {
          operationId: 'webhooks.create',
          tags,
          summary: 'Create a webhook (owner or admin); the secret is shown in this response only',
          body: WebhookCreate,
          response: { 201: envelope(WebhookWithSecret) },
        },
      },
      async (request, reply) => {
        const { endpoint, secret } = await webhooks.create(callerOf(request).organizationId, request.body);
        return reply.status(201).send({ success: true, data: { ...endpoint, secret } });
      },
    );

    app.get(
      '/webhooks/:id',
      {
        schema: {
          operationId: 'webhooks.get',
          tags,
          summary: 'Read a webhook (never its secret)',
          params: IdParams,
          response: { 200: envelope(WebhookSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await webhooks.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.patch(
      '/webhooks/:id',
      {
        config: manage,
        schema: {
          operationId: 'webhooks.update',
          tags,
          summary:
            'Change url, events, description or enabled (owner or admin); enabling clears the failure record',
          params: IdParams,
          body: WebhookPatch,
          response: { 200: envelope(WebhookSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await webhooks.update(callerOf(request).organizationId, request.params.id, request.body),
      }),
    );

    app.delete(
      '/webhooks/:id',
      {
        config: manage,
        schema: {
          operationId: 'webhooks.delete',
          tags,
          summary: 'Delete a webhook and its delivery log (owner or admin)',
          params: IdParams,
          response: { 200: envelope(WebhookSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await webhooks.remove(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.post(
      '/webhooks/:id/rotate-secret',
      {
        config: { ...manage, stepUp: true },
        schema: {
          operationId: 'webhooks.rotateSecret',
          tags,
          summary:
            'Rotate the secret (owner or admin; step-up when 2FA is on). The old secret keeps signing for 24 hours',
          params: IdParams,
          response: { 200: envelope(WebhookWithSecret) },
        },
      },
      async (request) => {
        const { endpoint, secret } = await webhooks.rotateSecret(
          callerOf(request).organizationId,
          request.params.id,
        );
        return { success: true as const, data: { ...endpoint, secret } };
      },
    );

    app.post(
      '/webhooks/:id/test',
      {
        config: manage,
        schema: {
          operationId: 'webhooks.test',
          tags,
          summary: 'Queue a webhook.test event to this endpoint (owner or admin)',
          params: IdParams,
          response: { 202: envelope(DeliverySchema) },
        },
      },
      async (request, reply) => {
        const delivery = await webhooks.sendTest(callerOf(request).organizationId, request.params.id);
        return reply.status(202).send({ success: true, data: delivery });
      },
    );

    app.get(
      '/webhooks/:id/deliveries',
      {
        schema: {
          operationId: 'webhooks.deliveries.list',
          tags,
          summary:
            'Delivery log of a webhook, newest first, with every attempt (offset paging; cursor is ignored)',
          params: IdParams,
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(DeliverySchema) },
        },
      },
      async (request) =>
        pageResponse(
          await webhooks.deliveries(callerOf(request).organizationId, request.params.id, request.query),
        ),
    );

    app.post(
      '/webhooks/:id/deliveries/:deliveryId/redeliver',
      {
        config: manage,
        schema: {
          operationId: 'webhooks.deliveries.redeliver',
          tags,
          summary: 'Send a finished delivery again, once (owner or admin)',
          params: DeliveryParams,
          response: { 202: envelope(DeliverySchema) },
        },
      },
      async (request, reply) => {
        const delivery = await webhooks.redeliver(
          callerOf(request).organizationId,
          request.params.id,
          request.params.deliveryId,
        );
        return reply.status(202).send({ success: true, data: delivery });
      },
    );
  };

/**
 * Listing endpoints, on the developer API (`GET /api/v2/webhooks`, scope webhooks:read, offset or keyset
 * paging) and on management (`GET /api/webhooks`, any member, offset paging: a cursor is ignored there).
 */
export const webhookListRoute: ModuleRoutes<WebhooksServices> =
  ({ webhooks }) =>
  async (app: App) => {
    app.get(
      '/webhooks',
      {
        config: { scope: 'webhooks:read', rateLimit: 'messaging' },
        schema: {
          operationId: 'webhooks.list',
          tags,
          summary: "List the organization's webhooks, newest first (never the secrets)",
          querystring: PageQuery,
          response: { 200: PageEnvelope(WebhookSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const keyset = caller.interface === 'developer';
        return pageResponse(await webhooks.list(caller.organizationId, request.query, keyset));
      },
    );
  };
