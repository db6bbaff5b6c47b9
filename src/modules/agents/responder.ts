// The brain of an agent: a Responder answers the conversation so far with the agent's next words. Two
// implementations: OfflineResponder (offline-responder.ts), the default, answers from the agent's knowledge
// bases with no model at all; OpenAiResponder (openai-responder.ts) speaks the OpenAI chat-completions API of
// whatever AGENT_LLM_URL names (OpenAI, a local llama.cpp or vLLM server…), with the agent's tools. The chat
// endpoint and calls use the same one (AgentBrain in brain.ts adds the rules both follow).
import type { AgentTool, ChatReply, SearchHit, ToolCall } from './schemas.ts';

/** What a responder knows of the agent it speaks for. */
export interface AgentProfile {
  id: string;
  organizationId: string;
  name: string;
  instructions: string;
  firstMessage: string;
  language: string;
  knowledgeBaseIds: string[];
  endCallPhrases: string[];
  /** Where a transfer goes; null: the agent cannot transfer. */
  transferTo: string | null;
  tools: AgentTool[];
}

/** One turn of the conversation: the caller (`user`) or the agent (`assistant`). */
export interface Turn {
  role: 'user' | 'assistant';
  content: string;
}

/** What a responder may do while answering. */
export interface ResponderContext {
  /** The agent's knowledge-base chunks that best match `query`, best first. */
  search(query: string, limit?: number): Promise<SearchHit[]>;
  /** Calls one of the agent's HTTP tools with `args` (POSTed as JSON); never throws: failures are reported. */
  callTool(tool: AgentTool, args: unknown): Promise<ToolCall>;
}

export interface Responder {
  /** `offline` or `openai`: said in logs and docs. */
  readonly name: string;
  /**
   * The agent's reply to `conversation` (its last turn is the caller's). `action` says what follows the
   * reply: `end_call`, `transfer` (only when the agent has `transferTo`), or `tool` when tools were called
   * (their calls in `toolCalls`). Throws ResponderError when it cannot answer (a model that does not answer).
   */
  respond(agent: AgentProfile, conversation: Turn[], context: ResponderContext): Promise<ChatReply>;
  /**
   * The same reply as it is generated: yields its words piece by piece (a call speaks each sentence as soon as
   * it is complete) and returns the whole reply. Absent: the reply comes whole from `respond`.
   */
  stream?(
    agent: AgentProfile,
    conversation: Turn[],
    context: ResponderContext,
  ): AsyncGenerator<string, ChatReply>;
}

/** The responder could not produce a reply (the model timed out or failed after its retries). */
export class ResponderError extends Error {}
