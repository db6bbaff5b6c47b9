// What a route needs of its caller, declared once in the route's config and enforced by the guard of each
// interface it is mounted on. A route written once carries both halves: the developer API reads `scope`,
// `rateLimit` and `sendLimit`; the portal and management read `role` and `stepUp`. Neither guard reads the
// other's fields, so a twin is the same declaration mounted twice.
import type { InterfaceName } from './caller.ts';

export type RateLimitClass = 'messaging' | 'other';
/** The products of CONTRACT section 7 (organizations/schemas.ts keeps the list an organization holds). */
export type ProductName = 'messaging' | 'voice' | 'agents';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Developer API: the key scope this route needs; undefined means any key with at least one scope. */
    scope?: string;
    /** Developer API: which request limit counts this route (the messaging product per organization, or per key). */
    rateLimit?: RateLimitClass;
    /** Every interface: also counts against the organization's 30 sends per minute. */
    sendLimit?: boolean;
    /** Session interfaces: `manager` needs owner or admin; default any member. */
    role?: 'member' | 'manager';
    /** Session interfaces: a user with 2FA on needs a verification within the last 10 minutes. */
    stepUp?: boolean;
    /**
     * Every interface: the product this route belongs to; an organization without it gets 402
     * SUBSCRIPTION_REQUIRED. Undefined: the account's own (contacts, keys, webhooks), open to every product.
     */
    product?: ProductName;
    /** Session interfaces: answered for a suspended organization too (sign-in, me, logout). */
    allowSuspended?: boolean;
    /** The guard lets the request through without a caller (sign-in, health, the version). */
    anonymous?: boolean;
    /** Session interfaces: accept a session token past its expiry (refresh only). */
    allowExpired?: boolean;
    /** Session interfaces: allowed while the user must still change their password. */
    allowPendingPasswordChange?: boolean;
    /**
     * Largest request body this route takes when it is streamed rather than parsed (multipart uploads):
     * a declared Content-Length above it is refused with 413 before a byte is read.
     */
    uploadLimit?: number;
    /**
     * `transaction`: the route's service stores the Idempotency-Key in its own write's transaction
     * (Idempotency.run), so the interface's request-level idempotency (http/idempotent-writes.ts) leaves it.
     */
    idempotency?: 'transaction';
    /** Error statuses this route answers beyond the interface's usual ones (for the OpenAPI document). */
    errorStatuses?: readonly number[];
    /** Set when the route is mounted: the interface serving it. */
    interface?: InterfaceName;
  }
}
