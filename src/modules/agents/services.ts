// What the agents module gives its routes and the other modules (its index builds them). A file of its own so
// the routes can name it without importing the index that imports them.
import type { AgentCallService } from './agent-calls.ts';
import type { AgentService } from './agents.ts';
import type { AgentBrain } from './brain.ts';
import type { KnowledgeService } from './knowledge.ts';

export interface AgentsServices {
  knowledge: KnowledgeService;
  agents: AgentService;
  brain: AgentBrain;
  agentCalls: AgentCallService;
}
