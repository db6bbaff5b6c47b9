// The event catalog (spec "Events": a subscribable catalog; CONTRACT section 6 names the message and contact
// events). Every type an endpoint may subscribe to is here, with what its `data` carries. `available` events
// are emitted by a product that exists; `coming` ones belong to product areas still being built: they may be
// subscribed to now and start flowing when their product ships.
// A delivery's body is always `{type, timestamp, data}`; `timestamp` is when the event happened (ISO 8601).

export type EventStatus = 'available' | 'coming';

export interface CatalogEntry {
  type: string;
  description: string;
  status: EventStatus;
  /** Each field of `data` and what it means. */
  fields: Record<string, string>;
  /** An example `data`. */
  example: Record<string, unknown>;
}

// A message event's `data` is the message exactly as GET /api/v2/messages/{id} returns it.
const messageFields = {
  id: 'Message id (msg_…)',
  direction: '`outbound` or `inbound`',
  from: 'Sending number, E.164',
  to: 'Recipient number, E.164',
  body: 'Text of the message (null for media only)',
  segments: 'SMS segments billed',
  encoding: '`GSM-7` or `UCS-2`',
  mediaCount: 'Number of MMS media parts',
  status: 'Message status after this event',
  media: 'Hosted media URLs and uploaded files (`{urls, files}`)',
  errorCode: 'Carrier error code, or null',
  errorMessage: 'Why it failed, or null',
  sentAt: 'When the carrier accepted it, or null',
  deliveredAt: 'When the receipt said delivered, or null',
  receiptState:
    '`awaiting_receipt` or `no_receipt` while a sent message has no receipt (72-hour rule), else null',
  createdAt: 'When the message was created',
  updatedAt: 'When its status last changed',
};
const messageExample = (status: string, extra: Record<string, unknown> = {}) => ({
  id: 'msg_0mf3k2a9x4q8w7e6r5t4y3u2',
  direction: 'outbound',
  status,
  from: '+12025550100',
  to: '+12025550123',
  body: 'Your order has shipped',
  segments: 1,
  encoding: 'GSM-7',
  mediaCount: 0,
  media: { urls: [], files: [] },
  errorCode: null,
  errorMessage: null,
  sentAt: null,
  deliveredAt: null,
  receiptState: null,
  createdAt: '2026-06-10T12:00:00.000Z',
  updatedAt: '2026-06-10T12:00:00.000Z',
  ...extra,
});
const failureFields = {
  errorCode: 'Carrier error code, when the carrier gave one',
  errorMessage: 'Human-readable reason',
};

const comingCall = (type: string, description: string, fields: Record<string, string>, example: object) => ({
  type,
  description,
  status: 'coming' as const,
  fields,
  example: example as Record<string, unknown>,
});

