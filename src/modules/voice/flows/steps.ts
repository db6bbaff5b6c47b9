// The steps of a call flow (CONTRACT section 13): one TypeBox shape per step type, with the limits of its
// fields, and the TypeScript types the flow runner is written against. A step that holds other steps (gather's
// prompt, branches and otherwise; dial's onNoAnswer and onBusy; hours' whenOpen and whenClosed) declares them
// here as lists of unknown values: step-check.ts walks the tree, checks each nested step against its own shape
// and counts depth and steps, so a refusal names the exact path of the bad field (`steps.2.branches.1.0.text`)
// rather than the fourteen alternatives a schema union would report.
import { type Static, type TSchema, Type } from 'typebox';

/** How deep step lists may nest: the top-level list is depth 1, a gather's branch inside it depth 2, and so on. */
export const MAX_FLOW_DEPTH = 8;
/** Steps in a whole flow, nested ones included: a flow a person can read, and a bounded document to store. */
export const MAX_FLOW_STEPS = 500;
/** Branches of one gather: a menu of digits or phrases. */
export const MAX_GATHER_BRANCHES = 50;
/** Longest text a say step speaks (about five minutes of speech). */
export const MAX_SAY_TEXT = 4000;
/** Longest URL a step may name. */
export const MAX_URL_LENGTH = 2048;

export const FLOW_STEP_TYPES = [
  'say',
  'play',
  'gather',
  'dial',
  'queue',
  'voicemail',
  'agent',
  'record',
  'transfer',
  'stream',
  'hours',
  'pause',
  'redirect',
  'hangup',
] as const;
export type FlowStepType = (typeof FLOW_STEP_TYPES)[number];

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export const DIAL_TARGET_TYPES = ['extension', 'ring_group', 'number', 'sip'] as const;

// Ids of our own resources: a prefix, an underscore and the random tail of platform/ids.ts. Whether the id
// names something of the organization is checked when the flow is saved (step-check.ts lists the references).
const ResourceId = (description: string) =>
  Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z]+_[a-z0-9]+$', description });
const HttpUrl = (description: string) =>
  Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, description: `${description} (https or http)` });
const Seconds = (minimum: number, maximum: number, description: string) =>
  Type.Integer({ minimum, maximum, description });
const DtmfKey = Type.String({ pattern: '^[0-9*#]$', description: 'One key: 0-9, * or #' });
/** A list of nested steps; its items are checked one by one as steps (step-check.ts). */
const NestedSteps = (description: string) =>
  Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }), {
    maxItems: MAX_FLOW_STEPS,
    description,
  });
/** Hours and minutes on a 24-hour clock; `24:00` is allowed as the end of a day in `to` only. */
const ClockTime = Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: 'HH:MM, 24-hour' });

const step = <K extends FlowStepType, T extends Record<string, TSchema>>(
  type: K,
  fields: T,
  description: string,
) => Type.Object({ type: Type.Literal(type), ...fields }, { additionalProperties: false, description });

export const SayStepSchema = step(
  'say',
  {
    text: Type.String({ minLength: 1, maxLength: MAX_SAY_TEXT, description: 'What is spoken' }),
    // A name, never a path or an option: it is handed to espeak-ng as its voice (letters, digits, + - _ .).
    voice: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[A-Za-z0-9][A-Za-z0-9_+.-]*$',
        description: 'A voice name, e.g. en-us or en+f3',
      }),
    ),
    language: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$',
        maxLength: 35,
        description: 'A BCP 47 language tag, e.g. en-US',
      }),
    ),
  },
  'Speak text to the caller',
);

export const PlayStepSchema = step(
  'play',
  {
    audioUrl: Type.Optional(HttpUrl('Audio to fetch and play')),
    audioId: Type.Optional(ResourceId('Stored audio to play')),
    loop: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10, description: 'Times to play it (default 1)' }),
    ),
  },
  'Play audio: exactly one of audioUrl and audioId',
);

