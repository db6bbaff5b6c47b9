// The roadmap module: events of products not built yet, subscribable now (see events.ts). It has no
// services, routes or tables, and shrinks to nothing as agents land.
import { defineModule } from '../../platform/module.ts';
import { AgentCallCompleted } from './events.ts';

export const roadmapModule = defineModule({
  name: 'roadmap',
  create: () => ({}),
  events: [AgentCallCompleted],
});
