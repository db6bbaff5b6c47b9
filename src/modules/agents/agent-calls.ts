// Agent calls: an AI agent on a phone call (CONTRACT section 10). The voice module rings, answers, transfers
// and ends the call; this runner does the talking (the agent's first message, then turn by turn: the caller's
// words, transcribed when they come as audio, and the brain's reply), keeps the transcript turn by turn, and
// when the call ends writes its outcome, a summary and the duration, with agent_call.* events.

import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import type { HistogramMetric } from '../../platform/metrics/index.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import type {
  AgentEnd,
  AgentLine,
  AgentRunner,
  CallMedia,
  CallRow,
  CallService,
  Heard,
} from '../voice/index.ts';
import { type AgentCallRow, AgentCallStore } from './agent-call-store.ts';
import type { AgentSpeech } from './agent-speech.ts';
import type { AgentService } from './agents.ts';
import type { AgentBrain } from './brain.ts';
import { AgentCallCompleted, AgentCallStarted, AgentCallTransferred, AgentCallTurn } from './events.ts';
import { callerTurn, keysSaid, pressedKeys } from './keys.ts';
import { screenForMachine } from './machine-detection.ts';
import type { AgentProfile, Turn } from './responder.ts';
import type { PublicAgentCall } from './schemas.ts';
import { summarise, transferSummary } from './summary.ts';
import { speakReply, type TurnLatency, wordsHeard } from './turn-pipeline.ts';

const TIME_UP = "I'm sorry, we've reached the time limit for this call. Thank you for calling. Goodbye!";
const TROUBLE = "I'm sorry, I'm having trouble answering right now.";
const UNHEARD = "Sorry, I didn't catch that. Could you say it again?";

