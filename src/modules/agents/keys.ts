// Keys a caller presses on an agent call (issue 34): RFC 4733 telephone-events or SIP INFO over SIP, the test
// control's `digits` on the simulated PBX, reaching the agent as a Heard of kind `keys`. The agent's `keys` map
// a key to an action taken at once, without the brain: `transfer` (to transferTo), `repeat` (the agent's last
// words again) or `end_call`. Any other key is the caller's turn: the transcript keeps `{role: "caller", text:
// "", digits}` and the brain reads "(pressed 1 2 3)", so a model can hand the digits to a tool (an account
// number, a menu choice). Keys pressed while the agent spoke come as one group; the first key of a group
// decides: mapped, its action (the rest of the group is kept in the transcript only); else the whole group
// goes to the brain.
import type { AgentEnd, Heard } from '../voice/index.ts';
import type { AgentCallRow } from './agent-call-store.ts';
import type { AgentRow } from './agent-store.ts';
import type { Turn } from './responder.ts';

const TRANSFERRING = 'Please hold while I transfer your call.';
const CANNOT_TRANSFER = "I'm sorry, I can't transfer this call.";
const GOODBYE = 'Thank you for calling. Goodbye!';

type TranscriptTurn = AgentCallRow['transcript'][number];

/** What pressed keys led to: the call's end, nothing more (the action was taken), or a turn for the brain. */
export type KeysOutcome = { kind: 'end'; end: AgentEnd } | { kind: 'done' } | { kind: 'ask' };

/** How the brain reads keys the caller pressed. */
export function keysSaid(digits: string): string {
  return `(pressed ${[...digits].join(' ')})`;
}

/** The transcript's caller turn for what was heard: their words, or the keys they pressed (no words). */
export function callerTurn(heard: Heard & { kind: 'speech' | 'keys' }, text: string): TranscriptTurn {
  const at = heard.at.toISOString();
  return heard.kind === 'keys'
    ? { role: 'caller', text: '', at, digits: heard.digits }
    : { role: 'caller', text, at };
}

/** Takes the action of a mapped key; `ask` when the keys are for the brain. */
export async function pressedKeys(
  heard: Heard & { kind: 'keys' },
  on: {
    agent: Pick<AgentRow, 'keys' | 'transfer_to' | 'first_message'>;
    /** The conversation so far (the agent's last words are repeated from it). */
    turns: Turn[];
    speak: (text: string) => Promise<void>;
    record: (turn: TranscriptTurn) => Promise<void>;
    now: () => Date;
  },
): Promise<KeysOutcome> {
  const action = on.agent.keys[heard.digits[0]!];
  if (!action) return { kind: 'ask' };
  await on.record(callerTurn(heard, ''));
  if (action === 'repeat') {
    const last = [...on.turns].reverse().find((turn) => turn.role === 'assistant')?.content;
    await on.speak(last ?? on.agent.first_message);
    return { kind: 'done' };
  }
  if (action === 'end_call') {
    await on.speak(GOODBYE);
    return { kind: 'end', end: { kind: 'ended_by_agent', at: on.now() } };
  }
  if (!on.agent.transfer_to) {
    await on.speak(CANNOT_TRANSFER);
    return { kind: 'done' };
  }
  await on.speak(TRANSFERRING);
  return { kind: 'end', end: { kind: 'transfer', at: on.now(), to: on.agent.transfer_to } };
}
