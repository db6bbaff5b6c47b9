// The agents module: AI voice agents of CONTRACT section 10. Knowledge bases searched with PostgreSQL
// full-text search, agents, and their brain: offline by default (answers from the knowledge bases), any
// OpenAI-compatible model when AGENT_LLM_URL is set (docs/agents.md).
import { defineModule } from '../../platform/module.ts';
import { numbersModule } from '../numbers/index.ts';
import { voiceModule } from '../voice/index.ts';
import { WebhookTransport } from '../webhooks/index.ts';
import { AgentCallService } from './agent-calls.ts';
import { AgentSpeech } from './agent-speech.ts';
import { AgentService } from './agents.ts';
import { AgentBrain } from './brain.ts';
import { AGENT_EVENTS } from './events.ts';
import { KnowledgeService } from './knowledge.ts';
import { OfflineResponder } from './offline-responder.ts';
import { OpenAiResponder } from './openai-responder.ts';
import type { Responder } from './responder.ts';
import { agentRoutes, knowledgeRoutes } from './routes.ts';
import type { AgentsServices } from './services.ts';
import { HttpToolCaller, TOOL_ANSWER_BYTES, TOOL_TIMEOUT_MS } from './tools.ts';

export type { AgentsServices } from './services.ts';

export const agentsModule = defineModule({
  name: 'agents',
  create: ({ platform, use }): AgentsServices => {
    const { db, clock, pagination, config, events, log } = platform;
    const { numbers } = use(numbersModule);
    const { extensions, calls, media } = use(voiceModule);
    const knowledge = new KnowledgeService({ db, clock, pagination });
    const agents = new AgentService({
      db,
      clock,
      pagination,
      knowledge,
      numbers,
      extensionExists: async (organizationId, digits) =>
        (await extensions.store.findByNumber(db, organizationId, digits)) !== undefined,
      production: config.appEnv === 'production',
    });
    numbers.useRouteTargets(['agent'], (organizationId, id) => agents.exists(organizationId, id));
    const responder: Responder = config.agentLlm
      ? new OpenAiResponder(config.agentLlm)
      : new OfflineResponder(db, knowledge.store);
    const tools = new HttpToolCaller(
      new WebhookTransport({
        guarded: config.appEnv === 'production',
        timeoutMs: TOOL_TIMEOUT_MS,
        excerptBytes: TOOL_ANSWER_BYTES,
      }),
    );
    const brain = new AgentBrain(responder, knowledge, tools);
    const agentCalls = new AgentCallService({
      db,
      clock,
      pagination,
      events,
      agents,
      brain,
      calls,
      media,
      log,
      turnLatency: platform.metrics.histogram({
        name: 'comms_agent_turn_latency_seconds',
        help: "Time from the end of a caller's utterance to the agent starting its reply (transcription and the model's answer included)",
        buckets: [0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10],
      }),
      speech: new AgentSpeech(db),
    });
    // Numbers routed to an agent reach it; POST /agents/{id}/calls places calls through it.
    calls.useAgents(agentCalls);
    return { knowledge, agents, brain, agentCalls };
  },
  routes: {
    developer: [knowledgeRoutes, agentRoutes],
    portal: [knowledgeRoutes, agentRoutes],
  },
  events: AGENT_EVENTS,
});
