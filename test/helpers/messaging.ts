// Messaging test helpers: an organization with a number and a key, ready to send over the developer API.
import { randomInt } from 'node:crypto';
import { createOrganization, type TestApp } from './app.ts';

export interface Sender {
  id: string;
  key: string;
  number: string;
}

/** A fresh, unused US number in the 202-555-01xx fictional range (unique per call in a process). */
let nextLine = randomInt(1000, 8000);
export function freshNumber(area = '202'): string {
  nextLine += 1;
  return `+1${area}555${String(nextLine).padStart(4, '0')}`;
}

/** An organization (operator API fields) with one number of `type` and a key holding `scopes`. */
export async function sender(
  t: TestApp,
  fields: Record<string, unknown> = {},
  options: { type?: 'local' | 'toll_free' | 'ca_local'; scopes?: string[]; number?: string | null } = {},
): Promise<Sender> {
  const org = await createOrganization(t, {
    plan: 'enterprise',
    subscriptionState: 'paid',
    cardVerified: true,
    ...fields,
  });
  let number = '';
  if (options.number !== null) {
    number =
      options.number ??
      freshNumber(options.type === 'ca_local' ? '416' : options.type === 'toll_free' ? '800' : '202');
    const res = await t.admin('POST', `/organizations/${org.id}/numbers`, {
      number,
      type: options.type ?? 'local',
    });
    if (res.status !== 201) throw new Error(`number: ${res.status} ${res.text}`);
  }
  const { secret } = await t.ctx.apiKeys.create(org.id, {
    name: 'k',
    scopes: (options.scopes ?? ['*']) as never,
  });
  return { id: org.id, key: secret, number };
}

export function send(t: TestApp, who: Sender, body: unknown, headers: Record<string, string> = {}) {
  return t.request('POST', '/api/v2/messages/send', { apiKey: who.key, body, headers });
}

/** Moves the test clock `seconds` ahead in steps of `step`, running every job due along the way. */
export async function runFor(t: TestApp, seconds: number, step = 1): Promise<void> {
  for (let moved = 0; moved < seconds; moved += step) {
    t.ctx.clock.advance(step);
    await t.ctx.jobs.drain();
  }
}

/** How many rows `sql` returns (so select rows, e.g. `SELECT 1 FROM …`, not a count: that is one row). */
export async function countRows(t: TestApp, sql: string, params: unknown[] = []): Promise<number> {
  if (/^\s*select\s+count\s*\(/i.test(sql))
    throw new Error('countRows counts the rows of its query: SELECT 1 FROM …');
  const [row] = await t.ctx.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (${sql}) counted`,
    params,
  );
  return row!.n;
}

export const messagesOf = (t: TestApp, organizationId: string) =>
  countRows(t, 'SELECT 1 FROM messages WHERE organization_id = $1', [organizationId]);