export const EVENT_CATALOG: readonly CatalogEntry[] = [
  {
    type: 'message.sent',
    description: 'A message was handed to the carrier.',
    status: 'available',
    fields: { ...messageFields, sentAt: 'When the carrier accepted it' },
    example: messageExample('sent', { sentAt: '2026-06-10T12:00:01.000Z' }),
  },
  {
    type: 'message.delivered',
    description: 'The carrier reported the message delivered to the handset.',
    status: 'available',
    fields: { ...messageFields, deliveredAt: 'When the receipt said it was delivered' },
    example: messageExample('delivered', { deliveredAt: '2026-06-10T12:00:04.000Z' }),
  },
  {
    type: 'message.failed',
    description: 'The message could not be sent (refused by the carrier before delivery).',
    status: 'available',
    fields: { ...messageFields, ...failureFields, updatedAt: 'When it failed' },
    example: messageExample('failed', {
      errorCode: '30007',
      errorMessage: 'Carrier filtered the message',
      updatedAt: '2026-06-10T12:00:02.000Z',
    }),
  },
  {
    type: 'message.undelivered',
    description: 'The carrier accepted the message but reported it could not be delivered.',
    status: 'available',
    fields: { ...messageFields, ...failureFields, updatedAt: 'When the receipt said undelivered' },
    example: messageExample('undelivered', {
      errorCode: '30003',
      errorMessage: 'Unreachable handset',
      updatedAt: '2026-06-10T12:05:00.000Z',
    }),
  },
  {
    type: 'message.received',
    description: 'A text arrived at one of your numbers.',
    status: 'available',
    fields: {
      ...messageFields,
      direction: '`inbound`',
      from: 'Sender, E.164',
      to: 'Your number that received it, E.164',
      status: '`received`',
      createdAt: 'When it arrived',
    },
    example: messageExample('received', {
      direction: 'inbound',
      from: '+12025550123',
      to: '+12025550100',
      body: 'Thanks!',
    }),
  },
  {
    type: 'contact.opted_out',
    description: 'A phone number opted out (texted STOP, or was opted out through the API or portal).',
    status: 'available',
    fields: {
      contactId: 'Contact id (ct_…), or null when the number has no contact',
      phone: 'The number, E.164',
      method: '`sms_stop`, `manual` or `api`',
      reason: 'Reason given, or null',
      optedOutAt: 'When it opted out',
    },
    example: {
      contactId: 'ct_0mf3k2a9x4q8w7e6r5t4y3u2',
      phone: '+12025550123',
      method: 'api',
      reason: null,
      optedOutAt: '2026-06-10T12:00:00.000Z',
    },
  },
  {
    type: 'contact.opted_in',
    description: 'A phone number that had opted out was opted back in.',
    status: 'available',
    fields: {
      contactId: 'Contact id (ct_…), or null',
      phone: 'The number, E.164',
      method: 'How consent was given again (e.g. `manual`)',
      reason: 'Reason given, or null',
      optedInAt: 'When it was opted in',
    },
    example: {
      contactId: 'ct_0mf3k2a9x4q8w7e6r5t4y3u2',
      phone: '+12025550123',
      method: 'manual',
      reason: 'Customer asked in store',
      optedInAt: '2026-06-10T12:00:00.000Z',
    },
  },
  {
    type: 'contact.import_completed',
    description: 'A contact import (CSV or JSON) finished.',
    status: 'available',
    fields: {
      imported: 'New contacts created',
      updated: 'Existing contacts updated',
      rejected: 'Rows rejected',
    },
    example: { imported: 120, updated: 3, rejected: 2 },
  },
  {
    type: 'webhook.test',
    description: 'Sent by POST /api/webhooks/{id}/test to that endpoint only, whatever it subscribes to.',
    status: 'available',
    fields: { endpointId: 'The endpoint tested (wh_…)', message: 'A fixed text' },
    example: { endpointId: 'wh_0mf3k2a9x4q8w7e6r5t4y3u2', message: 'This is a test event.' },
  },
  {
    type: 'webhook.endpoint_disabled',
    description:
      'One of your endpoints was disabled: it answered 410 Gone, or every delivery to it failed for 5 days.',
    status: 'available',
    fields: {
      endpointId: 'The endpoint disabled (wh_…)',
      url: 'Its URL',
      reason: '`gone` (answered 410) or `failing` (failed continuously for 5 days)',
      failingSince: 'Start of the run of failures, or null',
      disabledAt: 'When it was disabled',
    },
    example: {
      endpointId: 'wh_0mf3k2a9x4q8w7e6r5t4y3u2',
      url: 'https://example.com/hooks',
      reason: 'failing',
      failingSince: '2026-06-05T12:00:00.000Z',
      disabledAt: '2026-06-10T12:00:00.000Z',
    },
  },
  comingCall(
    'call.completed',
    'A phone call ended.',
    {
      id: 'Call id',
      direction: '`inbound` or `outbound`',
      from: 'Caller, E.164',
      to: 'Callee, E.164',
      durationSeconds: 'Talk time',
      status: '`completed`, `busy`, `no_answer` or `failed`',
      endedAt: 'When it ended',
    },
    {
      id: 'call_0mf3k2a9x4q8w7e6r5t4y3u2',
      direction: 'inbound',
      from: '+12025550123',
      to: '+12025550100',
      durationSeconds: 184,
      status: 'completed',
      endedAt: '2026-06-10T12:03:04.000Z',
    },
  ),
  comingCall(
    'voicemail.received',
    'A caller left a voicemail.',
    {
      id: 'Voicemail id',
      callId: 'Call id',
      from: 'Caller, E.164',
      to: 'Your number, E.164',
      durationSeconds: 'Length',
      receivedAt: 'When it was left',
    },
    {
      id: 'vm_0mf3k2a9x4q8w7e6r5t4y3u2',
      callId: 'call_0mf3k2a9x4q8w7e6r5t4y3u2',
      from: '+12025550123',
      to: '+12025550100',
      durationSeconds: 22,
      receivedAt: '2026-06-10T12:03:04.000Z',
    },
  ),
  comingCall(
    'recording.completed',
    'A call recording is ready.',
    { id: 'Recording id', callId: 'Call id', durationSeconds: 'Length', completedAt: 'When it was ready' },
    {
      id: 'rec_0mf3k2a9x4q8w7e6r5t4y3u2',
      callId: 'call_0mf3k2a9x4q8w7e6r5t4y3u2',
      durationSeconds: 184,
      completedAt: '2026-06-10T12:03:10.000Z',
    },
  ),
  comingCall(
    'transcription.completed',
    'A transcription of a recording or voicemail is ready.',
    {
      id: 'Transcription id',
      recordingId: 'Recording id, or null',
      voicemailId: 'Voicemail id, or null',
      text: 'The transcript',
      completedAt: 'When it was ready',
    },
    {
      id: 'tr_0mf3k2a9x4q8w7e6r5t4y3u2',
      recordingId: null,
      voicemailId: 'vm_0mf3k2a9x4q8w7e6r5t4y3u2',
      text: 'Hi, please call me back.',
      completedAt: '2026-06-10T12:04:00.000Z',
    },
  ),
  comingCall(
    'campaign.completed',
    'A campaign finished sending.',
    {
      id: 'Campaign id (cmp_…)',
      name: 'Campaign name',
      attempted: 'Messages attempted',
      delivered: 'Messages delivered',
      failed: 'Messages failed or undelivered',
      completedAt: 'When the last message was sent',
    },
    {
      id: 'cmp_0mf3k2a9x4q8w7e6r5t4y3u2',
      name: 'June promo',
      attempted: 1000,
      delivered: 982,
      failed: 18,
      completedAt: '2026-06-10T14:00:00.000Z',
    },
  ),
  comingCall(
    'agent_call.completed',
    'An AI voice-agent call ended.',
    {
      id: 'Agent call id',
      agentId: 'Agent id',
      from: 'Caller, E.164',
      to: 'Callee, E.164',
      durationSeconds: 'Length',
      outcome: 'Outcome the agent recorded',
      endedAt: 'When it ended',
    },
    {
      id: 'acall_0mf3k2a9x4q8w7e6r5t4y3u2',
      agentId: 'agt_0mf3k2a9x4q8w7e6r5t4y3u2',
      from: '+12025550123',
      to: '+12025550100',
      durationSeconds: 95,
      outcome: 'appointment_booked',
      endedAt: '2026-06-10T12:01:35.000Z',
    },
  ),
];

export const EVENT_TYPES: ReadonlySet<string> = new Set(EVENT_CATALOG.map((entry) => entry.type));
