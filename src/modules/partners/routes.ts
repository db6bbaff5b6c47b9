// Partner routes on the portal (CONTRACT section 11), behind the partner gate, and the operator's publishing of
// agreements. Reading is for any member of the partner; accepting and creating clients need owner or admin.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf } from '../../platform/http/caller.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { REGIONS } from '../organizations/index.ts';
import type { PartnerService } from './service.ts';

export interface PartnersServices {
  partners: PartnerService;
}

const tags = ['Partners'];
/** Every partner route may answer 403 (not a partner) and, but for the agreement's own, 412. */
const gated = { errorStatuses: [403, 412] } as const;
const agreementRoute = { errorStatuses: [403, 404, 409] } as const;

const AgreementSchema = Type.Object({
  version: Type.String(),
  text: Type.String(),
  publishedAt: Type.String({ format: 'date-time' }),
});
const AgreementState = Type.Object({
  ...AgreementSchema.properties,
  accepted: Type.Boolean({ description: 'Whether this organization accepted this version' }),
  acceptedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  acceptedBy: Type.Union([
    Type.Object({
      userId: Type.Union([Type.String(), Type.Null()]),
      email: Type.Union([Type.String(), Type.Null()]),
    }),
    Type.Null(),
  ]),
});
const ClientSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  plan: Type.String(),
  subscriptionState: Type.String(),
  region: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
});
const UsageSchema = Type.Object({
  organizationId: Type.String(),
  since: Type.String({ format: 'date-time' }),
  until: Type.String({ format: 'date-time' }),
  messages: Type.Integer({ description: 'Messages sent and received' }),
  segments: Type.Integer({ description: 'Segments of outbound messages' }),
  calls: Type.Integer(),
  minutes: Type.Integer({ description: "Talk time, each call's rounded up to a whole minute" }),
});
const ClientParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

export const partnerPortalRoutes: ModuleRoutes<PartnersServices> =
  ({ partners }) =>
  async (app: App) => {
    // After the session guard, on each partner route (route hooks: a plugin's own hook would reach every
    // route of the interface): only a partner, and but on the agreement's routes one that accepted it.
    const gate = (agreementRoute: boolean) => async (request: FastifyRequest) =>
      partners.gate(callerOf(request).organizationId, { agreementRoute });

    app.get(
      '/partner/agreement',
      {
        config: agreementRoute,
        preHandler: gate(true),
        schema: {
          operationId: 'partner.agreement.get',
          tags,
          summary: 'The partner agreement in force and whether this organization accepted it',
          response: { 200: envelope(AgreementState) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await partners.agreement(callerOf(request).organizationId),
      }),
    );

    app.post(
      '/partner/agreement/accept',
      {
        config: { ...agreementRoute, role: 'manager' },
        preHandler: gate(true),
        schema: {
          operationId: 'partner.agreement.accept',
          tags,
          summary: 'Accept the agreement in force (owner or admin); who and when are recorded',
          body: Type.Object(
            { version: Type.String({ minLength: 1, maxLength: 50 }) },
            { additionalProperties: false },
          ),
          response: { 200: envelope(AgreementState) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return {
          success: true as const,
          data: await partners.accept(caller.organizationId, caller.userId!, request.body.version),
        };
      },
    );

    app.get(
      '/partner/organizations',
      {
        config: gated,
        preHandler: gate(false),
        schema: {
          operationId: 'partner.organizations.list',
          tags,
          summary: "The partner's client organizations, newest first",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(ClientSchema) },
        },
      },
      async (request) =>
        pageResponse(await partners.listClients(callerOf(request).organizationId, request.query)),
    );

    app.post(
      '/partner/organizations',
      {
        config: { ...gated, role: 'manager' },
        preHandler: gate(false),
        schema: {
          operationId: 'partner.organizations.create',
          tags,
          summary: 'Create a client organization (owner or admin); the caller becomes its owner',
          body: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 200 }),
              region: Type.Optional(Type.Enum(REGIONS)),
            },
            { additionalProperties: false },
          ),
          response: { 201: envelope(ClientSchema) },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request);
        const client = await partners.createClient(caller.organizationId, caller.userId!, request.body);
        return reply.status(201).send({ success: true as const, data: client });
      },
    );

    app.get(
      '/partner/organizations/:id/usage',
      {
        config: gated,
        preHandler: gate(false),
        schema: {
          operationId: 'partner.organizations.usage',
          tags,
          summary: "A client's usage over a period (default: the last 30 days)",
          params: ClientParams,
          querystring: Type.Object({
            since: Type.Optional(Type.String({ maxLength: 40, description: 'Start, inclusive (ISO 8601)' })),
            until: Type.Optional(Type.String({ maxLength: 40, description: 'End, exclusive (ISO 8601)' })),
          }),
          response: { 200: envelope(UsageSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await partners.usage(callerOf(request).organizationId, request.params.id, request.query),
      }),
    );
  };

export const partnerOperatorRoutes: ModuleRoutes<PartnersServices> =
  ({ partners }) =>
  async (app: App) => {
    app.post(
      '/partner-agreements',
      {
        config: { errorStatuses: [409] },
        schema: {
          operationId: 'partnerAgreements.publish',
          tags: ['Partners'],
          summary:
            'Publish a new partner agreement: every partner must accept it before using partner routes',
          body: Type.Object(
            {
              version: Type.String({ minLength: 1, maxLength: 50 }),
              text: Type.String({ minLength: 1, maxLength: 200_000 }),
            },
            { additionalProperties: false },
          ),
          response: { 201: envelope(AgreementSchema) },
        },
      },
      async (request, reply) =>
        reply.status(201).send({
          success: true as const,
          data: await partners.publish(request.body.version, request.body.text),
        }),
    );
  };
