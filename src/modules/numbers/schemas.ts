// Request and response shapes of phone numbers; TypeScript types are Static<> of these.
import { type Static, Type } from 'typebox';
import { NUMBER_COUNTRIES, NUMBER_TYPES } from '../../carriers/carrier.ts';

export const NumberCreate = Type.Object(
  { number: Type.String({ minLength: 1, maxLength: 32 }), type: Type.Enum(NUMBER_TYPES) },
  { additionalProperties: false },
);
export type NumberInput = Static<typeof NumberCreate>;

/** Where a call to the number goes (CONTRACT sections 9 and 13). */
export const VOICE_ROUTE_TYPES = ['extension', 'agent', 'forward', 'voicemail', 'flow', 'webhook'] as const;
export const VoiceRouteSchema = Type.Object(
  {
    type: Type.Enum(VOICE_ROUTE_TYPES),
    target: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'extension and voicemail: an extension id; agent: an agent id; forward: a phone number; flow: a call ' +
        "flow id; webhook: the URL of the app that answers each call with its steps (docs/voice.md 'Flows from your app')",
    }),
    fallbackFlowId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          'webhook only: a call flow of the organization that runs when the app cannot be reached, times out ' +
          'or answers anything but valid steps',
      }),
    ),
  },
  { additionalProperties: false },
);
export type VoiceRoute = Static<typeof VoiceRouteSchema>;

const FriendlyName = Type.String({ minLength: 1, maxLength: 64 });

export const PhoneNumberSchema = Type.Object({
  id: Type.String(),
  organizationId: Type.String(),
  number: Type.String(),
  type: Type.Enum(NUMBER_TYPES),
  isDefault: Type.Boolean(),
  friendlyName: Type.Union([Type.String(), Type.Null()]),
  voiceRoute: Type.Union([VoiceRouteSchema, Type.Null()]),
  createdAt: Type.String(),
});
export type PublicPhoneNumber = Static<typeof PhoneNumberSchema>;

/** POST /numbers: buy a number the carrier offers. */
export const NumberBuy = Type.Object(
  { number: Type.String({ minLength: 1, maxLength: 32 }), friendlyName: Type.Optional(FriendlyName) },
  { additionalProperties: false },
);
export type NumberBuyInput = Static<typeof NumberBuy>;

export const NumberPatch = Type.Object(
  {
    friendlyName: Type.Optional(Type.Union([FriendlyName, Type.Null()])),
    voiceRoute: Type.Optional(Type.Union([VoiceRouteSchema, Type.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type NumberPatchInput = Static<typeof NumberPatch>;

export const AvailableQuery = Type.Object(
  {
    country: Type.Optional(Type.Enum(NUMBER_COUNTRIES, { default: 'US' })),
    type: Type.Optional(Type.Enum(['local', 'toll_free'], { default: 'local' })),
    areaCode: Type.Optional(Type.String({ pattern: '^[2-9][0-9]{2}$', description: 'Three digits' })),
    contains: Type.Optional(
      Type.String({ pattern: '^[0-9]{0,7}$', description: 'Digits the number contains (empty: any)' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 20 })),
  },
  { additionalProperties: false },
);
export type AvailableQueryInput = Static<typeof AvailableQuery>;

export const AvailableNumberSchema = Type.Object({
  number: Type.String(),
  type: Type.Enum(NUMBER_TYPES),
  country: Type.Enum(NUMBER_COUNTRIES),
  areaCode: Type.String(),
});
