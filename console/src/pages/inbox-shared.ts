// What the inbox's list and thread both use: the shapes of a conversation and a member, who can be assigned,
// the name to show for a phone, and a short time.
import { useQuery } from '@tanstack/react-query';
import { get, page } from '../api.ts';
import type { Item } from '../shapes.ts';
import type { Contact } from './contacts.tsx';

export type Conversation = Item<'/v2/portal/conversations'>;

export type Member = Item<'/v2/portal/members'>;

/** The organization's members who can take a thread (those who joined, not invitations). */
export function useMembers() {
  return useQuery({
    queryKey: ['members', 'assignable'],
    queryFn: () => page<Member>('/v2/portal/members?limit=100&page=1'),
    select: (answer) => answer.data.filter((member) => member.userId !== null && member.status === 'active'),
    staleTime: 60_000,
  });
}

export const memberName = (member: Member | undefined) => member?.name ?? member?.email ?? 'someone';

/** The contact's name where the phone is a contact, else the phone itself. */
export function useContactName(conversation: Pick<Conversation, 'contactId' | 'phone'>) {
  const contact = useQuery({
    queryKey: ['contacts', conversation.contactId],
    queryFn: () => get<Contact>(`/v2/portal/contacts/${encodeURIComponent(conversation.contactId ?? '')}`),
    enabled: conversation.contactId !== null,
    staleTime: 60_000,
  });
  return contact.data?.fullName ?? conversation.phone;
}

/** Today: the time; another day: the date. The full instant is the element's datetime. */
export function shortTime(iso: string): string {
  const at = new Date(iso);
  return at.toDateString() === new Date().toDateString()
    ? at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : at.toLocaleDateString();
}
