// Request and response shapes of the agents module (CONTRACT section 10); TypeScript types are Static<> of
// these. Their descriptions document the webhook events too (events.ts).
import { type Static, Type } from 'typebox';
import { DOCUMENT_SOURCES, MAX_DOCUMENT_CHARACTERS } from './documents.ts';
import { LANGUAGE_PATTERN } from './language.ts';

const text = (description: string) => Type.String({ description });
const nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
const Language = Type.String({
  pattern: LANGUAGE_PATTERN,
  description: 'A BCP 47 language tag, e.g. "en", "en-US", "es"; search stems words in this language',
});

// Knowledge bases and documents

export const KnowledgeBaseCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
    language: Type.Optional(Language),
  },
  { additionalProperties: false },
);
export type KnowledgeBaseCreateInput = Static<typeof KnowledgeBaseCreate>;
export const KnowledgeBasePatch = Type.Partial(KnowledgeBaseCreate, {
  additionalProperties: false,
  minProperties: 1,
});
export type KnowledgeBasePatchInput = Static<typeof KnowledgeBasePatch>;

export const KnowledgeBaseSchema = Type.Object({
  id: text('Knowledge base id (`kb_…`)'),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  language: Type.String(),
  documentCount: Type.Integer(),
  chunkCount: Type.Integer({ description: 'Indexed chunks across its documents' }),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type PublicKnowledgeBase = Static<typeof KnowledgeBaseSchema>;

const Title = Type.String({ minLength: 1, maxLength: 200 });
const Content = Type.String({
  minLength: 1,
  maxLength: MAX_DOCUMENT_CHARACTERS,
  description: `The document's text (plain text or Markdown), at most ${MAX_DOCUMENT_CHARACTERS} characters`,
});
export const DocumentCreate = Type.Object(
  { title: Title, content: Content },
  { additionalProperties: false },
);
export const DocumentPatch = Type.Partial(DocumentCreate, { additionalProperties: false, minProperties: 1 });
export type DocumentPatchInput = Static<typeof DocumentPatch>;

export const DocumentSchema = Type.Object({
  id: text('Document id (`doc_…`)'),
  knowledgeBaseId: Type.String(),
  title: Type.String(),
  source: Type.Enum([...DOCUMENT_SOURCES], {
    description: 'JSON text, or the kind of file it was extracted from',
  }),
  filename: Type.Union([Type.String(), Type.Null()]),
  characters: Type.Integer({ description: 'Length of its text' }),
  chunkCount: Type.Integer(),
  content: Type.Optional(Type.String({ description: 'Its text (extracted from the file); in single reads' })),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type PublicDocument = Static<typeof DocumentSchema>;

export const SearchRequest = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: 1000 }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, description: 'Default 5' })),
  },
  { additionalProperties: false },
);
export const SearchHitSchema = Type.Object({
  documentId: Type.String(),
  knowledgeBaseId: Type.String(),
  title: Type.String(),
  text: text('The chunk'),
  score: Type.Number({
    description:
      "Relevance (full-text rank, plus a bonus for the question's words found together in one sentence); higher is better, comparable within one search",
  }),
});
export type SearchHit = Static<typeof SearchHitSchema>;

// Agents

const PhraseList = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 20 });
export const ToolSchema = Type.Object(
  {
    name: Type.String({
      pattern: '^[a-zA-Z0-9_-]{1,64}$',
      description: 'How the model calls it; not `end_call` or `transfer`',
    }),
    description: Type.String({ minLength: 1, maxLength: 1000 }),
    parameters: Type.Record(Type.String(), Type.Unknown(), {
      description: 'A JSON Schema of an object: the arguments the model sends',
    }),
    url: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'https URL the arguments are POSTed to as JSON; its JSON answer goes back to the model',
    }),
  },
  { additionalProperties: false },
);
export type AgentTool = Static<typeof ToolSchema>;

