// Call queues: the public face of src/modules/voice/queues/ (CONTRACT section 13). The voice module builds the
// service and mounts the routes. Only the resource exists: the runtime that holds waiting callers is not built.
export { queueRoutes } from './routes.ts';
export type { PublicQueue } from './schemas.ts';
export { QueueService } from './service.ts';