/** What a gather's prompt may be: something heard while the caller is expected to answer. */
export const GATHER_PROMPT_TYPES = ['say', 'play'] as const;

export const GatherStepSchema = step(
  'gather',
  {
    input: Type.Array(Type.Enum(['dtmf', 'speech']), {
      minItems: 1,
      maxItems: 2,
      uniqueItems: true,
      description: '["dtmf"], ["speech"] or ["dtmf","speech"]',
    }),
    numDigits: Type.Optional(Type.Integer({ minimum: 1, maximum: 32, description: 'Digits to collect' })),
    finishOnKey: Type.Optional(DtmfKey),
    timeoutSeconds: Type.Optional(Seconds(1, 60, 'Seconds of silence before giving up (default 5)')),
    prompt: Type.Optional(
      Type.Object({ type: Type.String() }, { additionalProperties: true, description: 'A say or play step' }),
    ),
    branches: Type.Optional(
      Type.Record(Type.String(), NestedSteps('Steps for this answer'), {
        maxProperties: MAX_GATHER_BRANCHES,
        description:
          'Steps per answer: the digits (e.g. "1", "42#" without the finish key) or a spoken phrase',
      }),
    ),
    otherwise: Type.Optional(NestedSteps('Steps when the answer matches no branch, or nothing was said')),
    actionUrl: Type.Optional(HttpUrl('Where the answer is also posted')),
  },
  'Collect digits or speech and branch on the answer',
);

export const DialTargetSchema = Type.Object(
  {
    type: Type.Enum(DIAL_TARGET_TYPES),
    target: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'extension: an extension id; ring_group: a ring group id; number: E.164; sip: a sip: URI',
    }),
  },
  { additionalProperties: false },
);

export const DialStepSchema = step(
  'dial',
  {
    targets: Type.Array(DialTargetSchema, { minItems: 1, maxItems: 10 }),
    strategy: Type.Optional(Type.Enum(['simultaneous', 'sequential'])),
    timeoutSeconds: Type.Optional(Seconds(5, 600, 'Seconds to ring before giving up (default 30)')),
    callerId: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'One of your numbers' })),
    record: Type.Optional(Type.Boolean()),
    onNoAnswer: Type.Optional(NestedSteps('Steps when nobody answers')),
    onBusy: Type.Optional(NestedSteps('Steps when every target is busy')),
  },
  'Ring one or more targets and connect the first to answer',
);

export const QueueStepSchema = step(
  'queue',
  { queueId: ResourceId('A queue (q_…)') },
  'Put the caller in a queue',
);
export const VoicemailStepSchema = step(
  'voicemail',
  { extensionId: ResourceId('The extension whose voicemail box takes the message') },
  'Take a voicemail',
);
export const AgentStepSchema = step(
  'agent',
  { agentId: ResourceId('An AI voice agent') },
  'Hand the call to an AI agent',
);
export const RecordStepSchema = step(
  'record',
  {
    // Ten minutes: the longest audio the platform keeps of a caller (audio.ts MAX_SECONDS), as a voicemail.
    maxSeconds: Type.Optional(Seconds(1, 600, 'Longest recording in seconds (default 120)')),
    finishOnKey: Type.Optional(DtmfKey),
  },
  'Record what the caller says',
);
export const TransferStepSchema = step(
  'transfer',
  { target: DialTargetSchema },
  'Transfer the call (blind) to a target, as POST /calls/{id}/transfer does',
);
export const StreamStepSchema = step(
  'stream',
  {
    url: Type.String({
      minLength: 1,
      maxLength: MAX_URL_LENGTH,
      description: 'The WebSocket to stream to (wss or ws)',
    }),
    track: Type.Optional(Type.Enum(['inbound', 'both'])),
  },
  "Stream the call's audio to a WebSocket",
);

