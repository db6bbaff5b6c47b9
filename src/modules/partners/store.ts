// The SQL of partner agreements, their acceptances, a partner's client organizations and their usage. The
// client list and the usage read other modules' tables (organizations, messages, calls) for reporting only.
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';

export interface AgreementRow {
  version: string;
  text: string;
  published_at: Date;
}

export interface AcceptanceRow {
  version: string;
  accepted_by: string | null;
  accepted_by_email: string | null;
  accepted_at: Date;
}

export interface ClientRow {
  id: string;
  name: string;
  plan: string;
  subscription_state: string;
  region: string;
  created_at: Date;
}

export interface UsageRow {
  messages: number;
  segments: number;
  calls: number;
  minutes: number;
}

/** A client organization as the list and a single read select it. */
const CLIENT_COLUMNS = 'id, name, plan, subscription_state, region, created_at';

export class PartnerStore {
  async publish(db: Queryable, version: string, text: string, now: Date): Promise<AgreementRow | undefined> {
    const [row] = await db.query<AgreementRow>(
      `INSERT INTO partner_agreements (version, text, published_at) VALUES ($1, $2, $3)
       ON CONFLICT (version) DO NOTHING RETURNING *`,
      [version, text, now],
    );
    return row;
  }

  /** The agreement in force: the one published last. */
  async current(db: Queryable): Promise<AgreementRow | undefined> {
    const [row] = await db.query<AgreementRow>(
      'SELECT * FROM partner_agreements ORDER BY published_at DESC, version DESC LIMIT 1',
    );
    return row;
  }

  async acceptance(
    db: Queryable,
    organizationId: string,
    version: string,
  ): Promise<AcceptanceRow | undefined> {
    const [row] = await db.query<AcceptanceRow>(
      `SELECT a.version, a.accepted_by, u.email AS accepted_by_email, a.accepted_at
         FROM partner_agreement_acceptances a LEFT JOIN users u ON u.id = a.accepted_by
        WHERE a.organization_id = $1 AND a.version = $2`,
      [organizationId, version],
    );
    return row;
  }

  async accept(
    db: Queryable,
    organizationId: string,
    version: string,
    userId: string,
    now: Date,
  ): Promise<void> {
    await db.query(
      `INSERT INTO partner_agreement_acceptances (organization_id, version, accepted_by, accepted_at)
       VALUES ($1, $2, $3, $4) ON CONFLICT (organization_id, version) DO NOTHING`,
      [organizationId, version, userId, now],
    );
  }

  async isPartner(db: Queryable, organizationId: string): Promise<boolean> {
    const [row] = await db.query<{ partner: boolean }>('SELECT partner FROM organizations WHERE id = $1', [
      organizationId,
    ]);
    return row?.partner === true;
  }

  clientsQuery(
    partnerId: string,
  ): Pick<ListQuery<ClientRow, unknown>, 'select' | 'from' | 'where' | 'params'> {
    return {
      select: CLIENT_COLUMNS,
      from: 'organizations',
      where: 'partner_id = $1',
      params: [partnerId],
    };
  }

  async client(db: Queryable, partnerId: string, id: string): Promise<ClientRow | undefined> {
    const [row] = await db.query<ClientRow>(
      `SELECT ${CLIENT_COLUMNS} FROM organizations WHERE id = $1 AND partner_id = $2`,
      [id, partnerId],
    );
    return row;
  }

  /**
   * A client's usage in [since, until): messages sent and received, outbound segments, calls, and minutes
   * of talk (each call's duration rounded up to a whole minute, as carriers bill).
   */
  async usage(db: Queryable, organizationId: string, since: Date, until: Date): Promise<UsageRow> {
    const [messages] = await db.query<{ messages: number; segments: number }>(
      `SELECT count(*)::int AS messages,
              COALESCE(sum(segments) FILTER (WHERE direction = 'outbound'), 0)::int AS segments
         FROM messages WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3`,
      [organizationId, since, until],
    );
    const [calls] = await db.query<{ calls: number; minutes: number }>(
      `SELECT count(*)::int AS calls, COALESCE(sum(ceil(COALESCE(duration_seconds, 0) / 60.0)), 0)::int AS minutes
         FROM calls WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3`,
      [organizationId, since, until],
    );
    return { ...messages!, ...calls! };
  }
}
