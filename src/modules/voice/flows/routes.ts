// Call flows on the developer API and the portal (CONTRACT section 13). Scopes flows:read and flows:write;
// the voice product; in the portal any member reads and owners and admins change them.
import { Type } from 'typebox';
import type { App } from '../../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../../platform/http/caller.ts';
import { envelope, IdParams } from '../../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../../platform/pagination.ts';
import { CallFlowCreate, CallFlowPatch, CallFlowSchema } from './schemas.ts';
import type { CallFlowService } from './service.ts';

const tags = ['Call flows'];
const read = { scope: 'flows:read', product: 'voice' } as const;
const write = { scope: 'flows:write', product: 'voice', role: 'manager' } as const;
const STEP_REFUSAL =
  'Refusals: 400 INVALID_FLOW_STEP with `data.path`, the path of the first bad field (e.g. ' +
  '`steps.2.branches.1.0.text`), also when a step names an extension, agent or call flow the organization ' +
  'does not have.';

export const callFlowRoutes: ModuleRoutes<{ flows: CallFlowService }> =
  ({ flows }) =>
  async (app: App) => {
    app.get(
      '/call-flows',
      {
        config: read,
        schema: {
          operationId: 'callFlows.list',
          tags,
          summary: "The organization's call flows with their latest steps, newest first (offset paging)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(CallFlowSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await flows.page(caller.organizationId, request.query, cursorScope(caller)));
      },
    );

    app.post(
      '/call-flows',
      {
        config: write,
        schema: {
          operationId: 'callFlows.create',
          tags,
          summary: 'Create a call flow (version 1)',
          description: STEP_REFUSAL,
          body: CallFlowCreate,
          response: { 201: envelope(CallFlowSchema) },
        },
      },
      async (request, reply) =>
        reply.status(201).send({
          success: true,
          data: await flows.create(callerOf(request).organizationId, request.body),
        }),
    );

    app.get(
      '/call-flows/:id',
      {
        config: read,
        schema: {
          operationId: 'callFlows.get',
          tags,
          summary: 'One call flow, with the steps of its latest version',
          params: IdParams,
          response: { 200: envelope(CallFlowSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await flows.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.patch(
      '/call-flows/:id',
      {
        config: write,
        schema: {
          operationId: 'callFlows.update',
          tags,
          summary: 'Rename a call flow, or give it new steps: a new version; calls under way keep theirs',
          description: STEP_REFUSAL,
          params: IdParams,
          body: CallFlowPatch,
          response: { 200: envelope(CallFlowSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await flows.update(callerOf(request).organizationId, request.params.id, request.body),
      }),
    );

    app.delete(
      '/call-flows/:id',
      {
        config: { ...write, errorStatuses: [409] },
        schema: {
          operationId: 'callFlows.delete',
          tags,
          summary: 'Delete a call flow and all its versions',
          description:
            'Refused with 409 CALL_FLOW_IN_USE while a number sends its calls to it; `data.numbers` lists them.',
          params: IdParams,
          response: { 200: envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) })) },
        },
      },
      async (request) => {
        await flows.delete(callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );
  };
