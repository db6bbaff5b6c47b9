// The one answer to "who is calling": every guard (API key on the developer API, session on the portal and
// management, the operator token) turns a request into a Caller, and a handler reads it with callerOf().
// Handlers never look at which credential was used; they act for caller.organizationId and record
// caller.actor. What a route needs of a caller is declared in its config (see route-access.ts) and enforced
// by the interface's guard before the handler runs.
import type { FastifyRequest } from 'fastify';

/** The interfaces a route can be mounted on (CONTRACT sections 2–6); each decides guard and error shape. */
export const INTERFACE_NAMES = ['public', 'developer', 'portal', 'management', 'operator'] as const;
export type InterfaceName = (typeof INTERFACE_NAMES)[number];

/** Where an organization's data and phone numbers live; numbers without a country code are read in it. */
export const REGIONS = ['us', 'ca', 'eu'] as const;
export type Region = (typeof REGIONS)[number];

/** The roles of a person in an organization (CONTRACT section 4). */
export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

export interface Caller {
  organizationId: string;
  region: Region;
  /** Who acts, as recorded in histories: `api_key:<id>` or `user:<id>`. */
  actor: string;
  /** The key's scopes on the developer API; null for a person (roles decide instead). */
  scopes: readonly string[] | null;
  interface: InterfaceName;
  /** A person's role in the organization; null for an API key. */
  role: Role | null;
  /** The person acting; null for an API key. */
  userId: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the interface's guard; null on routes that take no caller (sign-in, health, operator). */
    caller: Caller | null;
  }
}

/** The caller the guard attached; a route mounted without a guard fails loudly rather than openly. */
export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new Error(`callerOf() on ${request.url}: this route has no caller`);
  return request.caller;
}

/** The scope a cursor is bound to: the same list on two interfaces has two cursor namespaces. */
export function cursorScope(caller: Caller): string {
  return caller.interface === 'developer' ? 'api' : caller.interface;
}
