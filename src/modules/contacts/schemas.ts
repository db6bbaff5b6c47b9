// Request and response shapes of contacts and contact lists; TypeScript types are Static<> of these.
import { type Static, Type } from 'typebox';
import { MAX_TIME_ZONE_NAME } from '../../platform/time-zones.ts';

export const CONSENT_STATUSES = ['granted', 'denied', 'unknown'] as const;
export type ConsentStatus = (typeof CONSENT_STATUSES)[number];
export const CONSENT_METHODS = [
  'web_form',
  'paper_form',
  'verbal',
  'sms_keyword',
  'checkout',
  'import',
  'api',
  'other',
] as const;
export type ConsentMethod = (typeof CONSENT_METHODS)[number];
export const OPT_OUT_METHODS = ['sms_stop', 'manual', 'api'] as const;
export type OptOutMethod = (typeof OPT_OUT_METHODS)[number];

/** How many contacts one call may add to or remove from a list. */
export const MAX_MEMBERS_PER_CALL = 1000;

export const nullableString = (maxLength: number) => Type.Union([Type.String({ maxLength }), Type.Null()]);
export const MAX_CUSTOM_FIELD_NAME = 100;
export const CustomFields = Type.Record(
  Type.String({ maxLength: MAX_CUSTOM_FIELD_NAME }),
  Type.Union([Type.String({ maxLength: 2000 }), Type.Number(), Type.Boolean(), Type.Null()]),
  { maxProperties: 100 },
);
export type CustomFields = Static<typeof CustomFields>;
export const ConsentInput = Type.Object(
  {
    status: Type.Enum(CONSENT_STATUSES),
    date: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Null()])),
    method: Type.Optional(Type.Union([Type.Enum(CONSENT_METHODS), Type.Null()])),
  },
  { additionalProperties: false },
);
export const ContactFields = {
  phone: Type.String({ minLength: 1, maxLength: 40 }),
  firstName: Type.Optional(nullableString(200)),
  lastName: Type.Optional(nullableString(200)),
  email: Type.Optional(Type.Union([Type.String({ format: 'email', maxLength: 320 }), Type.Null()])),
  company: Type.Optional(nullableString(200)),
  customFields: Type.Optional(CustomFields),
  consent: Type.Optional(ConsentInput),
  // Any name Intl accepts is taken (rules.ts); the schema only bounds its length (the longest IANA name has 32
  // characters) and says what it is for the OpenAPI document.
  timezone: Type.Optional(
    Type.Union([
      Type.String({
        maxLength: MAX_TIME_ZONE_NAME,
        description:
          'An IANA time zone name, e.g. America/New_York (stored as Intl spells it); null clears it. ' +
          'Campaign quiet hours use it; without one they go by the phone number.',
      }),
      Type.Null(),
    ]),
  ),
};
/** The fields of a contact every source must respect: the API's create and PATCH, and imports. */
export const ContactProfile = Type.Object({
  firstName: ContactFields.firstName,
  lastName: ContactFields.lastName,
  email: ContactFields.email,
  company: ContactFields.company,
  customFields: ContactFields.customFields,
  timezone: ContactFields.timezone,
});
export const ContactCreate = Type.Object(ContactFields, { additionalProperties: false });
export const ContactPatch = Type.Object(
  { ...ContactFields, phone: Type.Optional(ContactFields.phone) },
  { additionalProperties: false, minProperties: 1 },
);
/** A contact's fields as written: every field optional, so one type serves create and update. */
export type ContactInput = Static<typeof ContactPatch>;

export const ContactSchema = Type.Object({
  id: Type.String(),
  phone: Type.String(),
  firstName: Type.Union([Type.String(), Type.Null()]),
  lastName: Type.Union([Type.String(), Type.Null()]),
  fullName: Type.Union([Type.String(), Type.Null()]),
  email: Type.Union([Type.String(), Type.Null()]),
  company: Type.Union([Type.String(), Type.Null()]),
  customFields: Type.Record(Type.String(), Type.Unknown()),
  timezone: Type.Union([Type.String(), Type.Null()], { description: 'IANA time zone name, or null' }),
  consent: Type.Object({
    status: Type.Enum(CONSENT_STATUSES),
    date: Type.Union([Type.String(), Type.Null()]),
    method: Type.Union([Type.String(), Type.Null()]),
  }),
  optedOut: Type.Boolean(),
  optedOutAt: Type.Union([Type.String(), Type.Null()]),
  optOutMethod: Type.Union([Type.Enum(OPT_OUT_METHODS), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type Contact = Static<typeof ContactSchema>;
export const ConsentEventSchema = Type.Object({
  id: Type.String(),
  action: Type.String(),
  method: Type.Union([Type.String(), Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()]),
  actor: Type.String(),
  createdAt: Type.String(),
});
export type ConsentEvent = Static<typeof ConsentEventSchema>;
export const ImportResultSchema = Type.Object({
  imported: Type.Integer(),
  updated: Type.Integer(),
  rejected: Type.Integer(),
  errors: Type.Array(Type.Object({ row: Type.Integer(), reason: Type.String() })),
});
export type ImportResult = Static<typeof ImportResultSchema>;
export const ContactListSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  memberCount: Type.Integer(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type ContactList = Static<typeof ContactListSchema>;
export const ContactListMemberSchema = Type.Object({ ...ContactSchema.properties, addedAt: Type.String() });
export type ContactListMember = Static<typeof ContactListMemberSchema>;
export const MemberIds = Type.Object(
  {
    contactIds: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      minItems: 1,
      maxItems: MAX_MEMBERS_PER_CALL,
    }),
  },
  { additionalProperties: false },
);
