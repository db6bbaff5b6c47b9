// The events of conversations (CONTRACT section 14). `data` is the conversation as GET /conversations/{id}
// answers it at the moment of the change.
import { defineEvent } from '../../platform/events.ts';
import { type Conversation, ConversationSchema } from './schemas.ts';

const example: Conversation = {
  id: 'conv_0mf3k2a9x4q8w7e6r5t4y3u2',
  contactId: 'ct_0mf3k2a9x4q8w7e6r5t4y3u2',
  phone: '+12025550123',
  number: '+12025550100',
  status: 'open',
  unreadCount: 1,
  assignedTo: null,
  lastActivityAt: '2026-06-10T12:00:00.000Z',
  lastMessage: {
    id: 'msg_0mf3k2a9x4q8w7e6r5t4y3u2',
    direction: 'inbound',
    body: 'Is my order ready?',
    status: 'received',
    mediaCount: 0,
    at: '2026-06-10T12:00:00.000Z',
  },
  createdAt: '2026-06-10T12:00:00.000Z',
};

export const ConversationCreated = defineEvent(
  'conversation.created',
  ConversationSchema,
  'A thread began: the first text, call, voicemail or agent call between a phone and one of your numbers.',
  { example },
);

export const ConversationAssigned = defineEvent(
  'conversation.assigned',
  ConversationSchema,
  'A thread was assigned to a member, or unassigned (`assignedTo` null).',
  {
    fields: { assignedTo: 'The member it is now assigned to (a user id); null when it was unassigned' },
    example: { ...example, assignedTo: 'usr_0mf3k2a9x4q8w7e6r5t4y3u2' },
  },
);

export const ConversationClosed = defineEvent(
  'conversation.closed',
  ConversationSchema,
  'A thread was closed. A new inbound text, call or voicemail reopens it.',
  { example: { ...example, status: 'closed', unreadCount: 0 } },
);

export const CONVERSATION_EVENTS = [ConversationCreated, ConversationAssigned, ConversationClosed];
