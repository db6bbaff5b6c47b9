// Request and response shapes of phone numbers; TypeScript types are Static<> of these.
import { type Static, Type } from 'typebox';
import { NUMBER_TYPES } from '../../carriers/carrier.ts';

export const NumberCreate = Type.Object(
  { number: Type.String({ minLength: 1, maxLength: 32 }), type: Type.Enum(NUMBER_TYPES) },
  { additionalProperties: false },
);
export type NumberInput = Static<typeof NumberCreate>;

export const PhoneNumberSchema = Type.Object({
  id: Type.String(),
  organizationId: Type.String(),
  number: Type.String(),
  type: Type.Enum(NUMBER_TYPES),
  isDefault: Type.Boolean(),
  createdAt: Type.String(),
});
export type PublicPhoneNumber = Static<typeof PhoneNumberSchema>;
