// Organizations: the tenant every resource belongs to, with its plan, subscription state and billing
// fields (CONTRACT section 3). The operator API provisions them; sign-up creates them too.
import type { Clock } from '../../platform/clock.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { type Caller, REGIONS, type Region } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';

export const PLANS = ['starter', 'pro', 'ultra', 'enterprise'] as const;
export const SUBSCRIPTION_STATES = ['trial', 'paid', 'past_due', 'scheduled_to_cancel'] as const;
export { REGIONS, type Region };
export type Plan = (typeof PLANS)[number];
export type SubscriptionState = (typeof SUBSCRIPTION_STATES)[number];

export interface Organization {
  id: string;
  name: string;
  plan: Plan;
  subscriptionState: SubscriptionState;
  cardVerified: boolean;
  region: Region;
  monthlyAllowanceSegments: number;
  dailyLimitSegments: number;
  trialMessageLimit: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface OrganizationInput {
  name?: string;
  plan?: Plan;
  subscriptionState?: SubscriptionState;
  cardVerified?: boolean;
  region?: Region;
  monthlyAllowanceSegments?: number;
  dailyLimitSegments?: number;
  trialMessageLimit?: number;
  createdAt?: string;
}

interface OrganizationRow {
  id: string;
  name: string;
  plan: Plan;
  subscription_state: SubscriptionState;
  card_verified: boolean;
  region: Region;
  monthly_allowance_segments: number;
  daily_limit_segments: number;
  trial_message_limit: number;
  created_at: Date;
  updated_at: Date;
}

// Field name in the API -> column. The one list both create and update walk.
const COLUMNS: Record<Exclude<keyof OrganizationInput, 'createdAt'>, string> = {
  name: 'name',
  plan: 'plan',
  subscriptionState: 'subscription_state',
  cardVerified: 'card_verified',
  region: 'region',
  monthlyAllowanceSegments: 'monthly_allowance_segments',
  dailyLimitSegments: 'daily_limit_segments',
  trialMessageLimit: 'trial_message_limit',
};

export class OrganizationService {
  /** The organization a guard already read for a request, so the handler need not read it again. */
  private readonly callers = new WeakMap<Caller, Organization>();

  private readonly db: Queryable;
  private readonly clock: Clock;

  constructor(deps: { db: Queryable; clock: Clock }) {
    this.db = deps.db;
    this.clock = deps.clock;
  }

  /** Remembers the organization a guard read for `caller` (for the life of the request). */
  remember(caller: Caller, organization: Organization): void {
    this.callers.set(caller, organization);
  }

  /** The caller's organization: the one its guard read, or a fresh read. */
  async ofCaller(caller: Caller): Promise<Organization> {
    const known = this.callers.get(caller);
    if (known) return known;
    const organization = await this.get(caller.organizationId);
    this.callers.set(caller, organization);
    return organization;
  }

  async create(input: OrganizationInput & { name: string }, tx: Queryable = this.db): Promise<Organization> {
    const now = this.clock.now();
    const createdAt = input.createdAt ? parseInstant(input.createdAt, 'createdAt') : now;
    const fields = Object.entries(COLUMNS).filter(
      ([field]) => input[field as keyof OrganizationInput] !== undefined,
    );
    const columns = ['id', 'created_at', 'updated_at', ...fields.map(([, column]) => column)];
    const values = [
      newId('org', now.getTime()),
      createdAt,
      now,
      ...fields.map(([f]) => input[f as keyof OrganizationInput]),
    ];
    const placeholders = values.map((_, i) => `$${i + 1}`).join(', ');
    const [row] = await tx.query<OrganizationRow>(
      `INSERT INTO organizations (${columns.join(', ')}) VALUES (${placeholders}) RETURNING *`,
      values,
    );
    return toOrganization(row!);
  }

  async update(id: string, input: OrganizationInput): Promise<Organization> {
    const sets: string[] = [];
    const values: unknown[] = [id, this.clock.now()];
    for (const [field, column] of Object.entries(COLUMNS)) {
      const value = input[field as keyof OrganizationInput];
      if (value === undefined) continue;
      values.push(value);
      sets.push(`${column} = $${values.length}`);
    }
    if (input.createdAt !== undefined) {
      values.push(parseInstant(input.createdAt, 'createdAt'));
      sets.push(`created_at = $${values.length}`);
    }
    const [row] = await this.db.query<OrganizationRow>(
      `UPDATE organizations SET updated_at = $2${sets.map((s) => `, ${s}`).join('')} WHERE id = $1 RETURNING *`,
      values,
    );
    if (!row) throw ApiError.notFound('Organization');
    return toOrganization(row);
  }

  async get(id: string, tx: Queryable = this.db): Promise<Organization> {
    const [row] = await tx.query<OrganizationRow>('SELECT * FROM organizations WHERE id = $1', [id]);
    if (!row) throw ApiError.notFound('Organization');
    return toOrganization(row);
  }

  async exists(id: string, tx: Queryable = this.db): Promise<boolean> {
    const rows = await tx.query('SELECT 1 FROM organizations WHERE id = $1', [id]);
    return rows.length > 0;
  }

  async count(): Promise<number> {
    const [row] = await this.db.query<{ count: number }>('SELECT count(*)::int AS count FROM organizations');
    return row!.count;
  }
}

function parseInstant(value: string, field: string): Date {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw ApiError.badRequest(`${field} must be an ISO 8601 date-time`);
  return date;
}

function toOrganization(row: OrganizationRow): Organization {
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    subscriptionState: row.subscription_state,
    cardVerified: row.card_verified,
    region: row.region,
    monthlyAllowanceSegments: row.monthly_allowance_segments,
    dailyLimitSegments: row.daily_limit_segments,
    trialMessageLimit: row.trial_message_limit,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
