// The contacts module: contacts, their consent and opt-outs, CSV and JSON import, and contact lists.
import { defineModule } from '../../platform/module.ts';
import { ContactOptedIn, ContactOptedOut, ContactsImported } from './events.ts';
import { ContactImporter } from './import.ts';
import { contactListRoutes } from './list-routes.ts';
import { ContactListService } from './lists.ts';
import { type ContactsServices, contactRoutes } from './routes.ts';
import { ContactService } from './service.ts';

/** An import runs within one request: rows staged a day ago belong to one that crashed. */
const STALE_IMPORT_RETENTION_MS = 24 * 60 * 60 * 1000;

export { ContactService } from './service.ts';
export { optOutKey } from './store.ts';

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
  retention: ({ contactImporter }) => [
    {
      name: 'contacts.import-staging',
      run: (now) => contactImporter.removeStaleStaging(new Date(now.getTime() - STALE_IMPORT_RETENTION_MS)),
    },
  ],
});
