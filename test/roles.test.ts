// Who may do what on the portal and the management paths (CONTRACT sections 4, 7 and 11): the table in
// docs/auth.md "Who may do what" is the rule, and this test holds every route of /openapi.json to it. Each row
// says whether any member may call the route or only an owner or admin; the test calls every route as a
// `member` (403 FORBIDDEN exactly where the table says owner or admin) and as an `admin` (never 403 FORBIDDEN:
// what only an owner may do is decided per member, in members.test.ts). A route missing from the table, or a
// row for a route that no longer exists, fails the test. `ROLES_TABLE=print` prints the rows as the server
// behaves, to paste after a deliberate change.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createOrganization, startTestApp, type TestApp } from './helpers/app.ts';
import { fetchHead, isEventStream, operationsOf, validExample } from './helpers/openapi.ts';
import { createUser, signIn } from './helpers/portal.ts';

const MANAGERS = 'owner, admin';
const ANYONE = 'any member';

/** The rows of docs/auth.md's table: `| GET | /v2/portal/members | any member |`. */
function documentedRoles(): Map<string, string> {
  const doc = readFileSync(path.join(import.meta.dirname, '..', 'docs', 'auth.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Who may do what'));
  const rows = new Map<string, string>();
  for (const match of section.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \| ([^|]+) \|/gm)) {
    rows.set(`${match[1]} ${match[2]}`, match[3]!.trim());
  }
  return rows;
}

describe('who may do what: every portal and management route against docs/auth.md', () => {
  let t: TestApp;
  let member: string;
  let admin: string;
  let document: any;
  before(async () => {
    t = await startTestApp();
    // A partner (with no agreement published, so no 412): the partner routes answer by role like the rest.
    const org = await createOrganization(t, {
      plan: 'enterprise',
      subscriptionState: 'paid',
      cardVerified: true,
      partner: true,
    });
    member = await signIn(t, await createUser(t, { organizationIds: [org.id], role: 'member' }));
    admin = await signIn(t, await createUser(t, { organizationIds: [org.id], role: 'admin' }));
    document = (await t.request('GET', '/openapi.json')).body;
  });
  after(() => t.close());

  test('the table lists every route, and each role gets what the table says', async () => {
    // The routes a signed-in person calls about the organization: not sign-in and one's own account (auth/*).
    const routes = operationsOf(document).filter(
      ({ path: p }) =>
        (p.startsWith('/v2/portal/') && !p.startsWith('/v2/portal/auth/')) ||
        p.startsWith('/api/api-keys') ||
        p.startsWith('/api/webhooks'),
    );
    assert.ok(routes.length > 80, `only ${routes.length} routes`);
    const table = documentedRoles();
    const observed: string[] = [];
    const problems: string[] = [];
    for (const { path: template, method, operation } of routes) {
      const key = `${method.toUpperCase()} ${template}`;
      // Ids that do not exist: a route that lets the role through answers 404 (or 400), never FORBIDDEN.
      const url = template.replace(/\{(\w+)\}/g, 'nothing_here');
      const body = validExample(operation.requestBody?.content?.['application/json']?.schema) as any;
      // The smallest body's role is the first of the enum, owner, which only an owner may grant: ask for the
      // role anyone managing may grant, so the route's own rule is what answers.
      if (body && typeof body === 'object' && body.role === 'owner') body.role = 'member';
      const ask = async (token: string) => {
        if (!isEventStream(operation)) return t.request(method.toUpperCase(), url, { token, body });
        const { res, text } = await fetchHead(`${t.url}${url}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        return { status: res.status, body: text ? JSON.parse(text) : undefined };
      };
      const asMember = await ask(member);
      const asAdmin = await ask(admin);
      const forbidden = (res: { status: number; body: any }) =>
        res.status === 403 && res.body?.code === 'FORBIDDEN';
      const who = forbidden(asMember) ? MANAGERS : ANYONE;
      observed.push(`| ${method.toUpperCase()} | \`${template}\` | ${who} |`);
      if (forbidden(asAdmin)) problems.push(`${key}: an admin was refused`);
      const documented = table.get(key);
      if (!documented) problems.push(`${key}: not in the table of docs/auth.md`);
      else if (documented !== who)
        problems.push(`${key}: the table says ${documented}, the server lets ${who}`);
      table.delete(key);
    }
    for (const stale of table.keys()) problems.push(`${stale}: in the table but not a route`);
    if (process.env.ROLES_TABLE === 'print') console.log(observed.join('\n'));
    assert.deepEqual(problems, []);
  });
});
