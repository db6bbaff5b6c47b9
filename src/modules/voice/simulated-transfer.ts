// A transfer on the simulated PBX (Pbx.transfer): the conversation's step steps aside while the target rings,
// as a ring of its own (the test control's `ringing`, `answered`, `busy`, `no_answer`, `failed` and `completed`
// reach it; auto and instant play answer it as any ring), then waits again. Answered: the caller talks with the
// target, the same conversation going on. Unanswered: with `keepCurrent` the conversation goes on as it was;
// without (the person was let go at once), it ends with cause `transfer_failed`. The caller hanging up, or the
// API's hang-up, while the target rings ends the conversation too.
import type { Party, RingResult } from './pbx.ts';
import type { SimulatedCall, Waiter } from './simulated-calls.ts';

export function simulatedTransfer(
  pbx: {
    /** Rings `party` as the call's step (a waiter of step `ring`). */
    ring(party: Party, ringSeconds: number): Promise<RingResult>;
    /** The conversation waits on the PBX again. */
    resume(talk: Waiter): void;
  },
  call: SimulatedCall,
  party: Party,
  ringSeconds: number,
  options: { keepCurrent: boolean },
): Promise<RingResult> | undefined {
  const talk = call.waiter;
  // Only a conversation is transferred, and one transfer at a time (the ring would be the waiter then).
  if (talk?.step !== 'converse') return undefined;
  for (const timer of call.timers) clearTimeout(timer);
  call.timers.clear();
  return pbx.ring(party, ringSeconds).then(async (result) => {
    pbx.resume(talk);
    if (result.outcome === 'canceled') {
      // Hung up while the target rang (the API, the server shutting down): the conversation ends the same way.
      if (result.cause !== 'caller_hangup') talk.hangup(result.at, result.cause);
      else await talk.deliver('completed', result.at);
    } else if (result.outcome !== 'answered' && !options.keepCurrent) {
      await talk.deliver('failed', result.at);
    }
    return result;
  });
}
