// Phone numbers on the operator API (CONTRACT section 3): provisioning a number to an organization.
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { organizationsModule } from '../organizations/index.ts';
import { NumberCreate, PhoneNumberSchema } from './schemas.ts';
import { type NumberService, publicPhoneNumber } from './service.ts';

export const numberOperatorRoutes: ModuleRoutes<{ numbers: NumberService }> =
  ({ numbers }, platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);
    app.post(
      '/organizations/:id/numbers',
      {
        config: { errorStatuses: [409] },
        schema: {
          operationId: 'numbers.create',
          tags: ['Numbers'],
          summary: 'Give an organization a phone number; its first is the default sender',
          params: IdParams,
          body: NumberCreate,
          response: { 201: envelope(PhoneNumberSchema) },
        },
      },
      async (request, reply) => {
        const number = await platform.db.transaction(async (tx) => {
          if (!(await organizations.exists(request.params.id, tx))) throw ApiError.notFound('Organization');
          return numbers.add(request.params.id, request.body, tx);
        });
        return reply.status(201).send({ success: true, data: publicPhoneNumber(number) });
      },
    );
  };
