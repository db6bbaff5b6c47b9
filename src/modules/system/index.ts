// The system module: the API version, the health checks (liveness, readiness), the metrics endpoint, and the
// test clock. It owns no tables.
import { defineModule } from '../../platform/module.ts';
import { metricsRoute } from './metrics-route.ts';
import { Readiness } from './readiness.ts';
import { clockTestControl, type SystemServices, systemRoutes } from './routes.ts';

export const systemModule = defineModule({
  name: 'system',
  create: ({ platform }): SystemServices => ({ readiness: new Readiness(platform) }),
  routes: { public: [systemRoutes, metricsRoute] },
  testControls: [clockTestControl],
});
