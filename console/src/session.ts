// Who is signed in: GET /v2/portal/auth/me, shared by every page through TanStack Query.
import { useQuery } from '@tanstack/react-query';
import { get } from './api.ts';
import type { Data } from './shapes.ts';

export type Role = 'owner' | 'admin' | 'member';
export type Me = Data<'/v2/portal/auth/me'>;

export const meQuery = {
  queryKey: ['me'],
  queryFn: () => get<Me>('/v2/portal/auth/me'),
  staleTime: 60_000,
};

export function useMe() {
  return useQuery(meQuery);
}

/** Owners and admins manage; members read and send (CONTRACT sections 4 and 7). */
export function canManage(me: Me | undefined): boolean {
  return me?.role === 'owner' || me?.role === 'admin';
}
