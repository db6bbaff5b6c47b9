// Call queues: the public face of src/modules/voice/queues/ (CONTRACT section 13). The voice module builds the
// service (the resource and its live state) and the runtime (callers waiting, members offered them), and
// mounts the routes; a call flow's queue step (voice/flow-queue.ts) puts callers in through the runtime.
export type { MemberState, Presence } from './member-states.ts';
export { queueRoutes } from './routes.ts';
export { QueueRuntime } from './runtime.ts';
export type { PublicQueue } from './schemas.ts';
export { QueueService } from './service.ts';
export type { QueueRow } from './store.ts';
export type { Interrupt, Waiter } from './waiter.ts';
