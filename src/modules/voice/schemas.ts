// Request and response shapes of the voice module; TypeScript types are Static<> of these.
import { type Static, Type } from 'typebox';
import { HourlyReport } from '../../platform/http/schemas.ts';

const ExtensionNumber = Type.String({
  pattern: '^[0-9]{2,6}$',
  description: 'Two to six digits, e.g. "101"',
});
const Name = Type.String({ minLength: 1, maxLength: 100 });
const Greeting = Type.String({
  minLength: 1,
  maxLength: 1000,
  description: 'Text the voicemail greeting says (synthesised); absent: a standard greeting',
});
const RingSeconds = Type.Integer({
  minimum: 5,
  maximum: 120,
  description: 'Seconds it rings before voicemail',
});
const ForwardTo = Type.String({
  minLength: 1,
  maxLength: 40,
  description: 'A phone number to forward calls to',
});

export const VoicemailSettings = Type.Object(
  { enabled: Type.Boolean(), greeting: Type.Optional(Type.Union([Greeting, Type.Null()])) },
  { additionalProperties: false },
);

export const ExtensionCreate = Type.Object(
  {
    extension: ExtensionNumber,
    name: Name,
    userId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()])),
    voicemail: Type.Optional(VoicemailSettings),
    forwardTo: Type.Optional(Type.Union([ForwardTo, Type.Null()])),
    ringSeconds: Type.Optional(RingSeconds),
  },
  { additionalProperties: false },
);
export type ExtensionCreateInput = Static<typeof ExtensionCreate>;

export const ExtensionPatch = Type.Partial(ExtensionCreate, {
  additionalProperties: false,
  minProperties: 1,
});
export type ExtensionPatchInput = Static<typeof ExtensionPatch>;

const SipCredentials = Type.Object({
  username: Type.String(),
  domain: Type.String(),
  password: Type.Optional(
    Type.String({ description: 'Only in the answers of create and rotate-password: store it now' }),
  ),
});

export const ExtensionSchema = Type.Object({
  id: Type.String(),
  extension: Type.String(),
  name: Type.String(),
  userId: Type.Union([Type.String(), Type.Null()]),
  voicemail: Type.Object({
    enabled: Type.Boolean(),
    greeting: Type.Union([Type.String(), Type.Null()]),
    greetingAudio: Type.Union(
      [Type.Object({ durationSeconds: Type.Integer(), uploadedAt: Type.String() }), Type.Null()],
      {
        description:
          'The uploaded greeting (PUT /extensions/{id}/voicemail-greeting), played instead of `greeting`; null: the text is spoken',
      },
    ),
  }),
  forwardTo: Type.Union([Type.String(), Type.Null()]),
  ringSeconds: Type.Integer(),
  sip: SipCredentials,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type PublicExtension = Static<typeof ExtensionSchema>;

/**
 * Who a call is transferred to: an extension of the organization (its id), or a phone number (E.164) through
 * the trunk. The shape of a call flow's dial target, limited to the kinds a transfer reaches.
 */
export const TransferTargetSchema = Type.Object(
  {
    type: Type.Enum(['extension', 'ring_group', 'number', 'sip'], {
      description:
        '`extension`: an extension id (`ext_…`); `ring_group`: a ring group id (`rg_…`), whose members ring at once; ' +
        '`number`: a phone number in E.164 form; `sip`: `sip:<extension>@<SIP domain>`, an extension by its URI',
    }),
    target: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The extension id, the ring group id, the phone number or the SIP URI',
    }),
  },
  { additionalProperties: false },
);
export type TransferTarget = Static<typeof TransferTargetSchema>;

