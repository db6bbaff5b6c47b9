// The shapes of data exports (CONTRACT section 11): the request, the export as clients see it, its event.
import { type Static, Type } from 'typebox';

export const EXPORT_RESOURCES = ['messages', 'contacts', 'calls', 'campaign_recipients'] as const;
export type ExportResource = (typeof EXPORT_RESOURCES)[number];
export const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export const EXPORT_STATUSES = ['queued', 'running', 'completed', 'failed'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];

const Instant = (description: string) => Type.String({ maxLength: 40, description });

/** The filters of each resource's list endpoint, as that endpoint takes them; `campaignId` for recipients. */
export const ExportFilters = Type.Object(
  {
    direction: Type.Optional(Type.Enum(['outbound', 'inbound'], { description: 'messages' })),
    status: Type.Optional(Type.String({ maxLength: 40, description: 'messages: a message status' })),
    number: Type.Optional(Type.String({ maxLength: 40, description: 'messages: from or to this number' })),
    since: Type.Optional(Instant('messages, calls: created at or after (ISO 8601)')),
    until: Type.Optional(Instant('messages: created before (ISO 8601)')),
    optedOut: Type.Optional(
      Type.Boolean({ description: 'contacts: only opted-out (true) or reachable (false)' }),
    ),
    search: Type.Optional(
      Type.String({ maxLength: 100, description: 'contacts: phone, name, e-mail or company' }),
    ),
    campaignId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'campaign_recipients: required' }),
    ),
  },
  { additionalProperties: false },
);
export type ExportFiltersInput = Static<typeof ExportFilters>;

export const ExportCreate = Type.Object(
  {
    resource: Type.Enum(EXPORT_RESOURCES),
    format: Type.Enum(EXPORT_FORMATS),
    filters: Type.Optional(ExportFilters),
  },
  { additionalProperties: false },
);
export type ExportCreateInput = Static<typeof ExportCreate>;

export const ExportSchema = Type.Object({
  id: Type.String({ description: 'Export id (`exp_…`)' }),
  resource: Type.Enum(EXPORT_RESOURCES),
  format: Type.Enum(EXPORT_FORMATS),
  filters: Type.Record(Type.String(), Type.Unknown()),
  status: Type.Enum(EXPORT_STATUSES),
  rowCount: Type.Union([Type.Integer(), Type.Null()]),
  sizeBytes: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  completedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  expiresAt: Type.String({ format: 'date-time', description: 'When the export and its file are removed' }),
});
export type PublicExport = Static<typeof ExportSchema>;
