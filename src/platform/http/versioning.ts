// The API version a request is answered as of, when it did not name one: its organization's pinned version
// (docs/versioning.md), or that version's successor once it is sunset. The guards call this once they know
// the organization; a request that sent API-Version keeps the version it asked for.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { servedVersion } from '../version.ts';

export function useOrganizationVersion(
  request: FastifyRequest,
  reply: FastifyReply,
  pinned: string,
  now: Date,
): void {
  if (request.apiVersionAsked) return;
  const version = servedVersion(pinned, now);
  request.apiVersion = version;
  reply.header('API-Version', version);
}
