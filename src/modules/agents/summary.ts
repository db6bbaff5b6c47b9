// What an agent call was about, without a model: the caller's first words (and keys), and how it ended. The
// same words make a warm transfer's summary, spoken to the person before the caller is put through. (With a
// model configured the transcript is there for anything richer.)
import type { AgentCallRow } from './agent-call-store.ts';

const ENDING: Record<NonNullable<AgentCallRow['outcome']>, string> = {
  completed: 'The caller hung up.',
  transferred: 'The agent transferred the call.',
  ended_by_agent: 'The agent ended the call.',
  no_answer: 'Nobody answered.',
  failed: 'The call failed.',
};

/** The call's summary once it ended. */
export function summarise(row: AgentCallRow, outcome: AgentCallRow['outcome']): string {
  if (row.answered_by === 'machine') {
    const left = row.transcript.some((turn) => turn.role === 'agent');
    return `An answering machine answered; ${left ? 'the agent left a message' : 'the agent hung up'}.`;
  }
  return `${callerSaid(row)} ${ENDING[outcome ?? 'completed']}`;
}

/**
 * What a warm transfer's person hears before the caller is put through: who calls (their number, read digit by
 * digit) and what they said.
 */
export function transferSummary(row: AgentCallRow): string {
  const caller = row.direction === 'inbound' ? row.from_number : row.to_number;
  const digits = [...caller.replace(/[^0-9]/g, '')].join(' ');
  return `Transferring a call from ${digits || 'an unknown number'}. ${callerSaid(row)}`;
}

/** The caller's first three turns: their words quoted, their keys as pressed. */
function callerSaid(row: AgentCallRow): string {
  const asked = row.transcript
    .filter((turn) => turn.role === 'caller')
    .map((turn) => (turn.digits ? `pressed ${turn.digits}` : `"${turn.text}"`));
  if (asked.length === 0) return 'The caller said nothing.';
  const more = asked.length > 3 ? ` and ${asked.length - 3} more` : '';
  return `The caller said: ${asked.slice(0, 3).join(', ')}${more}.`;
}
