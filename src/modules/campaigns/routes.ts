// Campaigns over HTTP (CONTRACT section 8), written once and mounted on the developer API (`/api/v2`, scopes
// campaigns:read / campaigns:write, counted as the messaging product per organization) and the portal twin
// (`/v2/portal`; any member, since running a campaign is sending). Handlers parse and answer; the rules are in
// CampaignService. Requests pinned to an older API version see campaigns as that version showed them.
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../platform/http/caller.ts';
import { REQUEST_BODY_DOC } from '../../platform/http/openapi.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { asOfVersion, type VersionGate } from '../../platform/version.ts';
import { organizationsModule } from '../organizations/index.ts';
import { RETRY_INCLUDES, type RetryInclude } from './follow-up-store.ts';
import {
  type Campaign,
  type CampaignAnalytics,
  CampaignAnalyticsSchema,
  CampaignClickSchema,
  CampaignCreate,
  type CampaignListItem,
  CampaignListItemSchema,
  CampaignRecipientSchema,
  CampaignRetry,
  CampaignSchema,
  CampaignUpdate,
} from './schemas.ts';
import { type CampaignService, rate } from './service.ts';

export interface CampaignsServices {
  campaigns: CampaignService;
}

const tags = ['Campaigns'];
const read = { scope: 'campaigns:read', rateLimit: 'messaging', product: 'messaging' } as const;
const write = { scope: 'campaigns:write', rateLimit: 'messaging', product: 'messaging' } as const;
const limitStatuses = [402, 409, 422, 429, 503] as const;

/** 2026-09-01 added the delivery statistics and redefined the rates over `attempted` (CONTRACT 8). */
const CAMPAIGN_GATES: VersionGate<Campaign>[] = [
  {
    since: '2026-09-01',
    undo: ({ deliveryStats: _stats, ...campaign }) => ({
      ...campaign,
      deliveryRate: rate(campaign.messages_delivered, campaign.messages_sent),
      failureRate: rate(campaign.messages_failed, campaign.messages_sent),
    }),
  },
];
const LIST_ITEM_GATES: VersionGate<CampaignListItem>[] = [
  {
    since: '2026-09-01',
    undo: ({ delivery_stats: _stats, ...campaign }) => ({
      ...campaign,
      deliveryRate: rate(campaign.messages_delivered, campaign.messages_sent),
      failureRate: rate(campaign.messages_failed, campaign.messages_sent),
    }),
  },
];
type Analytics = CampaignAnalytics & { messagesSent?: number };
const ANALYTICS_GATES: VersionGate<Analytics>[] = [
  {
    since: '2026-09-01',
    undo: ({ attempted: _a, awaiting: _w, noReceipt: _n, provisional: _p, messagesSent = 0, ...analytics }) =>
      ({
        ...analytics,
        deliveryRate: rate(analytics.delivered, messagesSent),
        failureRate: rate(analytics.failed + analytics.undelivered, messagesSent),
      }) as Analytics,
  },
];

