// The numbers module: the phone numbers an organization owns and sends from.
import { defineModule } from '../../platform/module.ts';
import { numberOperatorRoutes } from './routes.ts';
import { NumberService } from './service.ts';

export type { PhoneNumber } from './service.ts';
export { NumberService } from './service.ts';

export const numbersModule = defineModule({
  name: 'numbers',
  create: ({ platform }) => ({
    numbers: new NumberService({ db: platform.db, clock: platform.clock }),
  }),
  routes: { operator: [numberOperatorRoutes] },
});
