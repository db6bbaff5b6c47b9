// Organizations on the operator API (CONTRACT section 3): provisioning and billing state.
import type { App } from '../../platform/http/app-type.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import {
  OrganizationCreate,
  OrganizationPatch,
  OrganizationSchema,
  type PublicOrganization,
} from './schemas.ts';
import type { Organization, OrganizationService } from './service.ts';

const tags = ['Organizations'];

export function publicOrganization(org: Organization): PublicOrganization {
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