export class AgentCallService implements AgentRunner {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly events: EventOutbox;
  private readonly agents: AgentService;
  private readonly brain: AgentBrain;
  private readonly calls: CallService;
  private readonly media: CallMedia;
  private readonly log: FastifyBaseLogger;
  private readonly turnLatency?: HistogramMetric;
  private readonly speech: AgentSpeech;
  readonly store = new AgentCallStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    pagination: Paginator;
    events: EventOutbox;
    agents: AgentService;
    brain: AgentBrain;
    calls: CallService;
    media: CallMedia;
    log: FastifyBaseLogger;
    /** The time from a caller's utterance ending to the reply starting (metrics). */
    turnLatency?: HistogramMetric;
    speech: AgentSpeech;
  }) {
    this.turnLatency = deps.turnLatency;
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
    this.events = deps.events;
    this.agents = deps.agents;
    this.brain = deps.brain;
    this.calls = deps.calls;
    this.media = deps.media;
    this.log = deps.log;
    this.speech = deps.speech;
  }

  /** POST /agents/{id}/calls: the agent calls `to`. */
  async place(
    org: Parameters<CallService['placeForAgent']>[0],
    agentId: string,
    input: { to: string; from?: string },
  ) {
    await this.agents.get(org.id, agentId);
    const call = await this.calls.placeForAgent(org, agentId, input);
    return this.byCall(call.id);
  }

  async get(organizationId: string, id: string): Promise<PublicAgentCall> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Agent call');
    return toPublic(row);
  }

  page(organizationId: string, query: PageQueryInput & { callId?: string }, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.agent-calls.list`,
      keyset: false,
      organizationId,
      filters: { callId: query.callId ?? null },
      ...this.store.listQuery(organizationId, query.callId),
      map: toPublic,
    });
  }

  private async byCall(callId: string): Promise<PublicAgentCall> {
    return toPublic((await this.store.byCall(this.db, callId))!);
  }

  // The runner the voice module drives

  async begin(call: CallRow, agentId: string): Promise<{ record: boolean }> {
    const now = this.clock.now();
    const agent = await this.agents.profile(call.organization_id, agentId).catch(() => undefined);
    await this.db.transaction(async (tx) => {
      const row = await this.store.insert(tx, {
        id: newId('acall', now.getTime()),
        organization_id: call.organization_id,
        agent_id: agentId,
        call_id: call.id,
        direction: call.direction === 'inbound' ? 'inbound' : 'outbound',
        from_number: call.from_number,
        to_number: call.to_number,
        status: call.direction === 'inbound' ? 'in_progress' : 'queued',
        now,
      });
      if (row.direction === 'inbound') {
        await this.events.record(tx, AgentCallStarted, {
          organizationId: row.organization_id,
          data: toPublic(row),
        });
      }
    });
    return { record: agent?.row.record_calls ?? false };
  }

  async ringing(call: CallRow, at: Date): Promise<void> {
    await this.store.setStatus(this.db, call.id, 'ringing', at, ['queued']);
  }

  async converse(call: CallRow, line: AgentLine, hangUp: () => void): Promise<AgentEnd> {
    const agent = await this.agents.profile(call.organization_id, call.agent_id!).catch(() => undefined);
    if (call.direction !== 'inbound') {
      const row = await this.store.setStatus(this.db, call.id, 'in_progress', this.clock.now());
      if (row)
        await this.events.record(this.db, AgentCallStarted, {
          organizationId: row.organization_id,
          data: toPublic(row),
        });
    }
    if (!agent) {
      // Deleted between the ring and the answer.
      await line.say(TROUBLE);
      return { kind: 'ended_by_agent', at: this.clock.now() };
    }
    const answeredAt = (call.answered_at ?? this.clock.now()).getTime();
    const deadline = answeredAt + agent.row.max_duration_seconds * 1000;
    let timeUp = false;
    // A caller who says nothing more is still cut off at the limit.
    const timer = setTimeout(
      () => {
        timeUp = true;
        hangUp();
      },
      Math.max(0, deadline - this.clock.nowMs()),
    );
    timer.unref();
    const turns: Turn[] = [];
    const bargeIn = agent.row.barge_in;
    const voice = agent.row.voice;
    // Each turn is appended and announced together, so the live transcript never shows a turn the record lacks.
    const addTurn = (turn: AgentCallRow['transcript'][number]) =>
      this.db.transaction(async (tx) => {
        const row = await this.store.addTurn(tx, call.id, turn, this.clock.now());
        if (!row) return;
        await this.events.record(tx, AgentCallTurn, {
          organizationId: row.organization_id,
          data: { agentCallId: row.id, agentId: row.agent_id, callId: call.id, index: row.index, turn },
        });
      });
    const recordAgent = async (text: string, more: { latency?: TurnLatency; interrupted?: boolean } = {}) => {
      turns.push({ role: 'assistant', content: text });
      const turn = { role: 'agent' as const, text, at: this.clock.now().toISOString(), ...more };
      if (!more.interrupted) delete turn.interrupted;
      await addTurn(turn);
    };
    const speak = async (text: string) => {
      const said = await line.say(text, voice, { bargeIn });
      await recordAgent(said?.interrupted ? wordsHeard(text, said.heard) : text, {
        interrupted: said?.interrupted,
      });
    };
    try {
      const machine = await screenForMachine(call, agent.row, line, {
        speak,
        answeredBy: (who) => this.store.setAnsweredBy(this.db, call.id, who, this.clock.now()),
        now: () => this.clock.now(),
      });
      if (machine) return machine;
      // Each utterance is recognised while the caller speaks, where the engine can (speech-stream.ts).
      const domain = await this.speech.domainFor(agent).catch(() => undefined);
      line.hearWith?.(() => this.media.speechStream(domain ? { domain } : {}));
      await speak(agent.firstMessage);
      for (;;) {
        const heard = await line.listen();
        if (heard.kind === 'hangup') {
          if (timeUp) return { kind: 'ended_by_agent', at: heard.at };
          return { kind: 'hangup', at: heard.at, cause: heard.cause };
        }
        if (heard.kind === 'keys') {
          const keyed = await pressedKeys(heard, {
            agent: agent.row,
            turns,
            speak,
            record: addTurn,
            now: () => this.clock.now(),
          });
          if (keyed.kind === 'end') return keyed.end;
          if (keyed.kind === 'done') continue;
        }
        const endedAt = performance.now();
        const text =
          heard.kind === 'keys'
            ? keysSaid(heard.digits)
            : (heard.text ?? (await this.wordsOf(call, heard, agent)));
        const recognisedAt = performance.now();
        if (!text) {
          await speak(UNHEARD);
          continue;
        }
        turns.push({ role: 'user', content: text });
        await addTurn(callerTurn(heard, text));
        if (this.clock.nowMs() >= deadline) {
          await speak(TIME_UP);
          return { kind: 'ended_by_agent', at: this.clock.now() };
        }
        const askedAt = performance.now();
        const spoken = await speakReply(line, this.brain.stream(agent, [...turns]), { voice, bargeIn });
        const latency = latencyOf(heard.kind === 'speech' ? (heard.endOfTurnMs ?? 0) : 0, {
          endedAt,
          recognisedAt,
          askedAt,
          spoken,
        });
        // The metric is the caller's wait: from the end of their speech to the agent's first audio.
        if (spoken.text && latency) this.turnLatency?.observe({}, latency.totalMs / 1000);
        if (spoken.text) await recordAgent(spoken.text, { latency, interrupted: spoken.interrupted });
        if (spoken.interrupted) continue;
        let reply = spoken.reply;
        if (spoken.error || !reply) {
          this.log.warn({ err: spoken.error, callId: call.id }, 'the agent could not answer');
          reply = {
            reply: TROUBLE,
            sources: [],
            action: agent.transferTo ? ('transfer' as const) : ('end_call' as const),
          };
          await speak(TROUBLE);
        }
        if (reply.action === 'end_call') return { kind: 'ended_by_agent', at: this.clock.now() };
        if (reply.action === 'transfer' && agent.transferTo) {
          return { kind: 'transfer', at: this.clock.now(), to: agent.transferTo };
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }

  async transferNote(call: CallRow): Promise<{ text: string; voice: string } | undefined> {
    const agent = await this.agents.profile(call.organization_id, call.agent_id!).catch(() => undefined);
    if (agent?.row.transfer_mode !== 'warm') return undefined;
    const row = await this.store.byCall(this.db, call.id);
    return row && { text: transferSummary(row), voice: agent.row.voice };
  }

  async end(call: CallRow, how: { transferred: boolean; endedByAgent: boolean }): Promise<void> {
    const current = await this.calls.getAny(call.id).catch(() => call);
    const answered = current.answered_at !== null;
    const outcome: AgentCallRow['outcome'] =
      current.status === 'failed'
        ? 'failed'
        : !answered
          ? 'no_answer'
          : how.transferred
            ? 'transferred'
            : how.endedByAgent
              ? 'ended_by_agent'
              : 'completed';
    const endedAt = current.ended_at ?? this.clock.now();
    await this.db.transaction(async (tx) => {
      const existing = await this.store.byCall(tx, call.id);
      if (!existing) return;
      const row = await this.store.end(tx, call.id, {
        status: outcome === 'failed' ? 'failed' : 'completed',
        outcome,
        summary: summarise(existing, outcome),
        duration_seconds: current.duration_seconds ?? 0,
        recording_id: current.recording_id,
        ended_at: endedAt,
      });
      if (!row) return;
      const event = { organizationId: row.organization_id, data: toPublic(row) };
      if (outcome === 'transferred') await this.events.record(tx, AgentCallTransferred, event);
      await this.events.record(tx, AgentCallCompleted, event);
    });
  }

  /** What the caller said, heard with the agent's language model (built from its knowledge bases). */
  /**
   * What the caller said: the words recognised while they spoke, else (no engine that streams, or it failed)
   * their audio transcribed whole.
   */
  private async wordsOf(
    call: CallRow,
    heard: Heard & { kind: 'speech' },
    agent: AgentProfile,
  ): Promise<string | undefined> {
    const streamed = await heard.transcript?.catch(() => undefined);
    if (streamed !== undefined) return streamed.trim() || undefined;
    return heard.audio ? this.transcribe(call, heard.audio, agent) : undefined;
  }

  private async transcribe(call: CallRow, wav: Buffer, agent: AgentProfile): Promise<string | undefined> {
    try {
      return await this.media.speechToText(wav, { domain: await this.speech.domainFor(agent) });
    } catch (error) {
      this.log.warn({ err: error, callId: call.id }, 'could not transcribe what the caller said');
      return undefined;
    }
  }
}

/** The stages of a turn, from performance.now() marks (`endOfTurnMs` is the silence the line waited). */
function latencyOf(
  endOfTurnMs: number,
  marks: {
    endedAt: number;
    recognisedAt: number;
    askedAt: number;
    spoken: Awaited<ReturnType<typeof speakReply>>;
  },
): TurnLatency | undefined {
  const { firstSentenceAt, firstAudioAt } = marks.spoken;
  if (firstSentenceAt === undefined || firstAudioAt === undefined) return undefined;
  const round = (ms: number) => Math.max(0, Math.round(ms));
  return {
    endOfTurnMs: round(endOfTurnMs),
    recognitionMs: round(marks.recognisedAt - marks.endedAt),
    brainMs: round(firstSentenceAt - marks.askedAt),
    firstAudioMs: round(firstAudioAt - firstSentenceAt),
    totalMs: round(endOfTurnMs + firstAudioAt - marks.endedAt),
  };
}

function toPublic(row: AgentCallRow): PublicAgentCall {
  return {
    id: row.id,
    agentId: row.agent_id,
    callId: row.call_id,
    direction: row.direction,
    from: row.from_number,
    to: row.to_number,
    status: row.status,
    outcome: row.outcome,
    transcript: row.transcript,
    answeredBy: row.answered_by,
    summary: row.summary,
    durationSeconds: row.duration_seconds,
    recordingId: row.recording_id,
    startedAt: row.started_at.toISOString(),
    endedAt: row.ended_at?.toISOString() ?? null,
  };
}
