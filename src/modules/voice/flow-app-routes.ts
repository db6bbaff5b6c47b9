// The secret requests to the customer's apps are signed with (flow-app-secrets.ts), on the developer API and
// the portal: read it (made on first read) and rotate it. A secret: scope flows:write on a key, owners and
// admins in the portal, as changing a flow is.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf } from '../../platform/http/caller.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import type { FlowAppSecrets } from './flow-app-secrets.ts';

const tags = ['Call flows'];
const access = { scope: 'flows:write', product: 'voice', role: 'manager' } as const;

const FlowAppSecretSchema = Type.Object({
  secret: Type.String({
    description:
      'The `whsec_…` secret (Standard Webhooks) that signs the requests to your apps: a webhook route, a ' +
      "gather's actionUrl, a redirect's url, and the call's end",
  }),
  previousSecretExpiresAt: Type.Union([Type.String(), Type.Null()], {
    description: 'Until then the secret this one replaced also signs (24 hours after a rotation)',
  }),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const flowAppRoutes: ModuleRoutes<{ flowAppSecrets: FlowAppSecrets }> =
  ({ flowAppSecrets }) =>
  async (app: App) => {
    app.get(
      '/call-flows/signing-secret',
      {
        config: access,
        schema: {
          operationId: 'callFlows.signingSecret',
          tags,
          summary: "The secret that signs the organization's requests to its apps (made on first read)",
          response: { 200: envelope(FlowAppSecretSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await flowAppSecrets.read(callerOf(request).organizationId),
      }),
    );

    app.post(
      '/call-flows/signing-secret/rotate',
      {
        config: access,
        schema: {
          operationId: 'callFlows.rotateSigningSecret',
          tags,
          summary: 'A new signing secret; the one it replaces keeps signing beside it for 24 hours',
          response: { 200: envelope(FlowAppSecretSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await flowAppSecrets.rotate(callerOf(request).organizationId),
      }),
    );
  };
