// The console's phone (CONTRACT section 16): `POST /v2/portal/phone/credentials` issues the signed-in member
// short-lived SIP credentials for their own extension. Portal only: an API key belongs to no person and so has
// no extension of its own.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf } from '../../platform/http/caller.ts';
import { envelope } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { currentSession } from '../identity/index.ts';
import type { VoiceServices } from './services.ts';

const PhoneCredentialsSchema = Type.Object({
  extensionId: Type.String(),
  extension: Type.String({ description: "The extension's number (what others dial)" }),
  displayName: Type.String({ description: "The extension's name, for the phone's caller id" }),
  sipUri: Type.String({ description: 'The address of record to register: the extension’s own' }),
  username: Type.String({ description: 'The digest username, this credential’s own' }),
  password: Type.String({ description: 'Shown in this answer only' }),
  wsUrl: Type.String({ description: 'SIP over WebSocket (RFC 7118, subprotocol `sip`)' }),
  expiresAt: Type.String({ description: 'After this the registrar refuses them; ask for new ones before' }),
});

export const phoneRoutes: ModuleRoutes<VoiceServices> =
  ({ phoneCredentials }) =>
  async (app: App) => {
    app.post(
      '/phone/credentials',
      {
        config: { product: 'voice', errorStatuses: [404] },
        schema: {
          operationId: 'phone.credentials',
          tags: ['Phone'],
          summary:
            "Short-lived SIP credentials for the signed-in member's own extension (the console's phone); revoked at sign-out",
          description:
            'The member’s oldest extension assigned to them; 404 `NO_EXTENSION` when they have none. The credentials work for an hour (never past the session), end with the session, and the password is never shown again: ask for new ones to renew.',
          response: { 200: envelope(PhoneCredentialsSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const issued = await phoneCredentials.issue({
          organizationId: caller.organizationId,
          userId: caller.userId!,
          sessionId: currentSession(request).sessionId,
        });
        return { success: true as const, data: { ...issued, expiresAt: issued.expiresAt.toISOString() } };
      },
    );
  };
