// The voice module's events. Each `data` is the record the API answers for the same resource, so a receiver
// parses one shape per resource (the descriptions are those of schemas.ts); a call flow's step events
// (call.gather.completed) carry the call's id and what the step heard.
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';
import {
  CallSchema,
  RecordingSchema,
  TranscriptionSchema,
  TransferTargetSchema,
  VoicemailSchema,
} from './schemas.ts';

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
  transferredTo: null,
  transferredAt: null,
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
  { example: { callId: call.id, digits: '', speech: 'billing please', at: '2026-06-10T12:00:09.000Z' } },
);

/** A call flow's media stream began: its WebSocket is open and `start` was sent. */
export const StreamStartedSchema = Type.Object(
  {
    callId: Type.String({ description: 'The call whose media is streamed' }),
    streamSid: Type.String({ description: 'The stream, as its messages name it (`streamSid`)' }),
    url: Type.String({ description: 'The WebSocket the stream went to (the step’s `url`)' }),
    tracks: Type.Array(Type.Enum(['inbound', 'outbound']), {
      description: 'What is streamed: the caller’s audio (inbound), and with `track: "both"` what they hear',
    }),
    at: Type.String({ format: 'date-time', description: 'When the stream began' }),
  },
  { additionalProperties: false },
);

export const CallStreamStarted = defineEvent(
  'call.stream.started',
  StreamStartedSchema,
  'A call flow’s stream step connected to its WebSocket and began streaming the call.',
  {
    example: {
      callId: call.id,
      streamSid: 'stream_0mf3k2a9x4q8w7e6r5t4y3u2',
      url: 'wss://bot.example.com/media',
      tracks: ['inbound'],
      at: '2026-06-10T12:00:05.000Z',
    },
  },
);

/** A call flow's media stream ended, and why. */
export const StreamStoppedSchema = Type.Object(
  {
    callId: Type.String({ description: 'The call whose media was streamed' }),
    streamSid: Type.String({ description: 'The stream, as its messages named it' }),
    url: Type.String({ description: 'The WebSocket of the stream' }),
    reason: Type.Enum(['app_closed', 'caller_hangup', 'line_closed', 'connect_failed'], {
      description:
        'app_closed: the app closed the socket (the flow goes on); caller_hangup: the caller or the API hung up; line_closed: the call moved on without the stream; connect_failed: the WebSocket could not be opened (no stream began; the flow goes on)',
    }),
    error: Type.Optional(Type.String({ description: 'connect_failed: why' })),
    at: Type.String({ format: 'date-time', description: 'When the stream ended' }),
  },
  { additionalProperties: false },
);

export const CallStreamStopped = defineEvent(
  'call.stream.stopped',
  StreamStoppedSchema,
  'A call flow’s media stream ended (or could not begin: `reason` says which).',
  {
    example: {
      callId: call.id,
      streamSid: 'stream_0mf3k2a9x4q8w7e6r5t4y3u2',
      url: 'wss://bot.example.com/media',
      reason: 'connect_failed',
      error: 'Unexpected server response: 503',
      at: '2026-06-10T12:00:05.000Z',
    },
  },
);

const queued = {
  callId: call.id,
  queueId: 'q_0mf3k2a9x4q8w7e6r5t4y3u2',
};

/** A caller joined a queue (a call flow's queue step). */
export const QueueJoinedSchema = Type.Object(
  {
    callId: Type.String({ description: 'The waiting call' }),
    queueId: Type.String({ description: 'The queue (`q_…`)' }),
    from: Type.String({ description: "The caller's number" }),
    position: Type.Integer({ description: 'Their place in line when they joined, 1 first' }),
    at: Type.String({ format: 'date-time', description: 'When they joined' }),
  },
  { additionalProperties: false },
);

export const CallQueueJoined = defineEvent(
  'call.queue.joined',
  QueueJoinedSchema,
  'A caller joined a queue and waits for a member.',
  { example: { ...queued, from: call.from, position: 2, at: '2026-06-10T12:00:05.000Z' } },
);

/** A waiting caller was answered by a member. */
export const QueueAnsweredSchema = Type.Object(
  {
    callId: Type.String({ description: 'The call that waited' }),
    queueId: Type.String({ description: 'The queue (`q_…`)' }),
    extensionId: Type.String({ description: 'The member who answered' }),
    waitSeconds: Type.Integer({ description: 'How long the caller waited, joining to answer' }),
    at: Type.String({ format: 'date-time', description: 'When the member answered' }),
  },
  { additionalProperties: false },
);

export const CallQueueAnswered = defineEvent(
  'call.queue.answered',
  QueueAnsweredSchema,
  'A member answered a caller waiting in a queue.',
  {
    example: {
      ...queued,
      extensionId: call.extensionId,
      waitSeconds: 42,
      at: '2026-06-10T12:00:47.000Z',
    },
  },
);

/** A caller left a queue without an answer. */
export const QueueAbandonedSchema = Type.Object(
  {
    callId: Type.String({ description: 'The call that waited' }),
    queueId: Type.String({ description: 'The queue (`q_…`)' }),
    reason: Type.Union([Type.Literal('hangup'), Type.Literal('timeout')], {
      description:
        '`hangup`: the caller (or the API) hung up while waiting; `timeout`: maxWaitSeconds passed, and the ' +
        "queue's onTimeout steps run",
    }),
    waitSeconds: Type.Integer({ description: 'How long the caller waited' }),
    at: Type.String({ format: 'date-time', description: 'When they left the queue' }),
  },
  { additionalProperties: false },
);

export const CallQueueAbandoned = defineEvent(
  'call.queue.abandoned',
  QueueAbandonedSchema,
  'A caller left a queue unanswered: they hung up, or waited the longest the queue allows.',
  { example: { ...queued, reason: 'hangup', waitSeconds: 95, at: '2026-06-10T12:01:40.000Z' } },
);

/** A transfer that reached its target: who, how, asked by whom. */
export const TransferredSchema = Type.Object(
  {
    callId: Type.String({ description: 'The call transferred (it keeps its id and its one record)' }),
    target: TransferTargetSchema,
    mode: Type.Enum(['blind', 'attended'], {
      description:
        "`blind`: the target was rung for the caller (an API blind transfer, a flow, a phone's REFER); `attended`: the caller was joined to a call the transferring phone had with the target (REFER with Replaces) or kept talking until the target answered (the API's attended mode)",
    }),
    by: Type.Enum(['api', 'phone', 'flow'], {
      description:
        "`api`: POST /calls/{id}/transfer; `phone`: a SIP phone's REFER; `flow`: a call flow's transfer step",
    }),
    at: Type.String({ format: 'date-time', description: 'When the target answered (or was joined)' }),
  },
  { additionalProperties: false },
);

export const CallTransferred = defineEvent(
  'call.transferred',
  TransferredSchema,
  'A call was transferred and the target answered: the caller now talks with them.',
  {
    example: {
      callId: call.id,
      target: { type: 'extension', target: 'ext_1mf3k2a9x4q8w7e6r5t4y3u2' },
      mode: 'blind',
      by: 'api',
      at: '2026-06-10T12:01:30.000Z',
    },
  },
);

export const VOICE_EVENTS = [
  CallRinging,
  CallAnswered,
  CallCompleted,
  CallGatherCompleted,
  CallTransferred,
  CallQueueJoined,
  CallQueueAnswered,
  CallQueueAbandoned,
  CallStreamStarted,
  CallStreamStopped,
  VoicemailCreated,
  RecordingCompleted,
  TranscriptionCompleted,
];
