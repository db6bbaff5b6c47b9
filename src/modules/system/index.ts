// The system module: the API version, the health check, and the test clock. It owns no tables.
import { defineModule } from '../../platform/module.ts';
import { clockTestControl, systemRoutes } from './routes.ts';

export const systemModule = defineModule({
  name: 'system',
  create: () => ({}),
  routes: { public: [systemRoutes] },
  testControls: [clockTestControl],
});
