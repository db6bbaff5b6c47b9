// The exports module's event: an export's file is ready to download.
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';
import { EXPORT_FORMATS, EXPORT_RESOURCES } from './schemas.ts';

export const ExportCompleted = defineEvent(
  'export.completed',
  Type.Object({
    id: Type.String({ description: 'Export id (exp_…)' }),
    resource: Type.Enum(EXPORT_RESOURCES, { description: 'What was exported' }),
    format: Type.Enum(EXPORT_FORMATS, { description: 'csv or jsonl' }),
    rowCount: Type.Integer({ description: 'Rows in the file' }),
    sizeBytes: Type.Integer({ description: 'Size of the file' }),
    expiresAt: Type.String({ description: 'When the file is removed' }),
  }),
  "An export's file is ready: download it from GET /api/v2/exports/{id}/download until expiresAt.",
  {
    example: {
      id: 'exp_01jd5n0k2m3p4q5r6s7t8v9w0x',
      resource: 'messages',
      format: 'csv',
      rowCount: 1250,
      sizeBytes: 301_944,
      expiresAt: '2026-12-03T10:00:00.000Z',
    },
  },
);
