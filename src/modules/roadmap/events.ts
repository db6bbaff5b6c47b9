// Events of products still being built (AI agents). They are declared now so endpoints
// can subscribe before the product ships (`status: coming`); when a product lands, its module declares its
// own events with these same types and shapes, and the entry here is deleted.
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';

const text = (description: string) => Type.String({ description });
const integer = (description: string) => Type.Integer({ description });

export const AgentCallCompleted = defineEvent(
  'agent_call.completed',
  Type.Object({
    id: text('Agent call id'),
    agentId: text('Agent id'),
    from: text('Caller, E.164'),
    to: text('Callee, E.164'),
    durationSeconds: integer('Length'),
    outcome: text('Outcome the agent recorded'),
    endedAt: text('When it ended'),
  }),
  'An AI voice-agent call ended.',
  {
    status: 'coming',
    example: {
      id: 'acall_0mf3k2a9x4q8w7e6r5t4y3u2',
      agentId: 'agt_0mf3k2a9x4q8w7e6r5t4y3u2',
      from: '+12025550123',
      to: '+12025550100',
      durationSeconds: 95,
      outcome: 'appointment_booked',
      endedAt: '2026-06-10T12:01:35.000Z',
    },
  },
);
