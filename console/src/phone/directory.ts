// Who the phone can call and who is calling: the organization's extensions and numbers, and its contacts
// (searched on the server by name or phone). The dialer lists matches; an incoming call shows the contact's
// name when the caller's number is a contact's, or the extension's name for an internal call.
import { useQuery } from '@tanstack/react-query';
import { page, qs } from '../api.ts';
import type { Contact } from '../pages/contacts.tsx';
import type { Extension } from '../pages/extensions.tsx';

export interface DirectoryEntry {
  key: string;
  kind: 'Extension' | 'Number' | 'Contact';
  name: string;
  /** What is dialled: an extension's digits or an E.164 number. */
  dial: string;
}

interface OwnNumber {
  id: string;
  number: string;
  friendlyName: string | null;
}

const everyExtension = {
  queryKey: ['phone', 'extensions'],
  queryFn: () => page<Extension>('/v2/portal/extensions?limit=100'),
  // Read again when a call or the dialer needs it, unless just read: a colleague's new extension has a name.
  staleTime: 5_000,
};

function contactName(contact: Contact): string {
  return (
    contact.fullName ?? ([contact.firstName, contact.lastName].filter(Boolean).join(' ') || contact.phone)
  );
}

/** Extensions, the organization's numbers and contacts matching `search` (at most a few of each). */
export function useDirectory(search: string): { entries: DirectoryEntry[]; loading: boolean } {
  const term = search.trim().toLowerCase();
  const extensions = useQuery(everyExtension);
  const numbers = useQuery({
    queryKey: ['phone', 'numbers'],
    queryFn: () => page<OwnNumber>('/v2/portal/numbers?limit=100'),
    staleTime: 60_000,
  });
  const contacts = useQuery({
    queryKey: ['phone', 'contacts', term],
    queryFn: () => page<Contact>(`/v2/portal/contacts${qs({ search: term, limit: 5 })}`),
    enabled: term.length >= 2,
    staleTime: 30_000,
  });
  if (!term) return { entries: [], loading: false };
  const matches = (...fields: (string | null)[]) =>
    fields.some((field) => field?.toLowerCase().includes(term));
  const entries: DirectoryEntry[] = [
    ...(extensions.data?.data ?? [])
      .filter((each) => matches(each.extension, each.name))
      .map((each) => ({ key: each.id, kind: 'Extension' as const, name: each.name, dial: each.extension })),
    ...(numbers.data?.data ?? [])
      .filter((each) => matches(each.number, each.friendlyName))
      .map((each) => ({
        key: each.id,
        kind: 'Number' as const,
        name: each.friendlyName ?? each.number,
        dial: each.number,
      })),
    ...(contacts.data?.data ?? []).map((each) => ({
      key: each.id,
      kind: 'Contact' as const,
      name: contactName(each),
      dial: each.phone,
    })),
  ];
  return { entries: entries.slice(0, 12), loading: extensions.isPending || contacts.isFetching };
}

/** The best name for who is on the other side: a contact's, an extension's, what their phone sent, or the number. */
export function useCallerName(remote: string, sentName: string | undefined): string {
  const isExtension = /^\d{2,6}$/.test(remote);
  const extensions = useQuery({ ...everyExtension, enabled: isExtension });
  const contact = useQuery({
    queryKey: ['phone', 'caller', remote],
    queryFn: () => page<Contact>(`/v2/portal/contacts${qs({ search: remote.replace(/^\+/, ''), limit: 5 })}`),
    enabled: !isExtension && /^\+?\d{7,15}$/.test(remote),
    staleTime: 300_000,
  });
  const digits = remote.replace(/\D/g, '');
  const known = isExtension
    ? extensions.data?.data.find((each) => each.extension === remote)?.name
    : contact.data?.data.find((each) => each.phone.replace(/\D/g, '') === digits);
  if (typeof known === 'string') return known;
  if (known) return contactName(known);
  return sentName && sentName !== remote ? sentName : remote;
}