export const campaignRoutes: ModuleRoutes<CampaignsServices> =
  ({ campaigns }, _platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);
    const one = (version: string, campaign: Campaign) => ({
      success: true as const,
      data: asOfVersion(campaign, version, CAMPAIGN_GATES),
    });

    app.get(
      '/campaigns',
      {
        config: read,
        schema: {
          operationId: 'campaigns.list',
          tags,
          summary: 'List campaigns, newest first, with delivery statistics (offset paging)',
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(CampaignListItemSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const page = await campaigns.list(caller.organizationId, request.query, cursorScope(caller));
        return pageResponse({
          ...page,
          data: page.data.map((item) => asOfVersion(item, request.apiVersion, LIST_ITEM_GATES)),
        });
      },
    );

    app.post(
      '/campaigns',
      {
        config: { ...write, errorStatuses: [422] },
        schema: {
          operationId: 'campaigns.create',
          tags,
          summary: 'Create a draft campaign',
          body: CampaignCreate,
          response: { 201: envelope(CampaignSchema) },
        },
      },
      async (request, reply) => {
        const organization = await organizations.ofCaller(callerOf(request));
        const campaign = await campaigns.create(organization, request.body);
        return reply.status(201).send(one(request.apiVersion, campaign));
      },
    );

    app.get(
      '/campaigns/:id',
      {
        config: read,
        schema: {
          operationId: 'campaigns.get',
          tags,
          summary: 'Read a campaign with its delivery statistics',
          params: IdParams,
          response: { 200: envelope(CampaignSchema) },
        },
      },
      async (request) =>
        one(request.apiVersion, await campaigns.get(callerOf(request).organizationId, request.params.id)),
    );

    app.patch(
      '/campaigns/:id',
      {
        config: { ...write, errorStatuses: limitStatuses },
        schema: {
          operationId: 'campaigns.update',
          tags,
          summary: 'Change a draft or scheduled campaign',
          params: IdParams,
          body: CampaignUpdate,
          response: { 200: envelope(CampaignSchema) },
        },
      },
      async (request) => {
        const organization = await organizations.ofCaller(callerOf(request));
        return one(request.apiVersion, await campaigns.update(organization, request.params.id, request.body));
      },
    );

    app.delete(
      '/campaigns/:id',
      {
        config: { ...write, errorStatuses: [409] },
        schema: {
          operationId: 'campaigns.delete',
          tags,
          summary: 'Delete a draft campaign',
          params: IdParams,
          response: { 200: envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) })) },
        },
      },
      async (request) => {
        await campaigns.delete(callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );

    const transitions = [
      ['launch', 'Launch a draft: now, or at its scheduledAt', limitStatuses],
      ['pause', 'Pause a sending campaign', [409]],
      ['resume', 'Resume a paused campaign', [409]],
      ['cancel', 'Cancel a campaign: queued messages are cancelled, sent ones stand', [409]],
    ] as const;
    for (const [action, summary, statuses] of transitions) {
      app.post(
        `/campaigns/:id/${action}`,
        {
          config: { ...write, errorStatuses: statuses },
          schema: {
            operationId: `campaigns.${action}`,
            tags,
            summary,
            params: IdParams,
            response: { 200: envelope(CampaignSchema) },
          },
        },
        async (request) => {
          const caller = callerOf(request);
          const id = request.params.id;
          const campaign =
            action === 'launch'
              ? await campaigns.launch(await organizations.ofCaller(caller), id)
              : await campaigns[action](caller.organizationId, id);
          return one(request.apiVersion, campaign);
        },
      );
    }

    app.post(
      '/campaigns/:id/retry',
      {
        config: { ...write, errorStatuses: [409] },
        schema: {
          operationId: 'campaigns.retry',
          tags,
          summary:
            'Follow up a campaign: a draft to the recipients whose messages failed or were undelivered, opted-out ones excluded',
          description:
            'Optional JSON body `{"include": ["failed", "undelivered", "no_receipt"]}` (default failed and undelivered); the body may be omitted.',
          [REQUEST_BODY_DOC]: { required: false, content: { 'application/json': { schema: CampaignRetry } } },
          params: IdParams,
          response: { 201: envelope(CampaignSchema) },
        },
      },
      async (request, reply) => {
        const { organizationId } = callerOf(request);
        const include = retryInclude(request.body);
        const followUp = await campaigns.retry(organizationId, request.params.id, include);
        return reply.status(201).send(one(request.apiVersion, followUp));
      },
    );

    app.get(
      '/campaigns/:id/analytics',
      {
        config: read,
        schema: {
          operationId: 'campaigns.analytics',
          tags,
          summary: 'Delivery analytics of a campaign',
          params: IdParams,
          response: { 200: envelope(CampaignAnalyticsSchema) },
        },
      },
      async (request) => {
        const analytics = await campaigns.analytics(callerOf(request).organizationId, request.params.id);
        const data = asOfVersion<Analytics>(analytics, request.apiVersion, ANALYTICS_GATES);
        delete data.messagesSent;
        return { success: true as const, data };
      },
    );

    app.get(
      '/campaigns/:id/recipients',
      {
        config: read,
        schema: {
          operationId: 'campaigns.recipients',
          tags,
          summary: "A campaign's recipients: phone, status, message and error (offset paging)",
          params: IdParams,
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(CampaignRecipientSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await campaigns.recipients(
            caller.organizationId,
            request.params.id,
            request.query,
            cursorScope(caller),
          ),
        );
      },
    );

    app.get(
      '/campaigns/:id/clicks',
      {
        config: read,
        schema: {
          operationId: 'campaigns.clicks',
          tags,
          summary: "Who clicked a campaign's tracked links: phone, URL, time and user agent (offset paging)",
          params: IdParams,
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(CampaignClickSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await campaigns.clicks(
            caller.organizationId,
            request.params.id,
            request.query,
            cursorScope(caller),
          ),
        );
      },
    );
  };

/**
 * A retry's optional body (absent: the default): `include`, one to three distinct known values, nothing else.
 * Read here because the body may be missing altogether, which a body schema would refuse.
 */
function retryInclude(body: unknown): RetryInclude[] | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body !== 'object' || Array.isArray(body)) throw ApiError.badRequest('body must be an object');
  const { include, ...rest } = body as { include?: unknown };
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw ApiError.badRequest(`body.${unknown[0]} is not a known field`);
  if (include === undefined) return undefined;
  const known: readonly unknown[] = RETRY_INCLUDES;
  if (
    !Array.isArray(include) ||
    include.length === 0 ||
    !include.every((each) => known.includes(each)) ||
    new Set(include).size !== include.length
  ) {
    throw ApiError.badRequest(`body.include must be distinct values of ${RETRY_INCLUDES.join(', ')}`);
  }
  return include as RetryInclude[];
}
