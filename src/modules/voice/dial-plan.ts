// The dial plan: the program each call follows while it lives. The plan is ours and the PBX carries out its
// steps (pbx.ts):
//   outbound   (click-to-call) ring the extension if one is named; once it answers, ring the callee
//   internal   ring the calling extension, then the called one as below
//   inbound    by the number's voice route: an extension (ring it for its ring time; if nobody answers, its
//              forward number; then its voicemail box, when enabled), a voicemail box, a forward number, or
//              an AI agent that answers at once
// Each step is written to the record through the live call (live-call.ts), whose table (call-states.ts)
// refuses what the call's state does not allow.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { joinAudio } from './audio.ts';
import type { CallOutcome } from './call-end.ts';
import type { EndStatus } from './call-states.ts';
import type { CallRow } from './call-store.ts';
import { type ExtensionRow, extensionParty } from './extension-store.ts';
import type { ExtensionService } from './extensions.ts';
import type { LiveCall } from './live-call.ts';
import type { AgentLine, CallAudio, RingResult } from './pbx.ts';

/** Seconds a phone number (a callee, a forward) rings before the call gives up on it. */
export const PHONE_RING_SECONDS = 30;

/** How a leg's end that was not an answer ends the call. */
const STATUS_OF: Record<Exclude<RingResult['outcome'], 'answered'>, EndStatus> = {
  busy: 'busy',
  no_answer: 'no_answer',
  failed: 'failed',
  canceled: 'canceled',
};

/**
 * An AI agent on calls (the agents module gives one): it keeps each agent call's record and does the talking.
 * The voice module rings, answers, transfers and ends the call around it.
 */
export interface AgentRunner {
  /**
   * Agent `agentId` takes or places the call: its agent call record begins, before it rings or answers. Says
   * whether the agent's calls are recorded.
   */
  begin(call: CallRow, agentId: string): Promise<{ record: boolean }>;
  /** The agent's outbound call rings. */
  ringing(call: CallRow, at: Date): Promise<void>;
  /**
   * Talks on the answered call until the caller hangs up, the agent ends the call, or it hands the call to
   * `transferTo`. `hangUp` ends what the line is doing (the agent's time is up).
   */
  converse(call: CallRow, line: AgentLine, hangUp: () => void): Promise<AgentEnd>;
  /**
   * A warm transfer: what the person who answered hears before the caller is put through with them (a summary
   * of the call, in `voice`); undefined for a cold transfer.
   */
  transferNote?(call: CallRow): Promise<{ text: string; voice?: string } | undefined>;
  /** The call ended (answered or not): the agent call record gets its end. */
  end(call: CallRow, how: { transferred: boolean; endedByAgent: boolean }): Promise<void>;
}

export type AgentEnd =
  | { kind: 'hangup'; at: Date; cause: string }
  | { kind: 'ended_by_agent'; at: Date }
  | { kind: 'transfer'; at: Date; to: string };

/** How an agent call ended, for its agent call record. */
type AgentCallEnd = { transferred: boolean; endedByAgent: boolean };

export class DialPlan {
  constructor(
    private readonly deps: {
      db: Database;
      clock: Clock;
      extensions: ExtensionService;
      log: FastifyBaseLogger;
      /** The AI agents, once the agents module has given them. */
      agents: () => AgentRunner | undefined;
    },
  ) {}

  /** Click-to-call: the named extension first, if any; once it answers, the callee. */
  async outbound(live: LiveCall, extension: ExtensionRow | undefined): Promise<void> {
    if (extension) {
      const first = await live.ring(extensionParty(extension), extension.ring_seconds);
      if (first.outcome !== 'answered') return live.finish(notAnswered(first));
    }
    const callee = await live.ring({ kind: 'phone', number: live.row.to_number }, PHONE_RING_SECONDS);
    if (callee.outcome !== 'answered') return live.finish(notAnswered(callee));
    await this.talk(live, callee.at);
  }

  async internal(live: LiveCall, caller: ExtensionRow, callee: ExtensionRow): Promise<void> {
    const first = await live.ring(extensionParty(caller), caller.ring_seconds);
    if (first.outcome !== 'answered') return live.finish(notAnswered(first));
    await this.reachExtension(live, callee);
  }

  /** Rings the extension; unanswered, its forward number; still unanswered, its voicemail box if enabled. */
  async reachExtension(live: LiveCall, extension: ExtensionRow): Promise<void> {
    // An inbound call is the extension's; an internal call stays its caller's.
    if (!live.row.extension_id) await live.note({ extension_id: extension.id });
    let result = await live.ring(extensionParty(extension), extension.ring_seconds);
    if (result.outcome === 'answered') return this.talk(live, result.at);
    if (result.outcome === 'canceled') return live.finish(notAnswered(result));
    if (extension.forward_to) {
      result = await live.ring({ kind: 'phone', number: extension.forward_to }, PHONE_RING_SECONDS);
      if (result.outcome === 'answered') return this.talk(live, result.at);
      if (result.outcome === 'canceled') return live.finish(notAnswered(result));
    }
    if (extension.voicemail_enabled && live.engine.takesVoicemail)
      return this.voicemail(live, extension, result.at);
    return live.finish(notAnswered(result));
  }

