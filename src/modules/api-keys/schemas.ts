// Response shapes of API key management; TypeScript types are Static<> of these.
import { type Static, Type } from 'typebox';

/** The key as clients see it after creation: never the secret or its hash. */
export const ApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  lastFour: Type.String(),
  scopes: Type.Array(Type.String()),
  expiresAt: Type.Union([Type.String(), Type.Null()]),
  revokedAt: Type.Union([Type.String(), Type.Null()]),
  lastUsedAt: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
});
export type PublicApiKey = Static<typeof ApiKeySchema>;

export const CreatedApiKeySchema = Type.Object({
  ...ApiKeySchema.properties,
  key: Type.String({ description: 'The full key. Shown in this response only: store it now.' }),
});
