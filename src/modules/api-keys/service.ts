// API keys: issued once, stored as SHA-256, looked up by hash on every request. The lookup (the key with its
// organization) is cached for a few seconds by hash (platform/shared-cache.ts): revoking a key, or changing
// its organization, invalidates it on every instance before the change's response leaves, so a revoked key
// is still refused on the very next request wherever it lands. Expiry is judged on every use, from the
// cached expiry. Only the hash is kept, in the cache as in the table.
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../platform/auth/secrets.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import type { SharedCache, SharedCaches } from '../../platform/shared-cache.ts';
import { organizationCacheTag } from '../organizations/index.ts';
import type { PublicApiKey } from './schemas.ts';
import type { Scope } from './scopes.ts';
import { type ApiKeyRow, ApiKeyStore } from './store.ts';

/** The tag of a key's cached lookup in the shared caches. */
const apiKeyCacheTag = (id: string) => `api-key:${id}`;
type KeyLookup = ApiKeyRow & { organization: unknown };

export const EXPIRY_DAYS = [30, 60, 90, 365] as const;
export type ExpiryDays = (typeof EXPIRY_DAYS)[number];

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_BODY_LENGTH = 43; // 43 base62 characters carry 256 bits
// last_used_at is written at most this often per key, so busy keys do not write on every request.
const LAST_USED_RESOLUTION_MS = 60_000;

export interface ApiKey {
  id: string;
  organizationId: string;
  name: string;
  prefix: string;
  lastFour: string;
  environment: 'live' | 'test';
  scopes: Scope[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  createdBy: string | null;
  createdAt: Date;
}

export type KeyCheck =
  /** `organization`: the key's organization row, read with the key, for OrganizationService.fromRecord. */
  | { ok: true; key: ApiKey; organization: unknown }
  | { ok: false; reason: 'unknown' | 'revoked' | 'expired' | 'test_key_in_production' };

/** A random key body in base62 with no modulo bias (rejection sampling). */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export class ApiKeyService {
  private readonly db: Queryable;
  private readonly clock: Clock;
  private readonly production: boolean;
  private readonly pagination: Paginator;
  private readonly store = new ApiKeyStore();
  private readonly caches: SharedCaches;
  /** Lookups by key hash, tagged with the key and its organization. */
  private readonly lookups: SharedCache<KeyLookup>;

  constructor(deps: {
    db: Queryable;
    clock: Clock;
    production: boolean;
    pagination: Paginator;
    caches: SharedCaches;
  }) {
    this.db = deps.db;
    this.caches = deps.caches;
    this.lookups = deps.caches.cache();
    this.clock = deps.clock;
    this.production = deps.production;
    this.pagination = deps.pagination;
  }

  list(organizationId: string, query: PageQueryInput) {
    return this.pagination.list(this.db, query, {
      endpoint: 'api-keys.list',
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId),
      map: (row: ApiKeyRow) => publicApiKey(toApiKey(row)),
    });
  }

  /** Issues a key. The returned `secret` is the only time the full key exists outside the caller. */
  async create(
    organizationId: string,
    input: { name: string; scopes: Scope[]; expiresInDays?: ExpiryDays | null; createdBy?: string | null },
    tx: Queryable = this.db,
  ): Promise<{ key: ApiKey; secret: string }> {
    const environment = this.production ? 'live' : 'test';
    const secret = `sk_${environment}_${randomBase62(KEY_BODY_LENGTH)}`;
    const now = this.clock.now();
    const expiresAt = input.expiresInDays ? new Date(now.getTime() + input.expiresInDays * 86_400_000) : null;
    const row = await this.store.insert(tx, {
      id: newId('key', now.getTime()),
      organizationId,
      name: input.name,
      keyHash: sha256Hex(secret),
      prefix: secret.slice(0, 12),
      lastFour: secret.slice(-4),
      environment,
      scopes: [...new Set(input.scopes)],
      expiresAt,
      createdBy: input.createdBy ?? null,
      now,
    });
    return { key: toApiKey(row), secret };
  }

  /**
   * Resolves a presented key, with its organization's row (one read for both). Unknown, revoked, expired and
   * (in production) test keys are refused.
   */
  async check(presented: string): Promise<KeyCheck> {
    if (!/^sk_(live|test)_[0-9A-Za-z]{20,100}$/.test(presented)) return { ok: false, reason: 'unknown' };
    if (this.production && presented.startsWith('sk_test_'))
      return { ok: false, reason: 'test_key_in_production' };
    const keyHash = sha256Hex(presented);
    const row = await this.lookups.get(keyHash, async () => {
      const found = await this.store.findByHash(this.db, keyHash);
      return (
        found && {
          value: found,
          tags: [apiKeyCacheTag(found.id), organizationCacheTag(found.organization_id)],
        }
      );
    });
    if (!row) return { ok: false, reason: 'unknown' };
    const now = this.clock.now();
    if (row.revoked_at) return { ok: false, reason: 'revoked' };
    if (row.expires_at && row.expires_at <= now) return { ok: false, reason: 'expired' };
    if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() >= LAST_USED_RESOLUTION_MS) {
      // Set first, on the cached row too, so that the requests that follow at once do not all write it.
      row.last_used_at = now;
      await this.store.touchLastUsed(this.db, row.id, now);
    }
    return { ok: true, key: toApiKey(row), organization: row.organization };
  }

  async revoke(organizationId: string, id: string): Promise<ApiKey> {
    const row = await this.store.revoke(this.db, organizationId, id, this.clock.now());
    if (!row) throw ApiError.notFound('API key');
    await this.caches.invalidate([apiKeyCacheTag(id)]);
    return toApiKey(row);
  }

  async get(organizationId: string, id: string): Promise<ApiKey> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('API key');
    return toApiKey(row);
  }
}

/** The key as clients see it after creation: never the secret or its hash. */
export function publicApiKey(key: ApiKey): PublicApiKey {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    lastFour: key.lastFour,
    scopes: key.scopes,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    revokedAt: key.revokedAt?.toISOString() ?? null,
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
    createdAt: key.createdAt.toISOString(),
  };
}

export function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    prefix: row.prefix,
    lastFour: row.last_four,
    environment: row.environment,
    scopes: row.scopes,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
    createdBy: row.created_by,
    createdAt: row.created_at,
  };
}