export const KEY_ACTIONS = ['transfer', 'repeat', 'end_call'] as const;
export type KeyAction = (typeof KEY_ACTIONS)[number];
const AgentKeys = Type.Record(Type.String({ pattern: '^[0-9*#]$' }), Type.Enum([...KEY_ACTIONS]), {
  additionalProperties: false,
  description:
    'What a key the caller presses does: `transfer` (to transferTo), `repeat` (the last thing the agent said) or `end_call`. A key not named here is the caller\'s turn: the brain gets it as "(pressed 1 2 3)". Default {}',
});
const MachineDetection = Type.Object(
  {
    action: Type.Enum(['leave_message', 'hang_up'], {
      description:
        'leave_message: after the beep, the message is spoken and the agent hangs up; hang_up: it hangs up',
    }),
    message: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        description: 'What is left on the machine; default firstMessage',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Outbound calls listen first for an answering machine (the callee speaking a long greeting); null (default): they do not',
  },
);
const TransferMode = Type.Enum(['cold', 'warm'], {
  description:
    'cold (default): the caller is put through as soon as the person answers; warm: the person first hears a short summary of the call',
});

export const AgentCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    instructions: Type.Optional(
      Type.String({ maxLength: 20000, description: 'The system prompt: who the agent is' }),
    ),
    firstMessage: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1000, description: 'What it says on answering' }),
    ),
    voice: Type.Optional(
      Type.String({
        pattern: '^[a-z]{2,3}(-[a-z0-9]+)*(\\+[a-z0-9]+)?$',
        maxLength: 40,
        description: 'espeak-ng voice, e.g. "en-us", "en-gb", "es", "en-us+f3"; default en-us',
      }),
    ),
    language: Type.Optional(Language),
    knowledgeBaseIds: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 10, uniqueItems: true }),
    ),
    endCallPhrases: Type.Optional(PhraseList),
    transferTo: Type.Optional(
      Type.Union([Type.String({ minLength: 1, maxLength: 40 }), Type.Null()], {
        description: 'A phone number or an extension number of the organization: where a transfer goes',
      }),
    ),
    maxDurationSeconds: Type.Optional(
      Type.Integer({ minimum: 30, maximum: 7200, description: 'Default 600' }),
    ),
    recordCalls: Type.Optional(
      Type.Boolean({ description: 'Whether its calls are recorded, both sides in one track; default true' }),
    ),
    tools: Type.Optional(Type.Array(ToolSchema, { maxItems: 20 })),
    bargeIn: Type.Optional(
      Type.Boolean({
        description:
          'Whether a caller who talks over the agent (about 200 ms of speech) cuts it off and is answered; default true. Turn it off for lines that echo the agent back',
      }),
    ),
    keys: Type.Optional(AgentKeys),
    machineDetection: Type.Optional(Type.Union([MachineDetection, Type.Null()])),
    transferMode: Type.Optional(TransferMode),
  },
  { additionalProperties: false },
);
export type AgentCreateInput = Static<typeof AgentCreate>;
export const AgentPatch = Type.Partial(AgentCreate, { additionalProperties: false, minProperties: 1 });
export type AgentPatchInput = Static<typeof AgentPatch>;

