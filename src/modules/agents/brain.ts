// An agent's brain: the Responder (offline or a model) with the rules every agent follows whatever answers
// for it. The chat endpoint and calls both go through here, so an agent tried in text behaves as on a call.
//   - A caller who says one of the agent's end-call phrases gets a goodbye and the call ends.
//   - A reply that says one of them ends the call after it is spoken.
//   - A transfer only happens when the agent has somewhere to transfer to.
import { ApiError } from '../../platform/errors.ts';
import type { KnowledgeService } from './knowledge.ts';
import {
  type AgentProfile,
  type Responder,
  type ResponderContext,
  ResponderError,
  type Turn,
} from './responder.ts';
import type { AgentTool, ChatReply, ToolCall } from './schemas.ts';

const GOODBYE = 'Thank you for calling. Goodbye!';

export interface ToolCaller {
  call(tool: AgentTool, args: unknown): Promise<ToolCall>;
}

export class AgentBrain {
  constructor(
    private readonly responder: Responder,
    private readonly knowledge: KnowledgeService,
    private readonly tools: ToolCaller,
  ) {}

  get responderName(): string {
    return this.responder.name;
  }

  async reply(agent: AgentProfile, conversation: Turn[]): Promise<ChatReply> {
    const said = conversation.at(-1)?.content ?? '';
    if (saysAny(said, agent.endCallPhrases)) return { reply: GOODBYE, sources: [], action: 'end_call' };
    return this.ruled(agent, await this.responder.respond(agent, conversation, this.context(agent)));
  }

  /**
   * The reply as it is generated (a call speaks it sentence by sentence): yields its words, returns the whole
   * reply under the same rules as `reply`. A responder that cannot stream yields its reply at once.
   */
  async *stream(agent: AgentProfile, conversation: Turn[]): AsyncGenerator<string, ChatReply> {
    const said = conversation.at(-1)?.content ?? '';
    if (saysAny(said, agent.endCallPhrases)) {
      yield GOODBYE;
      return { reply: GOODBYE, sources: [], action: 'end_call' };
    }
    if (!this.responder.stream) {
      const answer = await this.reply(agent, conversation);
      yield answer.reply;
      return answer;
    }
    const answer = yield* this.responder.stream(agent, conversation, this.context(agent));
    return this.ruled(agent, answer);
  }

  private context(agent: AgentProfile): ResponderContext {
    return {
      search: (query, limit = 5) =>
        this.knowledge.search(agent.organizationId, agent.knowledgeBaseIds, query, limit),
      callTool: (tool, args) => this.tools.call(tool, args),
    };
  }

  private ruled(agent: AgentProfile, answer: ChatReply): ChatReply {
    if (answer.action === 'transfer' && !agent.transferTo) delete answer.action;
    if (!answer.action && saysAny(answer.reply, agent.endCallPhrases)) answer.action = 'end_call';
    return answer;
  }
}

/** The chat endpoint's reply: a model that does not answer is 502 AGENT_UNAVAILABLE, said plainly. */
export async function replyOrUnavailable(brain: AgentBrain, agent: AgentProfile, conversation: Turn[]) {
  try {
    return await brain.reply(agent, conversation);
  } catch (error) {
    if (error instanceof ResponderError) {
      throw new ApiError(502, `The agent's language model did not answer: ${error.message}`, {
        code: 'AGENT_UNAVAILABLE',
      });
    }
    throw error;
  }
}

/** Whether `text` contains one of `phrases` as whole words, ignoring case and punctuation. */
export function saysAny(text: string, phrases: string[]): boolean {
  const words = ` ${normalise(text)} `;
  return phrases.some((phrase) => {
    const wanted = normalise(phrase);
    return wanted !== '' && words.includes(` ${wanted} `);
  });
}

function normalise(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}']+/gu, ' ')
    .trim();
}
