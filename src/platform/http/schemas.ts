// Shapes shared by many routes: the success envelope and the two error shapes, for OpenAPI.
import { type TSchema, Type } from 'typebox';

export const envelope = <T extends TSchema>(data: T) => Type.Object({ success: Type.Literal(true), data });

export const ErrorShapeA = Type.Object(
  {
    message: Type.String(),
    error: Type.String(),
    code: Type.Optional(Type.String()),
    data: Type.Optional(Type.Unknown()),
  },
  { description: 'Shape A error' },
);

export const ErrorShapeB = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.String(),
    code: Type.Optional(Type.String()),
    reason: Type.Optional(Type.String()),
    data: Type.Optional(Type.Unknown()),
  },
  { description: 'Shape B error' },
);

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

/** A local time of day as quiet hours take it. */
export const LocalClockTime = Type.String({
  pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$',
  description: 'Local time, HH:MM',
});
