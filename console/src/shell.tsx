// The frame around every signed-in page: navigation (a menu on phone-width screens), the organization
// switcher, dark mode, sign-out, a banner while invitations to other organizations wait for an answer, and the
// footer with the API version in force (spec "Versioning").
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, type ReactNode, Suspense, useEffect, useState } from 'react';
import { Link, useLocation } from 'wouter';
import { call } from './api.ts';
import { useLiveUpdates } from './live.ts';
import { stopPhone } from './phone/registry.ts';
import { type Me, useMe } from './session.ts';
import { ErrorNote } from './ui.tsx';

/** A product an organization may have, which shows its section. */
type Product = Me['organization']['products'][number];

// The phone (SIP.js) is a chunk of its own, loaded for organizations with the voice product only.
const PhoneDock = lazy(() => import('./phone/dock.tsx'));

const NAV: { group: string; product?: Product; links: [string, string][] }[] = [
  { group: 'Overview', links: [['/', 'Dashboard']] },
  {
    group: 'Messaging',
    product: 'messaging',
    links: [
      ['/inbox', 'Inbox'],
      ['/messages', 'Messages'],
      ['/contacts', 'Contacts'],
      ['/lists', 'Contact lists'],
      ['/campaigns', 'Campaigns'],
    ],
  },
  {
    group: 'Voice',
    product: 'voice',
    links: [
      ['/numbers', 'Numbers'],
      ['/extensions', 'Extensions'],
      ['/call-flows', 'Call flows'],
      ['/ring-groups', 'Ring groups'],
      ['/queues', 'Queues'],
      ['/live-calls', 'Live calls'],
      ['/calls', 'Calls'],
      ['/voicemail', 'Voicemail'],
      ['/recordings', 'Recordings'],
    ],
  },
  {
    group: 'AI agents',
    product: 'agents',
    links: [
      ['/agents', 'Agents'],
      ['/knowledge-bases', 'Knowledge bases'],
      ['/agent-calls', 'Agent calls'],
    ],
  },
  {
    group: 'Developers',
    links: [
      ['/api-keys', 'API keys'],
      ['/webhooks', 'Webhooks'],
    ],
  },
  {
    group: 'Account',
    links: [
      ['/members', 'Members'],
      ['/invitations', 'Invitations'],
      ['/exports', 'Exports'],
      ['/settings', 'Settings'],
    ],
  },
];

type Theme = 'light' | 'dark';
function useTheme(): [Theme, (theme: Theme) => void] {
  const initial = (): Theme => {
    const saved = localStorage.getItem('theme');
    if (saved === 'light' || saved === 'dark') return saved;
    return window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  };
  const [theme, setTheme] = useState<Theme>(initial);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem('theme', theme);
  }, [theme]);
  return [theme, setTheme];
}

export function Shell({ children }: { children: ReactNode }) {
  const me = useMe();
  const [location] = useLocation();
  const [theme, setTheme] = useTheme();
  const [menuOpen, setMenuOpen] = useState(false);
  const client = useQueryClient();
  const version = useQuery({
    queryKey: ['version'],
    queryFn: () => call<{ data?: { version?: string }; version?: string }>('GET', '/api/version'),
    staleTime: Number.POSITIVE_INFINITY,
  });
  const apiVersion = version.data?.data?.version ?? version.data?.version;
  // The organization's events as they happen refresh what the open pages show (live.ts).
  useLiveUpdates(me.isSuccess);

  // Each navigation closes the phone-width menu.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the effect runs because the location changed
  useEffect(() => setMenuOpen(false), [location]);

  if (me.isPending) return <main className="container" aria-busy="true" />;
  if (me.isError) {
    return (
      <main className="container">
        <ErrorNote error={me.error} />
      </main>
    );
  }
  const { organization, availableOrganizations, user } = me.data;

  // A new organization is a new context for every page: start the app afresh on its dashboard.
  const switchTo = async (organizationId: string) => {
    await stopPhone();
    await call('POST', '/v2/portal/auth/switch-organization', { organizationId });
    client.clear();
    window.location.assign('/');
  };
  const signOut = async () => {
    await stopPhone();
    await call('POST', '/v2/portal/auth/logout').catch(() => undefined);
    client.clear();
    window.location.assign('/login');
  };

  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <nav className="container-fluid">
          <ul>
            <li>
              <button
                type="button"
                className="menu-toggle secondary outline"
                aria-expanded={menuOpen}
                aria-controls="sidebar"
                onClick={() => setMenuOpen(!menuOpen)}
              >
                Menu
              </button>
            </li>
            <li>
              <Link href="/" className="brand">
                <strong>Comms</strong>
              </Link>
            </li>
          </ul>
          <ul>
            <li>
              <label className="org-switcher">
                <span className="visually-hidden">Organization</span>
                <select
                  aria-label="Organization"
                  value={organization.id}
                  onChange={(event) => switchTo(event.target.value)}
                >
                  {availableOrganizations.map((choice) => (
                    <option key={choice.id} value={choice.id}>
                      {choice.name}
                    </option>
                  ))}
                </select>
              </label>
            </li>
            <li>
              <button
                type="button"
                className="secondary outline"
                aria-pressed={theme === 'dark'}
                onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')}
              >
                Dark mode
              </button>
            </li>
            <li>
              <button type="button" className="contrast outline" onClick={signOut}>
                Sign out
              </button>
            </li>
          </ul>
        </nav>
      </header>
      <div className="layout">
        <aside id="sidebar" className={menuOpen ? 'open' : undefined}>
          <nav aria-label="Main">
            {NAV.filter((section) => !section.product || organization.products.includes(section.product)).map(
              (section) => (
                <section key={section.group}>
                  <h2>{section.group}</h2>
                  <ul>
                    {section.links.map(([href, label]) => {
                      const current = href === '/' ? location === '/' : location.startsWith(href);
                      return (
                        <li key={href}>
                          <Link href={href} aria-current={current ? 'page' : undefined}>
                            {label}
                          </Link>
                        </li>
                      );
                    })}
                  </ul>
                </section>
              ),
            )}
          </nav>
        </aside>
        <main id="main" className="content" tabIndex={-1}>
          {me.data.pendingInvitations > 0 && location !== '/invitations' ? (
            <p className="banner" role="status">
              {me.data.pendingInvitations === 1
                ? 'An organization invited you to join it.'
                : `${me.data.pendingInvitations} organizations invited you to join them.`}{' '}
              <Link href="/invitations">Answer invitations</Link>
            </p>
          ) : null}
          {children}
        </main>
      </div>
      {organization.products.includes('voice') ? (
        <Suspense fallback={null}>
          <PhoneDock />
        </Suspense>
      ) : null}
      <footer className="footer">
        <small>
          Signed in as {user.email} · {organization.name} ({me.data.role}) · API version{' '}
          <span data-testid="api-version">{apiVersion ?? '…'}</span> ·{' '}
          <a href="/docs" target="_blank" rel="noreferrer">
            API reference
          </a>
        </small>
      </footer>
    </div>
  );
}
