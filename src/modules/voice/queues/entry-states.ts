// The life of a caller's wait in a queue (a row of queue_entries, migrations/038_queue_entries.sql), as one
// table: its states and the events that move it. The store writes a move only from the state the table names
// (UPDATE … WHERE state = from), so a move the table does not allow, or one another process made first (a
// hang-up racing an offer), changes nothing and is logged.
export const ENTRY_STATES = ['waiting', 'offered', 'answered', 'abandoned', 'timed_out'] as const;
export type EntryState = (typeof ENTRY_STATES)[number];

/**
 *   offer       the dispatcher picked members for the caller: they ring
 *   unanswered  nobody of them answered in their ring time: the caller waits again, keeping their place
 *   answer      a member answered: the caller talks with them
 *   hangup      the caller (or the API) hung up while waiting or ringing
 *   timeout     maxWaitSeconds passed (one ringing at that moment times out when that ring ends unanswered)
 */
export type EntryEvent = 'offer' | 'unanswered' | 'answer' | 'hangup' | 'timeout';

export const ENTRY_TRANSITIONS: Readonly<
  Record<EntryState, Readonly<Partial<Record<EntryEvent, EntryState>>>>
> = {
  waiting: { offer: 'offered', hangup: 'abandoned', timeout: 'timed_out' },
  offered: { answer: 'answered', unanswered: 'waiting', hangup: 'abandoned', timeout: 'timed_out' },
  answered: {},
  abandoned: {},
  timed_out: {},
};

/** The state `event` moves an entry in `state` to, or undefined when the table does not allow it. */
export function nextEntryState(state: EntryState, event: EntryEvent): EntryState | undefined {
  return ENTRY_TRANSITIONS[state][event];
}

/** Whether the caller is still in the queue (listed by GET /queues/{id}/live, counted in positions). */
export function isInQueue(state: EntryState): boolean {
  return state === 'waiting' || state === 'offered';
}

/** The states `event` may leave and the one it reaches (each event reaches one state in the table). */
export function entryMove(event: EntryEvent): { from: EntryState[]; to: EntryState } {
  const from = ENTRY_STATES.filter((state) => ENTRY_TRANSITIONS[state][event] !== undefined);
  return { from, to: ENTRY_TRANSITIONS[from[0]!][event]! };
}
