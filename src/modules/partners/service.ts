// Partners (CONTRACT section 11, docs/partners.md): organizations the operator marks `partner` create and
// watch client organizations, once they have accepted the partner agreement in force.
//   gate      every partner route: a non-partner gets 403 FORBIDDEN; a partner that has not accepted the
//             current version gets 412 REQUIRES_PARTNER_AGREEMENT_ACCEPTANCE with data.version, except on the
//             agreement's own routes (read it, accept it)
//   publish   the operator publishes a new version; from then on every partner must accept it again
//   accept    records who accepted which version and when; only the version in force may be accepted (409)
//   clients   created with the partner's person as their owner (so they can switch into it), listed, and their
//             usage (messages, segments, calls, minutes) over a period
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { timeWindow } from '../../platform/time-window.ts';
import type { UserService } from '../identity/index.ts';
import type { OrganizationService } from '../organizations/index.ts';
import { type AgreementRow, type ClientRow, PartnerStore } from './store.ts';

/** The longest period a usage report covers. */
export const USAGE_MAX_DAYS = 366;

export interface Agreement {
  version: string;
  text: string;
  publishedAt: string;
}

export interface Client {
  id: string;
  name: string;
  plan: string;
  subscriptionState: string;
  region: string;
  createdAt: string;
}

export class PartnerService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly organizations: OrganizationService;
  private readonly users: UserService;
  private readonly store = new PartnerStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    pagination: Paginator;
    organizations: OrganizationService;
    users: UserService;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
    this.organizations = deps.organizations;
    this.users = deps.users;
  }

  /** Refuses a caller that may not use the partner routes (see the header). */
  async gate(organizationId: string, options: { agreementRoute: boolean }): Promise<void> {
    if (!(await this.store.isPartner(this.db, organizationId))) {
      throw ApiError.forbidden('This organization is not a partner');
    }
    if (options.agreementRoute) return;
    const current = await this.store.current(this.db);
    if (current && !(await this.store.acceptance(this.db, organizationId, current.version))) {
      throw new ApiError(
        412,
        `Accept the partner agreement version ${current.version} first: POST /v2/portal/partner/agreement/accept`,
        { code: 'REQUIRES_PARTNER_AGREEMENT_ACCEPTANCE', data: { version: current.version } },
      );
    }
  }

  async publish(version: string, text: string): Promise<Agreement> {
    const row = await this.store.publish(this.db, version, text, this.clock.now());
    if (!row)
      throw ApiError.conflict(`Agreement version ${version} is already published`, 'AGREEMENT_EXISTS');
    return toAgreement(row);
  }

  async agreement(organizationId: string) {
    const current = await this.store.current(this.db);
    if (!current) throw ApiError.notFound('Partner agreement (none is published)');
    const accepted = await this.store.acceptance(this.db, organizationId, current.version);
    return {
      ...toAgreement(current),
      accepted: accepted !== undefined,
      acceptedAt: accepted?.accepted_at.toISOString() ?? null,
      acceptedBy: accepted ? { userId: accepted.accepted_by, email: accepted.accepted_by_email } : null,
    };
  }

  async accept(organizationId: string, userId: string, version: string) {
    const current = await this.store.current(this.db);
    if (!current) throw ApiError.notFound('Partner agreement (none is published)');
    if (current.version !== version) {
      throw ApiError.conflict(
        `Version ${version} is not the agreement in force; accept ${current.version}`,
        'AGREEMENT_VERSION_MISMATCH',
      );
    }
    await this.store.accept(this.db, organizationId, version, userId, this.clock.now());
    return this.agreement(organizationId);
  }

  listClients(partnerId: string, query: PageQueryInput): Promise<Page<Client>> {
    return this.pagination.list(this.db, query, {
      endpoint: 'portal.partner.organizations.list',
      keyset: false,
      organizationId: partnerId,
      ...this.store.clientsQuery(partnerId),
      map: toClient,
    });
  }

  async createClient(
    partnerId: string,
    userId: string,
    input: { name: string; region?: 'us' | 'ca' | 'eu' },
  ): Promise<Client> {
    const id = await this.db.transaction(async (tx) => {
      const org = await this.organizations.create({ name: input.name, region: input.region, partnerId }, tx);
      await this.users.addMembership(userId, org.id, 'owner', tx, userId);
      return org.id;
    });
    return toClient((await this.store.client(this.db, partnerId, id))!);
  }

  async usage(partnerId: string, clientId: string, query: { since?: string; until?: string }) {
    const client = await this.store.client(this.db, partnerId, clientId);
    if (!client) throw ApiError.notFound('Client organization');
    const { since, until } = timeWindow(query, this.clock.now(), {
      defaultDays: 30,
      maxDays: USAGE_MAX_DAYS,
    });
    const usage = await this.store.usage(this.db, clientId, since, until);
    return { organizationId: clientId, since: since.toISOString(), until: until.toISOString(), ...usage };
  }
}

function toAgreement(row: AgreementRow): Agreement {
  return { version: row.version, text: row.text, publishedAt: row.published_at.toISOString() };
}

function toClient(row: ClientRow): Client {
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    subscriptionState: row.subscription_state,
    region: row.region,
    createdAt: row.created_at.toISOString(),
  };
}
