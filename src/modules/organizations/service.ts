// Organizations: the tenant every resource belongs to, with its plan, subscription state and billing
// fields (CONTRACT section 3). The operator API provisions them; sign-up creates them too.
import type { Clock } from '../../platform/clock.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Caller } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';
import type { SharedCaches } from '../../platform/shared-cache.ts';
import { parseInstant } from '../../platform/time-window.ts';
import { CURRENT_VERSION } from '../../platform/version.ts';
import type { OrganizationInput, Plan, Product, Region, SubscriptionState } from './schemas.ts';
import { type OrganizationRecord, type OrganizationRow, OrganizationStore, rowOfRecord } from './store.ts';

/** The tag of whatever the shared caches hold with an organization's row: its change invalidates them. */
export const organizationCacheTag = (id: string) => `organization:${id}`;

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
  /** The products it subscribes to; an endpoint of another answers 402 SUBSCRIPTION_REQUIRED. */
  products: Product[];
  /** Suspended by the operator: its requests answer 403 ACCOUNT_SUSPENDED and nothing runs for it. */
  suspended: boolean;
  /** The API version its requests without an API-Version header get (docs/versioning.md). */
  apiVersion: string;
  /** A partner: may create client organizations once it accepted the partner agreement (docs/partners.md). */
  partner: boolean;
  /** The partner that created it, for a client organization. */
  partnerId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export class OrganizationService {
  /** The organization a guard already read for a request, so the handler need not read it again. */
  private readonly callers = new WeakMap<Caller, Organization>();

  private readonly db: Queryable;
  private readonly clock: Clock;
  private readonly caches: SharedCaches;
  private readonly store = new OrganizationStore();

  constructor(deps: { db: Queryable; clock: Clock; caches: SharedCaches }) {
    this.db = deps.db;
    this.caches = deps.caches;
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
    const createdAt = parseInstant(input.createdAt, 'createdAt') ?? now;
    await this.checkPartner(input.partnerId, tx);
    // Pinned to the version current now unless the operator says otherwise (docs/versioning.md).
    const fields = { ...input, apiVersion: input.apiVersion ?? CURRENT_VERSION };
    return toOrganization(await this.store.insert(tx, newId('org', now.getTime()), fields, createdAt, now));
  }

  async update(id: string, input: OrganizationInput): Promise<Organization> {
    const now = this.clock.now();
    const createdAt = parseInstant(input.createdAt, 'createdAt');
    await this.checkPartner(input.partnerId, this.db);
    if (input.partnerId === id) throw ApiError.badRequest('An organization cannot be its own partner');
    const row = await this.store.update(this.db, id, input, createdAt, now);
    if (!row) throw ApiError.notFound('Organization');
    // What other modules cached with the organization (an API key's lookup) is read afresh everywhere.
    await this.caches.invalidate([organizationCacheTag(id)]);
    return toOrganization(row);
  }

  async get(id: string, tx: Queryable = this.db): Promise<Organization> {
    const row = await this.store.find(tx, id);
    if (!row) throw ApiError.notFound('Organization');
    return toOrganization(row);
  }

  /**
   * The organization of a row another module's store read in its own statement, joined to its own rows, as
   * `to_jsonb(organizations)`, so that statement need not be followed by a read of ours (the developer
   * guard reads a key and its organization at once; a send reads the organization with its account lock).
   * A missing row (null, from an outer join) is a 404, as get() answers.
   */
  fromRecord(record: unknown): Organization {
    if (record === null || record === undefined) throw ApiError.notFound('Organization');
    return toOrganization(rowOfRecord(record as OrganizationRecord));
  }

  /** A partnerId must name an organization (else 400, never a foreign-key error). */
  private async checkPartner(partnerId: string | null | undefined, tx: Queryable): Promise<void> {
    if (partnerId && !(await this.store.exists(tx, partnerId))) {
      throw ApiError.badRequest(`partnerId ${partnerId} names no organization`);
    }
  }

  async exists(id: string, tx: Queryable = this.db): Promise<boolean> {
    return this.store.exists(tx, id);
  }

  async count(): Promise<number> {
    return this.store.count(this.db);
  }
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
    products: row.products,
    suspended: row.suspended,
    apiVersion: row.api_version,
    partner: row.partner,
    partnerId: row.partner_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
