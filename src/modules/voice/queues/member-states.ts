// A queue member's state (CONTRACT section 13), derived from what the records say rather than kept as a flag
// that could drift from them: the entries offered to them, their calls, their wrap-up and their phones. Pure,
// so each rule is tested without a database.
//   on_call     a queue call they answered has not ended, or a call of theirs is in progress (the call is
//               their extension's, or an internal call to their extension)
//   ringing     a waiting caller (of any queue) is offered to them now
//   wrap_up     their latest queue call ended less than that queue's wrapUpSeconds ago
//   offline     no phone can ring them: on a server running the SIP PBX, no live SIP registration; on the
//               simulated PBX alone every extension has a (simulated) phone, so nobody is offline
//   available   none of these: the dispatcher may offer them a caller
import type { MemberFacts } from './entry-store.ts';

export const MEMBER_STATES = ['available', 'ringing', 'on_call', 'wrap_up', 'offline'] as const;
export type MemberState = (typeof MEMBER_STATES)[number];

/** Whether phones ring through the SIP PBX (a member needs a registered phone), or the simulated PBX alone. */
export type Presence = 'sip' | 'simulated';

export function memberState(facts: MemberFacts, now: Date, presence: Presence): MemberState {
  if (facts.on_call) return 'on_call';
  if (facts.ringing) return 'ringing';
  if (facts.wrap_up_until && facts.wrap_up_until.getTime() > now.getTime()) return 'wrap_up';
  if (presence === 'sip' && !facts.registered) return 'offline';
  return 'available';
}