export const OpenHoursSchema = Type.Object(
  {
    days: Type.Array(Type.Enum(WEEKDAYS), { minItems: 1, maxItems: 7, uniqueItems: true }),
    from: ClockTime,
    to: Type.String({
      pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$',
      description: 'HH:MM; 24:00 is the end of the day; earlier than `from`: the window runs past midnight',
    }),
  },
  { additionalProperties: false },
);

export const HoursStepSchema = step(
  'hours',
  {
    timezone: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'An IANA time zone, e.g. Europe/Paris',
    }),
    open: Type.Array(OpenHoursSchema, { minItems: 1, maxItems: 50 }),
    holidays: Type.Optional(
      Type.Array(Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'YYYY-MM-DD' }), {
        maxItems: 366,
        uniqueItems: true,
      }),
    ),
    whenOpen: NestedSteps('Steps within the open hours'),
    whenClosed: NestedSteps('Steps outside them, and on holidays'),
  },
  'Branch on the time of day in a time zone',
);
export const PauseStepSchema = step('pause', { seconds: Seconds(1, 60, 'Seconds of silence') }, 'Wait');
export const RedirectStepSchema = step(
  'redirect',
  {
    flowId: Type.Optional(ResourceId('Another flow (flow_…)')),
    url: Type.Optional(HttpUrl('A URL answering {steps:[…]}')),
  },
  'Continue with another flow: exactly one of flowId and url',
);
export const HangupStepSchema = step('hangup', {}, 'End the call');

/** Each step type's shape, for the checker and the OpenAPI document. */
export const FLOW_STEP_SCHEMAS: Record<FlowStepType, TSchema> = {
  say: SayStepSchema,
  play: PlayStepSchema,
  gather: GatherStepSchema,
  dial: DialStepSchema,
  queue: QueueStepSchema,
  voicemail: VoicemailStepSchema,
  agent: AgentStepSchema,
  record: RecordStepSchema,
  transfer: TransferStepSchema,
  stream: StreamStepSchema,
  hours: HoursStepSchema,
  pause: PauseStepSchema,
  redirect: RedirectStepSchema,
  hangup: HangupStepSchema,
};

export type SayStep = Static<typeof SayStepSchema>;
export type PlayStep = Static<typeof PlayStepSchema>;
export type GatherPromptStep = SayStep | PlayStep;
export type GatherStep = Omit<Static<typeof GatherStepSchema>, 'prompt' | 'branches' | 'otherwise'> & {
  prompt?: GatherPromptStep;
  branches?: Record<string, FlowStep[]>;
  otherwise?: FlowStep[];
};
export type DialTarget = Static<typeof DialTargetSchema>;
export type DialStep = Omit<Static<typeof DialStepSchema>, 'onNoAnswer' | 'onBusy'> & {
  onNoAnswer?: FlowStep[];
  onBusy?: FlowStep[];
};
export type QueueStep = Static<typeof QueueStepSchema>;
export type VoicemailStep = Static<typeof VoicemailStepSchema>;
export type AgentStep = Static<typeof AgentStepSchema>;
export type RecordStep = Static<typeof RecordStepSchema>;
export type TransferStep = Static<typeof TransferStepSchema>;
export type StreamStep = Static<typeof StreamStepSchema>;
export type OpenHours = Static<typeof OpenHoursSchema>;
export type Weekday = (typeof WEEKDAYS)[number];
export type HoursStep = Omit<Static<typeof HoursStepSchema>, 'whenOpen' | 'whenClosed'> & {
  whenOpen: FlowStep[];
  whenClosed: FlowStep[];
};
export type PauseStep = Static<typeof PauseStepSchema>;
export type RedirectStep = Static<typeof RedirectStepSchema>;
export type HangupStep = Static<typeof HangupStepSchema>;

export type FlowStep =
  | SayStep
  | PlayStep
  | GatherStep
  | DialStep
  | QueueStep
  | VoicemailStep
  | AgentStep
  | RecordStep
  | TransferStep
  | StreamStep
  | HoursStep
  | PauseStep
  | RedirectStep
  | HangupStep;