export const CallTransfer = Type.Object(
  {
    target: TransferTargetSchema,
    mode: Type.Optional(
      Type.Enum(['blind', 'attended'], {
        description:
          '`blind` (default): the person now on the call is let go at once and the caller waits while the target ' +
          'rings; unanswered, the call ends (`transfer_failed`). `attended`: the caller and that person talk on ' +
          'while the target rings, and only an answer moves the caller; unanswered, the call goes on as it was',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CallTransferInput = Static<typeof CallTransfer>;

// Calls, voicemails, recordings, transcriptions. Their descriptions document the webhook events too
// (events.ts), whose `data` is the same record.

const text = (description: string) => Type.String({ description });
const nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const CallSchema = Type.Object({
  id: text('Call id (`call_…`)'),
  direction: Type.Enum(['inbound', 'outbound', 'internal'], {
    description: '`inbound` to one of your numbers, `outbound` to a phone, `internal` extension to extension',
  }),
  from: text('Caller: E.164, or an extension number on internal calls'),
  to: text('Callee: E.164, or an extension number on internal calls'),
  status: Type.Enum(
    ['queued', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'canceled'],
    {
      description: 'queued, ringing, in_progress; then completed, busy, no_answer, failed or canceled',
    },
  ),
  startedAt: text('When the call was placed or arrived'),
  answeredAt: nullable('When it was answered (by a person or a voicemail box), or null'),
  endedAt: nullable('When it ended, or null while it lasts'),
  durationSeconds: Type.Integer({
    description: 'Talk time: from the answer to the end; 0 if never answered',
  }),
  hangupCause: nullable('Why it ended (docs/voice.md "Hang-up causes"), or null while it lasts'),
  extensionId: nullable('The extension that placed or took it, or null'),
  agentId: nullable('The AI agent that took it, or null'),
  recordingId: nullable('Its recording, or null'),
  voicemailId: nullable('The voicemail the caller left, or null'),
  transferredTo: Type.Union([TransferTargetSchema, Type.Null()], {
    description:
      "Who the call was last transferred to (POST /calls/{id}/transfer, a phone's REFER, a flow's transfer step), or null",
  }),
  transferredAt: nullable('When that transfer was answered, or null'),
});
export type PublicCall = Static<typeof CallSchema>;

/** The longest window GET /calls/stats/hourly counts over: an index range scan, kept to what a dashboard asks. */
export const CALL_STATS_MAX_DAYS = 31;

/** Calls created in each hour of a window (GET /calls/stats/hourly): the dashboard's charts. */
export const CallHourlySchema = HourlyReport(
  Type.Object({
    total: Type.Integer(),
    inbound: Type.Integer(),
    outbound: Type.Integer(),
    internal: Type.Integer({ description: 'Extension to extension' }),
    answered: Type.Integer({
      description: 'Of the total, those answered (by a person, an agent or voicemail)',
    }),
  }),
);
export type CallHourly = Static<typeof CallHourlySchema>;

export const CallCreate = Type.Object(
  {
    from: Type.String({
      minLength: 1,
      maxLength: 40,
      description: 'One of your numbers (caller id), or for an internal call the calling extension number',
    }),
    to: Type.String({
      minLength: 1,
      maxLength: 40,
      description: 'A phone number, or an extension number of your organization (an internal call)',
    }),
    extensionId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'Click-to-call: this extension rings first, and the callee is dialled once it answers',
      }),
    ),
    record: Type.Optional(Type.Boolean({ description: 'Record the conversation (default false)' })),
  },
  { additionalProperties: false },
);
export type CallCreateInput = Static<typeof CallCreate>;

export const VoicemailSchema = Type.Object({
  id: text('Voicemail id (`vm_…`)'),
  callId: text('The call it was left on'),
  extensionId: nullable('The extension whose box took it'),
  from: text('Caller, E.164'),
  to: text('The number or extension called'),
  durationSeconds: Type.Integer({ description: 'Length of the audio' }),
  voice: text('What made the sound: `espeak-ng` or `tone` (simulated PBX), `rtp` (a real call)'),
  read: Type.Boolean({ description: 'Marked read' }),
  createdAt: text('When it was left'),
});
export type PublicVoicemail = Static<typeof VoicemailSchema>;

export const VoicemailPatch = Type.Object({ read: Type.Boolean() }, { additionalProperties: false });

export const RecordingSchema = Type.Object({
  id: text('Recording id (`rec_…`)'),
  callId: text('The recorded call'),
  durationSeconds: Type.Integer({ description: 'Length of the audio' }),
  voice: text('What made the sound: `espeak-ng` or `tone` (simulated PBX), `rtp` (a real call)'),
  createdAt: text('When it was ready'),
});
export type PublicRecording = Static<typeof RecordingSchema>;

export const TranscriptionSchema = Type.Object({
  id: text('Transcription id (`tr_…`)'),
  recordingId: nullable('The recording transcribed, or null'),
  voicemailId: nullable('The voicemail transcribed, or null'),
  status: Type.Enum(['queued', 'completed', 'failed'], { description: 'queued, then completed or failed' }),
  text: nullable('What the engine heard; null until completed'),
  engine: text('The engine that transcribes it (`openai-compatible:<model>`, `pocketsphinx`)'),
  createdAt: text('When it was asked for'),
  completedAt: nullable('When it completed or failed'),
});
export type PublicTranscription = Static<typeof TranscriptionSchema>;

// The operator's side: each region's PBX capacity, and the simulated PBX's test controls.

export const RegionSchema = Type.Object({
  region: Type.String(),
  maxConcurrentCalls: Type.Integer(),
  activeCalls: Type.Integer({ description: 'Calls holding a place now' }),
});
export const RegionParams = Type.Object({ region: Type.Enum(['us', 'ca', 'eu']) });
export const RegionUpdate = Type.Object(
  { maxConcurrentCalls: Type.Integer({ minimum: 0, maximum: 1_000_000 }) },
  { additionalProperties: false },
);

export const TestInbound = Type.Object(
  {
    from: Type.String({ minLength: 1, maxLength: 40 }),
    to: Type.String({ minLength: 1, maxLength: 40 }),
    outcome: Type.Optional(Type.Enum(['answered', 'no_answer', 'busy'])),
    voicemailText: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    speech: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    durationSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 600 })),
    utterances: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 1000 }), {
        maxItems: 50,
        description: 'What the caller says to an AI agent, turn by turn',
      }),
    ),
  },
  { additionalProperties: false },
);
export type TestInboundInput = Static<typeof TestInbound>;

export const TestCallEvent = Type.Object(
  {
    event: Type.Enum(['ringing', 'answered', 'completed', 'busy', 'no_answer', 'failed', 'utterance']),
    text: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, description: 'utterance: the words' })),
    audio: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4_000_000,
        description: 'utterance: a WAV of the words, base64',
      }),
    ),
  },
  { additionalProperties: false },
);