  async forward(live: LiveCall, number: string): Promise<void> {
    const result = await live.ring({ kind: 'phone', number }, PHONE_RING_SECONDS);
    if (result.outcome !== 'answered') return live.finish(notAnswered(result));
    await this.talk(live, result.at);
  }

  /** An AI agent answers at once and talks with the caller. */
  async agentAnswers(live: LiveCall, agentId: string): Promise<void> {
    await live.note({ agent_id: agentId });
    const { record } = await this.agents().begin(live.row, agentId);
    if (record) await live.note({ record });
    await this.withAgent(live, async (how) => {
      await live.answered(this.deps.clock.now());
      await this.agentTalks(live, how);
    });
  }

  /** An AI agent calls `to` (its record begun by the caller): once the callee answers, the agent talks. */
  async agentCalls(live: LiveCall, to: string): Promise<void> {
    const agents = this.agents();
    await this.withAgent(live, async (how) => {
      const callee = await live.ring({ kind: 'phone', number: to }, PHONE_RING_SECONDS, (at) =>
        agents.ringing(live.row, at),
      );
      if (callee.outcome !== 'answered') return live.finish(notAnswered(callee));
      await live.answered(callee.at);
      await this.agentTalks(live, how);
    });
  }

  /** The voicemail box answers: the greeting, then the caller's message until they hang up. */
  async voicemail(live: LiveCall, extension: ExtensionRow, at: Date): Promise<void> {
    const box = live.row.extension_id ? {} : { extension_id: extension.id };
    // A call a flow answered already (a queue's timeout, a menu) is still the box's call from here on.
    if (!(await live.answered(at, box)) && box.extension_id) await live.note(box);
    const greeting = await this.deps.extensions.greetingOf(extension);
    const message = await live.engine.takeVoicemail(live.leg, greeting);
    await live.finish(
      { status: 'completed', at: message.at, cause: message.cause },
      { voicemail: { audio: message.audio, extensionId: extension.id } },
    );
  }

  /**
   * Runs an agent call's steps; whatever they end in (a failure too: the call ends `failed`), the agent call's
   * record gets its end.
   */
  private async withAgent(live: LiveCall, steps: (how: AgentCallEnd) => Promise<void>): Promise<void> {
    const how = { transferred: false, endedByAgent: false };
    try {
      await steps(how);
    } catch (error) {
      this.deps.log.error({ err: error, callId: live.id }, 'agent call failed');
      await live.finish({ status: 'failed', at: this.deps.clock.now(), cause: 'platform_error' });
    }
    await this.agents().end(live.row, how);
  }

  /**
   * The agent talks; the call ends as the agent's conversation does, or is transferred to a person. A recorded
   * agent call has one recording: the agent's part, then the person's after a transfer.
   */
  private async agentTalks(live: LiveCall, how: AgentCallEnd): Promise<void> {
    const line = live.engine.agentLine!(live.leg, { record: live.row.record });
    let end: AgentEnd;
    let agentPart: CallAudio | undefined;
    try {
      end = await this.agents().converse(live.row, line, () => live.engine.hangup(live.id));
    } finally {
      agentPart = await line.close();
    }
    if (end.kind === 'hangup')
      return live.finish({ status: 'completed', at: end.at, cause: end.cause }, { recording: agentPart });
    if (end.kind === 'ended_by_agent') {
      how.endedByAgent = true;
      return live.finish(
        { status: 'completed', at: end.at, cause: 'normal_clearing' },
        { recording: agentPart },
      );
    }
    // A transfer: the person at `to` (an extension or a phone) rings; answered, caller and person talk.
    const extension = /^[0-9]{2,6}$/.test(end.to)
      ? await this.deps.extensions.store.findByNumber(this.deps.db, live.row.organization_id, end.to)
      : undefined;
    const result = extension
      ? await live.ring(extensionParty(extension), extension.ring_seconds)
      : await live.ring({ kind: 'phone', number: end.to }, PHONE_RING_SECONDS);
    if (result.outcome !== 'answered') {
      return live.finish(
        { status: 'completed', at: result.at, cause: 'transfer_failed' },
        { recording: agentPart },
      );
    }
    const note = await this.agents().transferNote?.(live.row);
    if (note) await live.engine.announce?.(live.leg, note.text, note.voice);
    how.transferred = true;
    const talk = await live.engine.converse(live.leg, { record: live.row.record });
    await live.finish(
      { status: 'completed', at: talk.at, cause: talk.cause },
      { recording: joinAudio(agentPart, talk.recording) },
    );
  }

  /** The callee answered: the call is in progress until a side hangs up. */
  private async talk(live: LiveCall, answeredAt: Date): Promise<void> {
    await live.answered(answeredAt);
    const end = await live.engine.converse(live.leg, { record: live.row.record });
    await live.finish({ status: 'completed', at: end.at, cause: end.cause }, { recording: end.recording });
  }

  private agents(): AgentRunner {
    const agents = this.deps.agents();
    if (!agents) throw new Error('an agent call without the agents module');
    return agents;
  }
}

function notAnswered(result: RingResult): CallOutcome {
  return { status: STATUS_OF[result.outcome as keyof typeof STATUS_OF], at: result.at, cause: result.cause };
}
