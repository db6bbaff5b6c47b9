// Shapes shared by many routes: the success envelope and the two error shapes, for OpenAPI.
import { type TObject, type TSchema, Type } from 'typebox';

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

/** The query of an hourly report: a window of at most `maxDays` (docs/dashboard.md). */
export const HourlyQuery = (maxDays: number) =>
  Type.Object({
    since: Type.Optional(
      Type.String({
        maxLength: 40,
        description:
          'Start, inclusive (ISO 8601); the first bucket starts here. Default: 24 hours before until',
      }),
    ),
    until: Type.Optional(
      Type.String({
        maxLength: 40,
        description: `End, exclusive (ISO 8601); default now. At most ${maxDays} days after since`,
      }),
    ),
  });

/** An hourly report: the window and one bucket per hour of it, each with `counts`' fields. */
export const HourlyReport = <T extends TObject>(counts: T) =>
  Type.Object({
    since: Type.String({ format: 'date-time', description: 'Start of the window (inclusive)' }),
    until: Type.String({ format: 'date-time', description: 'End of the window (exclusive)' }),
    buckets: Type.Array(
      Type.Object({
        start: Type.String({ format: 'date-time', description: "The hour's start; it lasts an hour" }),
        ...counts.properties,
      }),
      { description: 'One per hour from since, oldest first; the last is cut short at until' },
    ),
  });
