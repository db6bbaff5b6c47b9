// The numbers module's SQL. Every method takes the Queryable to run on, so callers can add a number inside
// the transaction that checked its organization.
import type { NumberType } from '../../carriers/carrier.ts';
import type { Queryable } from '../../platform/db/index.ts';

export interface PhoneNumberRow {
  id: string;
  organization_id: string;
  number: string;
  type: NumberType;
  is_default: boolean;
  created_at: Date;
}

export class NumberStore {
  /** Inserts a number; the organization's first becomes its default sender. */
  async insert(
    db: Queryable,
    number: { id: string; organizationId: string; number: string; type: NumberType; now: Date },
  ): Promise<PhoneNumberRow> {
    const [row] = await db.query<PhoneNumberRow>(
      `INSERT INTO phone_numbers (id, organization_id, number, type, is_default, created_at)
       VALUES ($1, $2, $3, $4, NOT EXISTS (SELECT 1 FROM phone_numbers WHERE organization_id = $2), $5)
       RETURNING *`,
      [number.id, number.organizationId, number.number, number.type, number.now],
    );
    return row!;
  }

  async findByNumber(db: Queryable, number: string): Promise<PhoneNumberRow | undefined> {
    const [row] = await db.query<PhoneNumberRow>('SELECT * FROM phone_numbers WHERE number = $1', [number]);
    return row;
  }

  /** The organization's numbers, oldest first. */
  async listByOrganization(db: Queryable, organizationId: string): Promise<PhoneNumberRow[]> {
    return db.query<PhoneNumberRow>(
      'SELECT * FROM phone_numbers WHERE organization_id = $1 ORDER BY created_at, id',
      [organizationId],
    );
  }
}
