// Who is signed in: GET /v2/portal/auth/me, shared by every page through TanStack Query.
import { useQuery } from '@tanstack/react-query';
import { get } from './api.ts';

export type Role = 'owner' | 'admin' | 'member';
export interface Me {
  user: { id: string; email: string; name: string | null; twoFactorEnabled: boolean };
  organization: {
    id: string;
    name: string;
    plan: string;
    subscriptionState: string;
    region: string;
    products: string[];
  };
  role: Role;
  availableOrganizations: { id: string; name: string; role: Role }[];
  /** Invitations to other organizations waiting for an answer (the banner and /invitations). */
  pendingInvitations: number;
}

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
