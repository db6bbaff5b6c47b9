// Organizations on the operator API (CONTRACT section 3): provisioning and billing state.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import { OrganizationFields, OrganizationSchema } from './schemas.ts';
import type { Organization, OrganizationService } from './service.ts';

const OrganizationCreate = Type.Object(
  {
    name: OrganizationFields.name,
    plan: Type.Optional(OrganizationFields.plan),
    subscriptionState: Type.Optional(OrganizationFields.subscriptionState),
    cardVerified: Type.Optional(OrganizationFields.cardVerified),
    region: Type.Optional(OrganizationFields.region),
    monthlyAllowanceSegments: Type.Optional(OrganizationFields.monthlyAllowanceSegments),
    dailyLimitSegments: Type.Optional(OrganizationFields.dailyLimitSegments),
    trialMessageLimit: Type.Optional(OrganizationFields.trialMessageLimit),
    createdAt: Type.Optional(OrganizationFields.createdAt),
  },
  { additionalProperties: false },
);
const OrganizationPatch = Type.Partial(OrganizationCreate, { additionalProperties: false, minProperties: 1 });
const tags = ['Organizations'];

export function publicOrganization(org: Organization) {
  return { ...org, createdAt: org.createdAt.toISOString(), updatedAt: org.updatedAt.toISOString() };
}

export const organizationOperatorRoutes =
  ({ organizations }: { organizations: OrganizationService }) =>
  async (app: App) => {
    app.post(
      '/organizations',
      {
        config: { errorStatuses: [409] },
        schema: {
          operationId: 'organizations.create',
          tags,
          summary: 'Create an organization',
          body: OrganizationCreate,
          response: { 201: envelope(OrganizationSchema) },
        },
      },
      async (request, reply) => {
        const org = await organizations.create(request.body);
        return reply.status(201).send({ success: true, data: publicOrganization(org) });
      },
    );

    app.get(
      '/organizations/:id',
      {
        schema: {
          operationId: 'organizations.get',
          tags,
          summary: 'Read an organization',
          params: IdParams,
          response: { 200: envelope(OrganizationSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: publicOrganization(await organizations.get(request.params.id)),
      }),
    );

    app.patch(
      '/organizations/:id',
      {
        schema: {
          operationId: 'organizations.update',
          tags,
          summary: 'Change an organization: plan, subscription state, billing fields, region',
          params: IdParams,
          body: OrganizationPatch,
          response: { 200: envelope(OrganizationSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: publicOrganization(await organizations.update(request.params.id, request.body)),
      }),
    );
  };
