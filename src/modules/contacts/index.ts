// The contacts module: contacts, their consent and opt-outs, CSV and JSON import, and contact lists.
import { defineModule } from '../../platform/module.ts';
import { ContactOptedIn, ContactOptedOut, ContactsImported } from './events.ts';
import { ContactImporter } from './import.ts';
import { contactListRoutes } from './list-routes.ts';
import { ContactListService } from './lists.ts';
import { type ContactsServices, contactRoutes } from './routes.ts';
import { ContactService } from './service.ts';

export type { Contact } from './schemas.ts';
export { ContactService } from './service.ts';

export const contactsModule = defineModule({
  name: 'contacts',
  create: ({ platform }): ContactsServices => {
    const { db, clock, events, pagination } = platform;
    return {
      contacts: new ContactService({ db, clock, events, pagination }),
      contactImporter: new ContactImporter({ db, clock, events }),
      contactLists: new ContactListService({ db, clock, pagination }),
    };
  },
  routes: {
    developer: [contactRoutes, contactListRoutes],
    portal: [contactRoutes, contactListRoutes],
  },
  events: [ContactOptedOut, ContactOptedIn, ContactsImported],
});
