// The SQL of a member list, shared by ring groups and queues: storing the list in its order, which ids are
// extensions of the organization, and when each member's last call ended. Every method takes the Queryable
// to run on.
import type { Queryable } from '../../../platform/db/index.ts';

/** The member tables, each with the column naming whose list it is (never text from a request). */
const MEMBER_TABLES = {
  ring_group_members: 'ring_group_id',
  queue_members: 'queue_id',
} as const;
export type MemberTable = keyof typeof MEMBER_TABLES;

export class MemberStore {
  /** Makes `extensionIds` (in this order) the members of `ownerId` in `table`. */
  async replace(
    db: Queryable,
    table: MemberTable,
    ownerId: string,
    extensionIds: readonly string[],
  ): Promise<void> {
    const owner = MEMBER_TABLES[table];
    await db.query(`DELETE FROM ${table} WHERE ${owner} = $1`, [ownerId]);
    await db.query(
      `INSERT INTO ${table} (${owner}, extension_id, position)
       SELECT $1, member.id, member.position FROM unnest($2::text[]) WITH ORDINALITY AS member(id, position)`,
      [ownerId, extensionIds],
    );
  }

  /**
   * Which of `ids` are extensions of the organization, locked until the transaction ends so that none is
   * deleted between this check and the members' insert (that would be a foreign key error instead of a 400).
   */
  async lockExtensions(db: Queryable, organizationId: string, ids: readonly string[]): Promise<string[]> {
    const rows = await db.query<{ id: string }>(
      'SELECT id FROM extensions WHERE organization_id = $1 AND id = ANY($2::text[]) FOR SHARE',
      [organizationId, ids],
    );
    return rows.map((row) => row.id);
  }

  /**
   * When each of `ids` last finished a call it took part in: answered, and not a caller talking to its
   * voicemail box (the person was not on the phone). Members without such a call are absent.
   */
  async lastCallEnded(
    db: Queryable,
    organizationId: string,
    ids: readonly string[],
  ): Promise<Map<string, Date>> {
    const rows = await db.query<{ extension_id: string; ended_at: Date }>(
      `SELECT member.id AS extension_id, last.ended_at
         FROM unnest($2::text[]) AS member(id)
         CROSS JOIN LATERAL (
           SELECT c.ended_at FROM calls c
            WHERE c.organization_id = $1 AND c.extension_id = member.id AND c.ended_at IS NOT NULL
              AND c.answered_at IS NOT NULL AND c.voicemail_id IS NULL
            ORDER BY c.ended_at DESC LIMIT 1
         ) last`,
      [organizationId, ids],
    );
    return new Map(rows.map((row) => [row.extension_id, row.ended_at]));
  }
}
