// The numbers module: the phone numbers an organization owns and sends from and takes calls on, bought from the
// carrier's inventory (the carrier is made here: messaging sends through the same one).
import type { Carrier } from '../../carriers/carrier.ts';
import { HttpCarrier } from '../../carriers/http/carrier.ts';
import { SimulatedCarrier } from '../../carriers/simulated.ts';
import { SmppCarrier } from '../../carriers/smpp/carrier.ts';
import { defineModule } from '../../platform/module.ts';
import { carrierWebhookRoutes } from './carrier-webhook-routes.ts';
import { numberOperatorRoutes, numberRoutes } from './routes.ts';
import { NumberService, type NumbersServices } from './service.ts';

export type { PhoneNumber, Sender } from './service.ts';
export {
  NumberService,
  type NumbersServices,
  type RouteTargetExists,
  type WebhookRouteCheck,
} from './service.ts';

export const numbersModule = defineModule({
  name: 'numbers',
  create: ({ platform }): NumbersServices => {
    const { db, clock, pagination, config, log } = platform;
    const carrier: Carrier = config.smpp
      ? new SmppCarrier({ ...config.smpp, tenDlcTier: config.carrierTrustTier, log })
      : config.httpCarrier
        ? new HttpCarrier({
            ...config.httpCarrier,
            tenDlcTier: config.carrierTrustTier,
            log,
            now: () => clock.now().getTime(),
          })
        : new SimulatedCarrier(config.carrierTrustTier);
    return {
      numbers: new NumberService({ db, clock, carrier, pagination, caches: platform.caches }),
      carrier,
    };
  },
  routes: {
    operator: [numberOperatorRoutes],
    developer: [numberRoutes],
    portal: [numberRoutes],
    public: [carrierWebhookRoutes],
  },
});
