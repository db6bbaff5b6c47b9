// Ring groups: the public face of src/modules/voice/ring-groups/ (CONTRACT section 13). The voice module
// builds the service and mounts the routes; a call flow's dial step asks the service who rings
// (attempts) and tells it who answered (answeredBy). Queues share the member rule and the ring order.
export { checkMembers, lastCallEnded, replaceMembers } from './members.ts';
export {
  RING_STRATEGIES,
  type RingAttempt,
  type RingMembers,
  type RingStrategy,
  ringOrder,
} from './ring-order.ts';
export { ringGroupRoutes } from './routes.ts';
export type { PublicRingGroup } from './schemas.ts';
export { ExtensionIds, strategyField } from './schemas.ts';
export { RingGroupService, type RingGroupSource, type RingPlan } from './service.ts';
