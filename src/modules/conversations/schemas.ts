// The shapes of conversations (CONTRACT section 14): a thread, an item of its timeline, and what the routes
// take. TypeScript types are Static<> of these.
import { type Static, Type } from 'typebox';

export const CONVERSATION_STATUSES = ['open', 'closed'] as const;
export type ConversationStatus = (typeof CONVERSATION_STATUSES)[number];
export const ITEM_TYPES = ['message', 'call', 'voicemail', 'agent_call'] as const;
export type ItemType = (typeof ITEM_TYPES)[number];
const DIRECTIONS = ['inbound', 'outbound'] as const;

const NullableString = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
const NullableInteger = (description: string) => Type.Union([Type.Integer(), Type.Null()], { description });

export const LastMessageSchema = Type.Object(
  {
    id: Type.String({ description: 'The message (msg_…)' }),
    direction: Type.Enum(DIRECTIONS),
    body: Type.String({ description: 'Its text' }),
    status: Type.String({ description: "The message's status when last seen by the thread" }),
    mediaCount: Type.Integer({ description: 'Media attached (MMS)' }),
    at: Type.String({ format: 'date-time', description: 'When it was created' }),
  },
  { description: 'The newest text of the thread' },
);

export const ConversationSchema = Type.Object({
  id: Type.String({ description: 'conv_…' }),
  contactId: NullableString('The contact with this phone, if there is one (ct_…)'),
  phone: Type.String({ description: 'The other party, E.164' }),
  number: Type.String({ description: 'Our number in the thread, E.164' }),
  status: Type.Enum(CONVERSATION_STATUSES, { description: '`open` or `closed`' }),
  unreadCount: Type.Integer({ description: 'Inbound items since the thread was last marked read' }),
  assignedTo: NullableString('The member it is assigned to (a user id), or null'),
  lastActivityAt: Type.String({ format: 'date-time', description: 'When its newest item happened' }),
  lastMessage: Type.Union([LastMessageSchema, Type.Null()]),
  createdAt: Type.String({ format: 'date-time', description: 'When the thread began' }),
});
export type Conversation = Static<typeof ConversationSchema>;

export const TimelineItemSchema = Type.Object({
  type: Type.Enum(ITEM_TYPES),
  id: Type.String({ description: 'The item: msg_…, call_…, vm_… or acall_…' }),
  at: Type.String({ format: 'date-time', description: 'When it happened (a call: when it started)' }),
  direction: Type.Enum(DIRECTIONS),
  status: NullableString("A message's or a call's status; null for a voicemail"),
  body: NullableString("A message's text; null for the others"),
  mediaCount: NullableInteger("A message's media count; null for the others"),
  durationSeconds: NullableInteger('A call, voicemail or agent call: how long; null for a message'),
  agentId: NullableString('An agent call: the agent; null for the others'),
  summary: NullableString("An agent call's summary; null for the others"),
});
export type TimelineItem = Static<typeof TimelineItemSchema>;

export const ConversationFilters = Type.Object({
  status: Type.Optional(Type.Enum(CONVERSATION_STATUSES)),
  unread: Type.Optional(Type.Boolean({ description: 'true: only threads with unread inbound items' })),
  assignedTo: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'A user id, or `none` for unassigned threads' }),
  ),
  number: Type.Optional(Type.String({ maxLength: 40, description: 'Our number (E.164)' })),
});
export type ConversationFilterInput = Static<typeof ConversationFilters>;

export const ReplyBody = Type.Object(
  {
    message: Type.Optional(
      Type.String({ maxLength: 10_000, description: 'Text; may use merge variables such as {{first_name}}' }),
    ),
    mediaUrls: Type.Optional(Type.Unknown({ description: 'Hosted media URLs (array of strings)' })),
    mediaFiles: Type.Optional(
      Type.Unknown({ description: 'Uploads: array of {contentType, data (base64), filename?}' }),
    ),
  },
  { additionalProperties: false },
);
export type ReplyInput = Static<typeof ReplyBody>;

export const UpdateBody = Type.Object(
  {
    status: Type.Optional(Type.Enum(CONVERSATION_STATUSES)),
    assignedTo: Type.Optional(
      Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()], {
        description: 'A member of the organization (user id); null unassigns',
      }),
    ),
  },
  { additionalProperties: false },
);
export type UpdateInput = Static<typeof UpdateBody>;
