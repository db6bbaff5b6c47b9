// The scope catalog (CONTRACT section 5). A key holds a set of these; `*` satisfies every scoped endpoint.
// A key with no scopes can call nothing: authorisation is fail-closed.
export const SCOPE_CATALOG = [
  { scope: 'messages:send', description: 'Send SMS and MMS messages' },
  { scope: 'messages:read', description: 'Read message history' },
  { scope: 'contacts:read', description: 'Read contacts and contact lists' },
  { scope: 'contacts:write', description: 'Create, change, import and delete contacts and contact lists' },
  { scope: 'campaigns:read', description: 'Read campaigns and their statistics' },
  { scope: 'campaigns:write', description: 'Create, change and launch campaigns' },
  { scope: 'conversations:read', description: 'Read conversations and their timelines' },
  {
    scope: 'conversations:write',
    description: 'Reply in conversations, mark them read, assign, close and reopen them',
  },
  { scope: 'calls:read', description: 'Read calls' },
  { scope: 'calls:write', description: 'Place and hang up calls' },
  { scope: 'numbers:read', description: 'Read phone numbers' },
  { scope: 'numbers:write', description: 'Buy, configure and release phone numbers' },
  { scope: 'extensions:read', description: 'Read extensions' },
  {
    scope: 'extensions:write',
    description: 'Create, change and delete extensions and rotate their SIP passwords',
  },
  { scope: 'voicemails:read', description: 'Read voicemails' },
  { scope: 'recordings:read', description: 'Read call recordings' },
  { scope: 'flows:read', description: 'Read call flows, ring groups and queues' },
  {
    scope: 'flows:write',
    description: 'Create, change and delete call flows, ring groups and queues',
  },
  { scope: 'agents:read', description: 'Read AI voice agents and their calls' },
  { scope: 'agents:write', description: 'Create and change AI voice agents' },
  { scope: 'webhooks:read', description: 'Read webhook endpoints' },
  { scope: 'webhooks:write', description: 'Manage webhook endpoints' },
  { scope: 'exports:read', description: 'Read data exports and download them' },
  { scope: 'exports:write', description: 'Start data exports' },
  { scope: '*', description: 'Every scope, including scopes added later' },
] as const;

export type Scope = (typeof SCOPE_CATALOG)[number]['scope'];
export const SCOPES = SCOPE_CATALOG.map((entry) => entry.scope) as Scope[];

/** Whether a key holding `held` may call an endpoint needing `required` (undefined: any scope at all). */
export function scopeSatisfied(held: readonly string[], required: Scope | undefined): boolean {
  if (held.length === 0) return false;
  if (required === undefined) return true;
  return held.includes('*') || held.includes(required);
}
