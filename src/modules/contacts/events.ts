// The events the contacts module emits (CONTRACT section 6). Declared here; the webhook catalog and the
// OpenAPI webhooks section are built from these.
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';

const nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const ContactOptedOut = defineEvent(
  'contact.opted_out',
  Type.Object({
    contactId: nullable('Contact id (ct_…), or null when the number has no contact'),
    phone: Type.String({ description: 'The number, E.164' }),
    method: Type.String({ description: '`sms_stop`, `manual` or `api`' }),
    reason: nullable('Reason given, or null'),
    optedOutAt: Type.String({ description: 'When it opted out' }),
  }),
  'A phone number opted out (texted STOP, or was opted out through the API or portal).',
  {
    example: {
      contactId: 'ct_0mf3k2a9x4q8w7e6r5t4y3u2',
      phone: '+12025550123',
      method: 'api',
      reason: null,
      optedOutAt: '2026-06-10T12:00:00.000Z',
    },
  },
);

export const ContactOptedIn = defineEvent(
  'contact.opted_in',
  Type.Object({
    contactId: nullable('Contact id (ct_…), or null'),
    phone: Type.String({ description: 'The number, E.164' }),
    method: Type.String({ description: 'How consent was given again (e.g. `manual`)' }),
    reason: nullable('Reason given, or null'),
    optedInAt: Type.String({ description: 'When it was opted in' }),
  }),
  'A phone number that had opted out was opted back in.',
  {
    example: {
      contactId: 'ct_0mf3k2a9x4q8w7e6r5t4y3u2',
      phone: '+12025550123',
      method: 'manual',
      reason: 'Customer asked in store',
      optedInAt: '2026-06-10T12:00:00.000Z',
    },
  },
);

export const ContactsImported = defineEvent(
  'contact.import_completed',
  Type.Object({
    imported: Type.Integer({ description: 'New contacts created' }),
    updated: Type.Integer({ description: 'Existing contacts updated' }),
    rejected: Type.Integer({ description: 'Rows rejected' }),
  }),
  'A contact import (CSV or JSON) finished.',
  { example: { imported: 120, updated: 3, rejected: 2 } },
);
