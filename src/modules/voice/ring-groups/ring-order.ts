// Which members of a ring group ring, and in which order (CONTRACT section 13). Pure: the service reads what is
// known of the members (who answered last, when each one's last call ended) and this file decides, so every
// strategy is tested without a database or a clock.
//   simultaneous  one attempt ringing every member at once
//   sequential    one member per attempt, in the group's list order
//   round_robin   one member per attempt, starting after the member who answered last, wrapping around
//   longest_idle  one member per attempt, the one whose last call ended longest ago first; never called first
export const RING_STRATEGIES = ['simultaneous', 'sequential', 'round_robin', 'longest_idle'] as const;
export type RingStrategy = (typeof RING_STRATEGIES)[number];

/** One attempt: these extensions ring together until one answers or the attempt's ring time runs out. */
export interface RingAttempt {
  extensionIds: string[];
}

/** What the order depends on. */
export interface RingMembers {
  strategy: RingStrategy;
  /** The members in the group's own order. */
  extensionIds: readonly string[];
  /** round_robin: the member who answered the group's last call (null: nobody yet, or no longer a member). */
  lastAnsweredExtensionId: string | null;
  /** longest_idle: when each member's most recent call ended; a member missing here has had no call. */
  lastCallEndedAt: ReadonlyMap<string, Date>;
}

export function ringOrder(members: RingMembers): RingAttempt[] {
  const ids = [...members.extensionIds];
  // A group whose every member was deleted rings nobody: the caller goes on to the flow's next step.
  if (ids.length === 0) return [];
  switch (members.strategy) {
    case 'simultaneous':
      return [{ extensionIds: ids }];
    case 'sequential':
      return oneEach(ids);
    case 'round_robin':
      return oneEach(afterLastAnswered(ids, members.lastAnsweredExtensionId));
    case 'longest_idle':
      return oneEach(longestIdleFirst(ids, members.lastCallEndedAt));
  }
}

function oneEach(ids: string[]): RingAttempt[] {
  return ids.map((id) => ({ extensionIds: [id] }));
}

/**
 * The list rotated so the member after the last one who answered comes first. When that member has left the
 * group the rotation starts over at the top rather than guessing where they stood.
 */
function afterLastAnswered(ids: string[], lastAnswered: string | null): string[] {
  const index = lastAnswered === null ? -1 : ids.indexOf(lastAnswered);
  if (index === -1) return ids;
  return [...ids.slice(index + 1), ...ids.slice(0, index + 1)];
}

/**
 * Members who never had a call first (idle since they joined), then by when their last call ended, oldest
 * first. Ties keep the group's order, so the result is the same each time for the same facts.
 */
function longestIdleFirst(ids: string[], lastEnded: ReadonlyMap<string, Date>): string[] {
  const idleSince = (id: string) => lastEnded.get(id)?.getTime() ?? Number.NEGATIVE_INFINITY;
  return ids
    .map((id, position) => ({ id, position, since: idleSince(id) }))
    .sort((a, b) => a.since - b.since || a.position - b.position)
    .map((member) => member.id);
}
