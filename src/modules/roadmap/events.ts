// Events of products still being built (voice, campaigns, AI agents). They are declared now so endpoints
// can subscribe before the product ships (`status: coming`); when a product lands, its module declares its
// own events with these same types and shapes, and the entry here is deleted.
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';

const text = (description: string) => Type.String({ description });
const nullableText = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
const integer = (description: string) => Type.Integer({ description });

export const CallCompleted = defineEvent(
  'call.completed',
  Type.Object({
    id: text('Call id'),
    direction: text('`inbound` or `outbound`'),
    from: text('Caller, E.164'),
    to: text('Callee, E.164'),
    durationSeconds: integer('Talk time'),
    status: text('`completed`, `busy`, `no_answer` or `failed`'),
    endedAt: text('When it ended'),
  }),
  'A phone call ended.',
  {
    status: 'coming',
    example: {
      id: 'call_0mf3k2a9x4q8w7e6r5t4y3u2',
      direction: 'inbound',
      from: '+12025550123',
      to: '+12025550100',
      durationSeconds: 184,
      status: 'completed',
      endedAt: '2026-06-10T12:03:04.000Z',
    },
  },
);

export const VoicemailReceived = defineEvent(
  'voicemail.received',
  Type.Object({
    id: text('Voicemail id'),
    callId: text('Call id'),
    from: text('Caller, E.164'),
    to: text('Your number, E.164'),
    durationSeconds: integer('Length'),
    receivedAt: text('When it was left'),
  }),
  'A caller left a voicemail.',
  {
    status: 'coming',
    example: {
      id: 'vm_0mf3k2a9x4q8w7e6r5t4y3u2',
      callId: 'call_0mf3k2a9x4q8w7e6r5t4y3u2',
      from: '+12025550123',
      to: '+12025550100',
      durationSeconds: 22,
      receivedAt: '2026-06-10T12:03:04.000Z',
    },
  },
);

export const RecordingCompleted = defineEvent(
  'recording.completed',
  Type.Object({
    id: text('Recording id'),
    callId: text('Call id'),
    durationSeconds: integer('Length'),
    completedAt: text('When it was ready'),
  }),
  'A call recording is ready.',
  {
    status: 'coming',
    example: {
      id: 'rec_0mf3k2a9x4q8w7e6r5t4y3u2',
      callId: 'call_0mf3k2a9x4q8w7e6r5t4y3u2',
      durationSeconds: 184,
      completedAt: '2026-06-10T12:03:10.000Z',
    },
  },
);

export const TranscriptionCompleted = defineEvent(
  'transcription.completed',
  Type.Object({
    id: text('Transcription id'),
    recordingId: nullableText('Recording id, or null'),
    voicemailId: nullableText('Voicemail id, or null'),
    text: text('The transcript'),
    completedAt: text('When it was ready'),
  }),
  'A transcription of a recording or voicemail is ready.',
  {
    status: 'coming',
    example: {
      id: 'tr_0mf3k2a9x4q8w7e6r5t4y3u2',
      recordingId: null,
      voicemailId: 'vm_0mf3k2a9x4q8w7e6r5t4y3u2',
      text: 'Hi, please call me back.',
      completedAt: '2026-06-10T12:04:00.000Z',
    },
  },
);

export const AgentCallCompleted = defineEvent(
  'agent_call.completed',
  Type.Object({
    id: text('Agent call id'),
    agentId: text('Agent id'),
    from: text('Caller, E.164'),
    to: text('Callee, E.164'),
    durationSeconds: integer('Length'),
    outcome: text('Outcome the agent recorded'),
    endedAt: text('When it ended'),
  }),
  'An AI voice-agent call ended.',
  {
    status: 'coming',
    example: {
      id: 'acall_0mf3k2a9x4q8w7e6r5t4y3u2',
      agentId: 'agt_0mf3k2a9x4q8w7e6r5t4y3u2',
      from: '+12025550123',
      to: '+12025550100',
      durationSeconds: 95,
      outcome: 'appointment_booked',
      endedAt: '2026-06-10T12:01:35.000Z',
    },
  },
);
