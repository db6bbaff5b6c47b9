// Request and response shapes of the voice module; TypeScript types are Static<> of these.
import { type Static, Type } from 'typebox';

const ExtensionNumber = Type.String({
  pattern: '^[0-9]{2,6}$',
  description: 'Two to six digits, e.g. "101"',
});
const Name = Type.String({ minLength: 1, maxLength: 100 });
const Greeting = Type.String({
  minLength: 1,
  maxLength: 1000,
  description: 'Text the voicemail greeting says (synthesised); absent: a standard greeting',
});
const RingSeconds = Type.Integer({
  minimum: 5,
  maximum: 120,
  description: 'Seconds it rings before voicemail',
});
const ForwardTo = Type.String({
  minLength: 1,
  maxLength: 40,
  description: 'A phone number to forward calls to',
});

export const VoicemailSettings = Type.Object(
  { enabled: Type.Boolean(), greeting: Type.Optional(Type.Union([Greeting, Type.Null()])) },
  { additionalProperties: false },
);

export const ExtensionCreate = Type.Object(
  {
    extension: ExtensionNumber,
    name: Name,
    userId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()])),
    voicemail: Type.Optional(VoicemailSettings),
    forwardTo: Type.Optional(Type.Union([ForwardTo, Type.Null()])),
    ringSeconds: Type.Optional(RingSeconds),
  },
  { additionalProperties: false },
);
export type ExtensionCreateInput = Static<typeof ExtensionCreate>;

export const ExtensionPatch = Type.Partial(ExtensionCreate, {
  additionalProperties: false,
  minProperties: 1,
});
export type ExtensionPatchInput = Static<typeof ExtensionPatch>;

const SipCredentials = Type.Object({
  username: Type.String(),
  domain: Type.String(),
  password: Type.Optional(
    Type.String({ description: 'Only in the answers of create and rotate-password: store it now' }),
  ),
});

export const ExtensionSchema = Type.Object({
  id: Type.String(),
  extension: Type.String(),
  name: Type.String(),
  userId: Type.Union([Type.String(), Type.Null()]),
  voicemail: Type.Object({ enabled: Type.Boolean(), greeting: Type.Union([Type.String(), Type.Null()]) }),
  forwardTo: Type.Union([Type.String(), Type.Null()]),
  ringSeconds: Type.Integer(),
  sip: SipCredentials,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type PublicExtension = Static<typeof ExtensionSchema>;
