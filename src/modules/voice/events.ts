// The voice module's events. Each `data` is the record the API answers for the same resource, so a receiver
// parses one shape per resource (the descriptions are those of schemas.ts); a call flow's step events
// (call.gather.completed) carry the call's id and what the step heard.
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';
import { CallSchema, RecordingSchema, TranscriptionSchema, VoicemailSchema } from './schemas.ts';

const call = {
  id: 'call_0mf3k2a9x4q8w7e6r5t4y3u2',
  direction: 'inbound' as const,
  from: '+12025550123',
  to: '+12025550100',
  status: 'ringing' as const,
  startedAt: '2026-06-10T12:00:00.000Z',
  answeredAt: null,
  endedAt: null,
  durationSeconds: 0,
  hangupCause: null,
  extensionId: 'ext_0mf3k2a9x4q8w7e6r5t4y3u2',
  agentId: null,
  recordingId: null,
  voicemailId: null,
};

export const CallRinging = defineEvent('call.ringing', CallSchema, 'A call started to ring a phone.', {
  example: call,
});

export const CallAnswered = defineEvent(
  'call.answered',
  CallSchema,
  'A call was answered, by a person or by a voicemail box.',
  { example: { ...call, status: 'in_progress', answeredAt: '2026-06-10T12:00:04.000Z' } },
);

export const CallCompleted = defineEvent(
  'call.completed',
  CallSchema,
  'A call ended, whatever its outcome: `status` says which (completed, busy, no_answer, failed, canceled).',
  {
    example: {
      ...call,
      status: 'completed',
      answeredAt: '2026-06-10T12:00:04.000Z',
      endedAt: '2026-06-10T12:03:08.000Z',
      durationSeconds: 184,
      hangupCause: 'normal_clearing',
    },
  },
);

export const VoicemailCreated = defineEvent(
  'voicemail.created',
  VoicemailSchema,
  'A caller left a voicemail.',
  {
    example: {
      id: 'vm_0mf3k2a9x4q8w7e6r5t4y3u2',
      callId: 'call_0mf3k2a9x4q8w7e6r5t4y3u2',
      extensionId: 'ext_0mf3k2a9x4q8w7e6r5t4y3u2',
      from: '+12025550123',
      to: '+12025550100',
      durationSeconds: 22,
      voice: 'rtp',
      read: false,
      createdAt: '2026-06-10T12:03:04.000Z',
    },
  },
);

export const RecordingCompleted = defineEvent(
  'recording.completed',
  RecordingSchema,
  'A call recording is ready.',
  {
    example: {
      id: 'rec_0mf3k2a9x4q8w7e6r5t4y3u2',
      callId: 'call_0mf3k2a9x4q8w7e6r5t4y3u2',
      durationSeconds: 184,
      voice: 'rtp',
      createdAt: '2026-06-10T12:03:10.000Z',
    },
  },
);

export const TranscriptionCompleted = defineEvent(
  'transcription.completed',
  TranscriptionSchema,
  'A transcription of a recording or voicemail completed (or failed: `status` says which).',
  {
    example: {
      id: 'tr_0mf3k2a9x4q8w7e6r5t4y3u2',
      recordingId: null,
      voicemailId: 'vm_0mf3k2a9x4q8w7e6r5t4y3u2',
      status: 'completed',
      text: 'Hi, please call me back.',
      engine: 'pocketsphinx',
      createdAt: '2026-06-10T12:03:05.000Z',
      completedAt: '2026-06-10T12:03:09.000Z',
    },
  },
);

/** What a call flow's gather heard. */
export const GatherCompletedSchema = Type.Object(
  {
    callId: Type.String({ description: 'The call the gather ran on' }),
    digits: Type.String({
      description: 'The keys pressed, finish key left out; empty when none came in time (or words did)',
    }),
    speech: Type.Optional(
      Type.String({
        description: 'A gather listening for speech: what the caller said, as transcribed; absent otherwise',
      }),
    ),
    at: Type.String({ format: 'date-time', description: 'When the gather ended' }),
  },
  { additionalProperties: false },
);

export const CallGatherCompleted = defineEvent(
  'call.gather.completed',
  GatherCompletedSchema,
  'A call flow’s gather step ended: the keys the caller pressed, the words they said, or nothing.',
  { example: { callId: call.id, digits: '1', at: '2026-06-10T12:00:09.000Z' } },
);

export const VOICE_EVENTS = [
  CallRinging,
  CallAnswered,
  CallCompleted,
  CallGatherCompleted,
  VoicemailCreated,
  RecordingCompleted,
  TranscriptionCompleted,
];
