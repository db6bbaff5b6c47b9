// The voice module: the phone system of CONTRACT section 9 as it is built. Today its extensions (with SIP
// credentials); the PBX, calls, voicemail, recordings and transcriptions join it (docs/voice.md).
import { defineModule } from '../../platform/module.ts';
import { identityModule } from '../identity/index.ts';
import { numbersModule } from '../numbers/index.ts';
import { ExtensionService } from './extensions.ts';
import { extensionRoutes } from './routes.ts';

export type { ExtensionService } from './extensions.ts';

export const voiceModule = defineModule({
  name: 'voice',
  create: ({ platform, use }) => {
    const { numbers } = use(numbersModule);
    const extensions = new ExtensionService({
      db: platform.db,
      clock: platform.clock,
      pagination: platform.pagination,
      box: platform.secretBox('sip-password'),
      users: use(identityModule).users,
      numbers,
      sipDomain: platform.config.sipDomain,
    });
    // A number's voice route may name an extension (or its voicemail box); agents arrive with their module.
    numbers.useRouteTargets({
      exists: async (organizationId, route) =>
        route.type !== 'agent' && (await extensions.exists(organizationId, route.target)),
    });
    return { extensions };
  },
  routes: { developer: [extensionRoutes], portal: [extensionRoutes] },
  sealed: [
    {
      table: 'extensions',
      key: 'id',
      columns: ['sip_password_sealed'],
      purpose: 'sip-password',
      associatedData: 'id',
    },
  ],
});
