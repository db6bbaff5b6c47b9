// First start of an empty development database: create a demo organization with an owner, a number and a
// test API key with every scope, and print how to sign in and call the API, once. Nothing here runs in production or test, or on a database with data.

import { randomSecret } from './platform/ids.ts';
import type { Runtime } from './runtime.ts';

export interface DemoCredentials {
  organizationId: string;
  email: string;
  password: string;
  apiKey: string;
}

export const DEMO_EMAIL = 'owner@demo.example';
export const DEMO_NUMBER = '+12025550143';

export async function seedDemoIfEmpty(ctx: Runtime): Promise<DemoCredentials | undefined> {
  if (ctx.config.appEnv !== 'development') return undefined;
  return ctx.db.transaction(async (tx) => {
    // Two instances starting together on one empty database: only the first to lock seeds.
    await tx.query('SELECT pg_advisory_xact_lock(727002)');
    const [row] = await tx.query<{ count: number }>('SELECT count(*)::int AS count FROM organizations');
    if (row!.count > 0) return undefined;
    const org = await ctx.organizations.create(
      { name: 'Demo Organization', plan: 'pro', subscriptionState: 'paid', cardVerified: true },
      tx,
    );
    const password = randomSecret(12);
    const user = await ctx.users.create({ email: DEMO_EMAIL, password, name: 'Demo Owner' }, tx);
    await ctx.users.addMembership(user.id, org.id, 'owner', tx);
    await ctx.numbers.add(org.id, { number: DEMO_NUMBER, type: 'local' }, tx);
    const { secret } = await ctx.apiKeys.create(
      org.id,
      { name: 'Demo key (every scope)', scopes: ['*'], createdBy: user.id },
      tx,
    );
    return { organizationId: org.id, email: DEMO_EMAIL, password, apiKey: secret };
  });
}

/** Printed to stdout, not the log: these are shown once, on purpose, and never again. */
export function printDemoCredentials(credentials: DemoCredentials, baseUrl: string): void {
  const lines = [
    '',
    '  First start: a demo organization was created. Keep these; they are not shown again.',
    `    Organization  ${credentials.organizationId}`,
    `    Sign in       POST ${baseUrl}/v2/portal/auth/login`,
    `    E-mail        ${credentials.email}`,
    `    Password      ${credentials.password}`,
    `    API key       ${credentials.apiKey}   (x-api-key header, every scope)`,
    `    Try it        curl -H 'x-api-key: ${credentials.apiKey}' ${baseUrl}/api/v2/me`,
    `    API docs      ${baseUrl}/docs`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
