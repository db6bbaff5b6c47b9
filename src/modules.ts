// Every product module of the server, in one list. The composition root builds them and the app mounts
// their routes in this order. Adding a module is a folder under src/modules/ and one line here.
import { agentsModule } from './modules/agents/index.ts';
import { apiKeysModule } from './modules/api-keys/index.ts';
import { campaignsModule } from './modules/campaigns/index.ts';
import { contactsModule } from './modules/contacts/index.ts';
import { conversationsModule } from './modules/conversations/index.ts';
import { exportsModule } from './modules/exports/index.ts';
import { identityModule } from './modules/identity/index.ts';
import { linksModule } from './modules/links/index.ts';
import { liveModule } from './modules/live/index.ts';
import { messagingModule } from './modules/messaging/index.ts';
import { numbersModule } from './modules/numbers/index.ts';
import { organizationsModule } from './modules/organizations/index.ts';
import { partnersModule } from './modules/partners/index.ts';
import { systemModule } from './modules/system/index.ts';
import { voiceModule } from './modules/voice/index.ts';
import { webhooksModule } from './modules/webhooks/index.ts';

export const MODULES = [
  systemModule,
  organizationsModule,
  identityModule,
  numbersModule,
  apiKeysModule,
  contactsModule,
  linksModule,
  messagingModule,
  campaignsModule,
  conversationsModule,
  voiceModule,
  agentsModule,
  exportsModule,
  partnersModule,
  webhooksModule,
  liveModule,
] as const;