export const AgentSchema = Type.Object({
  id: text('Agent id (`agt_…`)'),
  name: Type.String(),
  instructions: Type.String(),
  firstMessage: Type.String(),
  voice: Type.String(),
  language: Type.String(),
  knowledgeBaseIds: Type.Array(Type.String()),
  endCallPhrases: Type.Array(Type.String()),
  transferTo: Type.Union([Type.String(), Type.Null()]),
  maxDurationSeconds: Type.Integer(),
  recordCalls: Type.Boolean(),
  bargeIn: Type.Boolean(),
  tools: Type.Array(ToolSchema),
  keys: AgentKeys,
  machineDetection: Type.Union([MachineDetection, Type.Null()]),
  transferMode: TransferMode,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type PublicAgent = Static<typeof AgentSchema>;
export type AgentKeyMap = Static<typeof AgentKeys>;
export type MachineDetectionSettings = Static<typeof MachineDetection>;

// Chat

export const ChatMessage = Type.Object(
  {
    role: Type.Enum(['user', 'assistant']),
    content: Type.String({ minLength: 1, maxLength: 4000 }),
  },
  { additionalProperties: false },
);
export type ChatMessageInput = Static<typeof ChatMessage>;
export const ChatRequest = Type.Object(
  {
    messages: Type.Array(ChatMessage, {
      minItems: 1,
      maxItems: 100,
      description: 'The conversation so far, the caller last',
    }),
  },
  { additionalProperties: false },
);

export const SourceSchema = Type.Object({
  documentId: Type.String(),
  knowledgeBaseId: Type.String(),
  title: Type.String(),
  score: Type.Number(),
});
export type Source = Static<typeof SourceSchema>;

export const ToolCallSchema = Type.Object({
  name: Type.String(),
  arguments: Type.Unknown(),
  status: Type.Enum(['ok', 'failed']),
  result: Type.Optional(Type.Unknown()),
  error: Type.Optional(Type.String()),
});
export type ToolCall = Static<typeof ToolCallSchema>;

export const ChatReplySchema = Type.Object({
  reply: text('What the agent says'),
  sources: Type.Array(SourceSchema, { description: 'The knowledge-base documents the reply is grounded in' }),
  action: Type.Optional(
    Type.Enum(['end_call', 'transfer', 'tool'], {
      description:
        'end_call: the agent hangs up after the reply; transfer: it transfers to `transferTo`; tool: it called tools (toolCalls)',
    }),
  ),
  toolCalls: Type.Optional(Type.Array(ToolCallSchema)),
});
export type ChatReply = Static<typeof ChatReplySchema>;

// Agent calls

export const AgentCallPlace = Type.Object(
  {
    to: Type.String({ minLength: 1, maxLength: 40, description: 'The phone number to call' }),
    from: Type.Optional(
      Type.String({ minLength: 1, maxLength: 40, description: 'One of your numbers; default: the first' }),
    ),
  },
  { additionalProperties: false },
);

export const TurnLatencySchema = Type.Object(
  {
    endOfTurnMs: Type.Integer({
      description: "Silence waited after the caller's speech before the turn ended",
    }),
    recognitionMs: Type.Integer({ description: 'Recognising their words' }),
    brainMs: Type.Integer({ description: "From asking the brain to its reply's first sentence" }),
    firstAudioMs: Type.Integer({ description: 'From that sentence to its first audio (synthesis)' }),
    totalMs: Type.Integer({ description: "From the end of the caller's speech to the agent's first audio" }),
  },
  { description: "How long an agent turn's stages took (calls whose line carries audio)" },
);

export const TranscriptTurn = Type.Object({
  role: Type.Enum(['agent', 'caller']),
  text: Type.String({
    description: 'What was said; of an interrupted agent turn, what was said up to the cut',
  }),
  at: Type.String(),
  latency: Type.Optional(TurnLatencySchema),
  interrupted: Type.Optional(
    Type.Boolean({ description: 'The caller talked over the agent and cut it off' }),
  ),
  digits: Type.Optional(
    Type.String({ description: 'Keys the caller pressed (a caller turn whose text is empty): "0", "123#"' }),
  ),
});

export const AgentCallSchema = Type.Object({
  id: text('Agent call id (`acall_…`)'),
  agentId: Type.String(),
  callId: text('The call (`call_…`) it took'),
  direction: Type.Enum(['inbound', 'outbound']),
  from: Type.String(),
  to: Type.String(),
  status: Type.Enum(['queued', 'ringing', 'in_progress', 'completed', 'failed']),
  outcome: Type.Union([
    Type.Enum(['completed', 'transferred', 'ended_by_agent', 'no_answer', 'failed']),
    Type.Null(),
  ]),
  transcript: Type.Array(TranscriptTurn),
  answeredBy: Type.Union([Type.Enum(['human', 'machine', 'unknown']), Type.Null()], {
    description:
      "Outbound calls of an agent with machineDetection: who answered, as heard from the callee's first words; null otherwise",
  }),
  summary: nullable('What the call was about, once it ended'),
  durationSeconds: Type.Union([Type.Integer(), Type.Null()]),
  recordingId: Type.Union([Type.String(), Type.Null()]),
  startedAt: Type.String(),
  endedAt: Type.Union([Type.String(), Type.Null()]),
});
export type PublicAgentCall = Static<typeof AgentCallSchema>;
