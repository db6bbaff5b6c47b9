// A member without an extension: the phone cannot ring for them. Say so, and who can assign one (the
// organization's owners and admins by name; a manager gets the link to do it).
import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { page } from '../api.ts';
import { canManage, type Role, useMe } from '../session.ts';

interface Member {
  email: string;
  name: string | null;
  role: Role;
  status: string;
}

export function NoExtension() {
  const me = useMe();
  const managers = useQuery({
    queryKey: ['phone', 'managers'],
    queryFn: () => page<Member>('/v2/portal/members?limit=100'),
    select: (list) =>
      list.data.filter(
        (each) => each.status === 'active' && (each.role === 'owner' || each.role === 'admin'),
      ),
  });
  return (
    <div className="phone-no-extension" data-testid="phone-no-extension">
      <p>
        <strong>You have no extension yet</strong>, so calls cannot ring for you here.
      </p>
      {canManage(me.data) ? (
        <p>
          Create one, or assign yourself an existing one (its <em>User</em>), in{' '}
          <Link href="/extensions">Extensions</Link>.
        </p>
      ) : (
        <p>
          An owner or admin of {me.data?.organization.name ?? 'your organization'} assigns extensions
          {managers.data?.length
            ? `: ask ${managers.data.map((each) => `${each.name ?? each.email} (${each.role})`).join(', ')}.`
            : '.'}
        </p>
      )}
    </div>
  );
}
