// The conversations module: one thread per organization, contact phone and our number, gathering the texts,
// calls, voicemails and AI agent calls between them as their events are recorded (threading.ts); the inbox,
// the timeline, replies through the messaging module's send, read state, assignment, close and reopen.
import { defineModule } from '../../platform/module.ts';
import { contactsModule } from '../contacts/index.ts';
import { identityModule } from '../identity/index.ts';
import { messagingModule } from '../messaging/index.ts';
import { CONVERSATION_EVENTS } from './events.ts';
import { conversationRoutes } from './routes.ts';
import { ConversationService, type ConversationServices } from './service.ts';
import { ConversationStore } from './store.ts';

export const conversationsModule = defineModule({
  name: 'conversations',
  create: ({ platform, use }): ConversationServices => ({
    conversations: new ConversationService({
      db: platform.db,
      clock: platform.clock,
      events: platform.events,
      pagination: platform.pagination,
      store: new ConversationStore(),
      messages: use(messagingModule).messages,
      contacts: use(contactsModule).contacts,
      users: use(identityModule).users,
    }),
  }),
  routes: { developer: [conversationRoutes], portal: [conversationRoutes] },
  events: CONVERSATION_EVENTS,
  observers: ({ conversations }) => [conversations.threading.observer()],
});

export type { Conversation, TimelineItem } from './schemas.ts';
export type { ConversationService, ConversationServices } from './service.ts';
