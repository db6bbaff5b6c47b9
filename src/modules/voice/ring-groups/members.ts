// The rule on a member list, shared by ring groups and queues: every id must be an extension of the
// organization. Checked inside the write's transaction with the extensions locked, so a refusal writes nothing
// and an accepted list cannot lose a member to a concurrent delete before it is stored.
import type { Queryable } from '../../../platform/db/index.ts';
import { ApiError } from '../../../platform/errors.ts';
import { MemberStore, type MemberTable } from './member-store.ts';

const members = new MemberStore();

/** 400 naming the first id that is not one of the organization's extensions (another's is not revealed). */
export async function checkMembers(
  tx: Queryable,
  organizationId: string,
  extensionIds: readonly string[],
): Promise<void> {
  const found = new Set(await members.lockExtensions(tx, organizationId, extensionIds));
  const missing = extensionIds.find((id) => !found.has(id));
  if (missing !== undefined) {
    throw ApiError.badRequest(`extensionIds: ${missing} is not an extension of this organization`);
  }
}

/** Makes `extensionIds` (in this order) the members of `ownerId`, a ring group or a queue. */
export function replaceMembers(
  db: Queryable,
  table: MemberTable,
  ownerId: string,
  extensionIds: readonly string[],
): Promise<void> {
  return members.replace(db, table, ownerId, extensionIds);
}

/** When each member's last call ended (longest_idle); members who never had one are absent. */
export function lastCallEnded(
  db: Queryable,
  organizationId: string,
  extensionIds: readonly string[],
): Promise<Map<string, Date>> {
  return members.lastCallEnded(db, organizationId, extensionIds);
}
