// The organizations module's SQL. Every method takes the Queryable to run on, so sign-up and the operator API
// can create an organization inside their own transaction.

import { assignments } from '../../platform/db/assignments.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { OrganizationInput, Plan, Product, Region, SubscriptionState } from './schemas.ts';

export interface OrganizationRow {
  id: string;
  name: string;
  plan: Plan;
  subscription_state: SubscriptionState;
  card_verified: boolean;
  region: Region;
  monthly_allowance_segments: number;
  daily_limit_segments: number;
  trial_message_limit: number;
  products: Product[];
  suspended: boolean;
  api_version: string;
  partner: boolean;
  partner_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * An organizations row as `to_jsonb(organizations)` gives it: how another module's store reads the row in the
 * same statement as its own (a join), for OrganizationService.fromRecord to read. Its timestamps are ISO
 * strings there.
 */
export type OrganizationRecord = Omit<OrganizationRow, 'created_at' | 'updated_at'> & {
  created_at: string;
  updated_at: string;
};

/** The row a record stands for. */
export function rowOfRecord(record: OrganizationRecord): OrganizationRow {
  return { ...record, created_at: new Date(record.created_at), updated_at: new Date(record.updated_at) };
}

/** The fields stored as they are given; createdAt is parsed by the service first. */
export type OrganizationColumns = Omit<OrganizationInput, 'createdAt'>;

// Field name in the API -> column. The one list both insert and update walk.
const COLUMNS: Record<keyof OrganizationColumns, string> = {
  name: 'name',
  plan: 'plan',
  subscriptionState: 'subscription_state',
  cardVerified: 'card_verified',
  region: 'region',
  monthlyAllowanceSegments: 'monthly_allowance_segments',
  dailyLimitSegments: 'daily_limit_segments',
  trialMessageLimit: 'trial_message_limit',
  products: 'products',
  suspended: 'suspended',
  apiVersion: 'api_version',
  partner: 'partner',
  partnerId: 'partner_id',
};

/** The columns of `fields` that are given, in the order of COLUMNS. */
function givenColumns(fields: OrganizationColumns): [string, unknown][] {
  return Object.entries(COLUMNS)
    .map(([field, column]): [string, unknown] => [column, fields[field as keyof OrganizationColumns]])
    .filter(([, value]) => value !== undefined);
}

export class OrganizationStore {
  /** Inserts an organization; a field not given takes the column's default. */
  async insert(
    db: Queryable,
    id: string,
    fields: OrganizationColumns,
    createdAt: Date,
    now: Date,
  ): Promise<OrganizationRow> {
    const given = givenColumns(fields);
    const columns = ['id', 'created_at', 'updated_at', ...given.map(([column]) => column)];
    const values = [id, createdAt, now, ...given.map(([, value]) => value)];
    const placeholders = values.map((_, i) => `$${i + 1}`).join(', ');
    const [row] = await db.query<OrganizationRow>(
      `INSERT INTO organizations (${columns.join(', ')}) VALUES (${placeholders}) RETURNING *`,
      values,
    );
    return row!;
  }

  /** Sets the fields given (and created_at when `createdAt` is); undefined when there is no such organization. */
  async update(
    db: Queryable,
    id: string,
    fields: OrganizationColumns,
    createdAt: Date | undefined,
    now: Date,
  ): Promise<OrganizationRow | undefined> {
    const values: unknown[] = [id, now];
    const sets = assignments({ ...Object.fromEntries(givenColumns(fields)), created_at: createdAt }, values);
    const [row] = await db.query<OrganizationRow>(
      `UPDATE organizations SET updated_at = $2${sets.map((s) => `, ${s}`).join('')} WHERE id = $1 RETURNING *`,
      values,
    );
    return row;
  }

  async find(db: Queryable, id: string): Promise<OrganizationRow | undefined> {
    const [row] = await db.query<OrganizationRow>('SELECT * FROM organizations WHERE id = $1', [id]);
    return row;
  }

  async exists(db: Queryable, id: string): Promise<boolean> {
    const rows = await db.query('SELECT 1 FROM organizations WHERE id = $1', [id]);
    return rows.length > 0;
  }

  async count(db: Queryable): Promise<number> {
    const [row] = await db.query<{ count: number }>('SELECT count(*)::int AS count FROM organizations');
    return row!.count;
  }
}
