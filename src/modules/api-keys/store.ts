// The api-keys module's SQL. Every method takes the Queryable to run on, so a caller may issue a key inside
// its own transaction; the rules (expiry, revocation, test keys in production) stay with ApiKeyService.
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import type { Scope } from './scopes.ts';

export interface ApiKeyRow {
  id: string;
  organization_id: string;
  name: string;
  prefix: string;
  last_four: string;
  environment: 'live' | 'test';
  scopes: Scope[];
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_by: string | null;
  created_at: Date;
}

export interface NewApiKey {
  id: string;
  organizationId: string;
  name: string;
  keyHash: string;
  prefix: string;
  lastFour: string;
  environment: 'live' | 'test';
  scopes: Scope[];
  expiresAt: Date | null;
  createdBy: string | null;
  now: Date;
}

export class ApiKeyStore {
  async insert(db: Queryable, key: NewApiKey): Promise<ApiKeyRow> {
    const [row] = await db.query<ApiKeyRow>(
      `INSERT INTO api_keys (id, organization_id, name, key_hash, prefix, last_four, environment, scopes,
                             expires_at, created_by, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text[], $9, $10, $11) RETURNING *`,
      [
        key.id,
        key.organizationId,
        key.name,
        key.keyHash,
        key.prefix,
        key.lastFour,
        key.environment,
        key.scopes,
        key.expiresAt,
        key.createdBy,
        key.now,
      ],
    );
    return row!;
  }

  listQuery(
    organizationId: string,
  ): Pick<ListQuery<ApiKeyRow, unknown>, 'select' | 'from' | 'where' | 'params'> {
    return { select: '*', from: 'api_keys', where: 'organization_id = $1', params: [organizationId] };
  }

  /**
   * The key with this hash and, in the same read, its organization's row as `to_jsonb(organizations)` (for
   * the organizations module to read: OrganizationService.fromRecord): every developer API request needs
   * both, and one indexed join costs the database less than two statements.
   */
  async findByHash(
    db: Queryable,
    keyHash: string,
  ): Promise<(ApiKeyRow & { organization: unknown }) | undefined> {
    const [row] = await db.query<ApiKeyRow & { organization: unknown }>(
      `SELECT api_keys.*, to_jsonb(organizations) AS organization
         FROM api_keys LEFT JOIN organizations ON organizations.id = api_keys.organization_id
        WHERE api_keys.key_hash = $1`,
      [keyHash],
    );
    return row;
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<ApiKeyRow | undefined> {
    const [row] = await db.query<ApiKeyRow>('SELECT * FROM api_keys WHERE id = $1 AND organization_id = $2', [
      id,
      organizationId,
    ]);
    return row;
  }

  async touchLastUsed(db: Queryable, id: string, now: Date): Promise<void> {
    await db.query('UPDATE api_keys SET last_used_at = $2 WHERE id = $1', [id, now]);
  }

  /** Revokes the key (a revoked key keeps its first revocation time); undefined when there is no such key. */
  async revoke(db: Queryable, organizationId: string, id: string, now: Date): Promise<ApiKeyRow | undefined> {
    const [row] = await db.query<ApiKeyRow>(
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
        WHERE id = $1 AND organization_id = $2 RETURNING *`,
      [id, organizationId, now],
    );
    return row;
  }
}
