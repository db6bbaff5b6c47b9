// The numbers module's SQL. Every method takes the Queryable to run on, so callers can add a number inside
// the transaction that checked its organization.
import type { NumberType } from '../../carriers/carrier.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import type { VoiceRoute } from './schemas.ts';

export interface PhoneNumberRow {
  id: string;
  organization_id: string;
  number: string;
  type: NumberType;
  is_default: boolean;
  friendly_name: string | null;
  voice_route_type: VoiceRoute['type'] | null;
  voice_route_target: string | null;
  voice_route_fallback_flow_id: string | null;
  created_at: Date;
}

export class NumberStore {
  /** Inserts a number; the organization's first becomes its default sender. */
  async insert(
    db: Queryable,
    number: {
      id: string;
      organizationId: string;
      number: string;
      type: NumberType;
      friendlyName?: string | null;
      now: Date;
    },
  ): Promise<PhoneNumberRow> {
    const [row] = await db.query<PhoneNumberRow>(
      `INSERT INTO phone_numbers (id, organization_id, number, type, is_default, friendly_name, created_at)
       VALUES ($1, $2, $3, $4, NOT EXISTS (SELECT 1 FROM phone_numbers WHERE organization_id = $2), $6, $5)
       RETURNING *`,
      [number.id, number.organizationId, number.number, number.type, number.now, number.friendlyName ?? null],
    );
    return row!;
  }

  async findByNumber(db: Queryable, number: string): Promise<PhoneNumberRow | undefined> {
    const [row] = await db.query<PhoneNumberRow>('SELECT * FROM phone_numbers WHERE number = $1', [number]);
    return row;
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<PhoneNumberRow | undefined> {
    const [row] = await db.query<PhoneNumberRow>(
      'SELECT * FROM phone_numbers WHERE id = $1 AND organization_id = $2',
      [id, organizationId],
    );
    return row;
  }

  /** The organization's numbers, oldest first. */
  async listByOrganization(db: Queryable, organizationId: string): Promise<PhoneNumberRow[]> {
    return db.query<PhoneNumberRow>(
      'SELECT * FROM phone_numbers WHERE organization_id = $1 ORDER BY created_at, id',
      [organizationId],
    );
  }

  listQuery(
    organizationId: string,
  ): Pick<ListQuery<PhoneNumberRow, unknown>, 'select' | 'from' | 'where' | 'params'> {
    return { select: '*', from: 'phone_numbers', where: 'organization_id = $1', params: [organizationId] };
  }

  /** Which of `numbers` some organization owns. */
  async owned(db: Queryable, numbers: string[]): Promise<Set<string>> {
    if (numbers.length === 0) return new Set();
    const rows = await db.query<{ number: string }>(
      'SELECT number FROM phone_numbers WHERE number = ANY($1::text[])',
      [numbers],
    );
    return new Set(rows.map((row) => row.number));
  }

  /** Takes the organization's row lock (buys of one organization take turns) and counts its numbers. */
  async lockAndCount(db: Queryable, organizationId: string): Promise<number> {
    const [row] = await db.query<{ count: number }>(
      `SELECT (SELECT count(*)::int FROM phone_numbers WHERE organization_id = o.id) AS count
         FROM organizations o WHERE o.id = $1 FOR UPDATE OF o`,
      [organizationId],
    );
    return row?.count ?? 0;
  }

  /** Sets the fields given (a null clears them); undefined when the number is not the organization's. */
  async update(
    db: Queryable,
    organizationId: string,
    id: string,
    fields: { friendlyName?: string | null; voiceRoute?: VoiceRoute | null },
  ): Promise<PhoneNumberRow | undefined> {
    const sets: string[] = [];
    const params: unknown[] = [id, organizationId];
    const set = (column: string, value: unknown) => sets.push(`${column} = $${params.push(value)}`);
    if (fields.friendlyName !== undefined) set('friendly_name', fields.friendlyName);
    if (fields.voiceRoute !== undefined) {
      set('voice_route_type', fields.voiceRoute?.type ?? null);
      set('voice_route_target', fields.voiceRoute?.target ?? null);
      set('voice_route_fallback_flow_id', fields.voiceRoute?.fallbackFlowId ?? null);
    }
    const [row] = await db.query<PhoneNumberRow>(
      `UPDATE phone_numbers SET ${sets.join(', ')} WHERE id = $1 AND organization_id = $2 RETURNING *`,
      params,
    );
    return row;
  }

  async clearRoutes(db: Queryable, organizationId: string, types: string[], target: string): Promise<void> {
    await db.query(
      `UPDATE phone_numbers SET voice_route_type = NULL, voice_route_target = NULL, voice_route_fallback_flow_id = NULL
        WHERE organization_id = $1 AND voice_route_type = ANY($2::text[]) AND voice_route_target = $3`,
      [organizationId, types, target],
    );
  }

  /**
   * Removes the number; when it was the default sender, the oldest number left becomes the default. Returns the
   * removed row, or undefined when it is not the organization's.
   */
  async remove(db: Queryable, organizationId: string, id: string): Promise<PhoneNumberRow | undefined> {
    const [row] = await db.query<PhoneNumberRow>(
      'DELETE FROM phone_numbers WHERE id = $1 AND organization_id = $2 RETURNING *',
      [id, organizationId],
    );
    if (row?.is_default) {
      await db.query(
        `UPDATE phone_numbers SET is_default = true
          WHERE id = (SELECT id FROM phone_numbers WHERE organization_id = $1 ORDER BY created_at, id LIMIT 1)`,
        [organizationId],
      );
    }
    return row;
  }
}
