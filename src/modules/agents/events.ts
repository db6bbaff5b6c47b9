// The events of agent calls (CONTRACT section 10). `data` is the agent call as GET /agent-calls/{id} answers.
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';
import { AgentCallSchema, type PublicAgentCall, TranscriptTurn } from './schemas.ts';

const example: PublicAgentCall = {
  id: 'acall_0mf3k2a9x4q8w7e6r5t4y3u2',
  agentId: 'agt_0mf3k2a9x4q8w7e6r5t4y3u2',
  callId: 'call_0mf3k2a9x4q8w7e6r5t4y3u2',
  direction: 'inbound',
  from: '+12025550123',
  to: '+12025550100',
  status: 'completed',
  outcome: 'completed',
  transcript: [
    { role: 'agent', text: 'Bright Smile Dental, how can I help?', at: '2026-06-10T12:00:01.000Z' },
    { role: 'caller', text: 'Are you open on Saturdays?', at: '2026-06-10T12:00:04.000Z' },
    {
      role: 'agent',
      text: 'We open on the first and third Saturday of each month',
      at: '2026-06-10T12:00:08.000Z',
      latency: { endOfTurnMs: 400, recognitionMs: 210, brainMs: 35, firstAudioMs: 15, totalMs: 662 },
      interrupted: true,
    },
    { role: 'agent', text: 'On Saturdays we open from 9am to 1pm.', at: '2026-06-10T12:00:06.000Z' },
    { role: 'caller', text: '', at: '2026-06-10T12:00:09.000Z', digits: '0' },
  ],
  answeredBy: null,
  summary: 'The caller said: "Are you open on Saturdays?", pressed 0. The caller hung up.',
  durationSeconds: 95,
  recordingId: null,
  startedAt: '2026-06-10T12:00:00.000Z',
  endedAt: '2026-06-10T12:01:35.000Z',
};

export const AgentCallStarted = defineEvent(
  'agent_call.started',
  AgentCallSchema,
  'An AI agent answered a call, or placed one.',
  {
    example: {
      ...example,
      status: 'in_progress',
      outcome: null,
      summary: null,
      durationSeconds: null,
      endedAt: null,
    },
  },
);
export const AgentCallCompleted = defineEvent(
  'agent_call.completed',
  AgentCallSchema,
  'An AI agent call ended.',
  {
    example,
  },
);
export const AgentCallTransferred = defineEvent(
  'agent_call.transferred',
  AgentCallSchema,
  'An AI agent handed its call to a person (`transferTo`), who answered.',
  { example: { ...example, outcome: 'transferred' } },
);

/**
 * One finished turn of a live agent call: what the console's live transcript shows as it happens. The call's
 * record (GET /agent-calls/{id}) holds the same turn at `index` of its transcript.
 */
export const AgentCallTurnSchema = Type.Object({
  agentCallId: Type.String({ description: 'The agent call (`acall_…`)' }),
  agentId: Type.String(),
  callId: Type.String({ description: 'The call (`call_…`)' }),
  index: Type.Integer({ minimum: 0, description: "The turn's place in the transcript, 0 first" }),
  turn: TranscriptTurn,
});

export const AgentCallTurn = defineEvent(
  'agent_call.turn',
  AgentCallTurnSchema,
  'A turn of a live agent call ended: the agent said something (or was cut off), or the caller did.',
  {
    example: {
      agentCallId: example.id,
      agentId: example.agentId,
      callId: example.callId,
      index: 2,
      turn: {
        role: 'agent',
        text: 'We open on the first and third Saturday of each month',
        at: '2026-06-10T12:00:08.000Z',
        latency: { endOfTurnMs: 400, recognitionMs: 210, brainMs: 35, firstAudioMs: 15, totalMs: 662 },
        interrupted: true,
        digits: '0',
      },
    },
  },
);

export const AGENT_EVENTS = [AgentCallStarted, AgentCallCompleted, AgentCallTransferred, AgentCallTurn];
