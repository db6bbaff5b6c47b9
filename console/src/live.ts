// Live updates: while someone is signed in, one EventSource on GET /v2/portal/events (the organization's events
// as server-sent events, docs/live-events.md). Each event marks stale the queries that show what it changed, so
// the pages that are open fetch again at once and every other page is fresh when it is next shown: nothing is
// reloaded and nothing polls. The browser reconnects by itself after a drop and resumes after the last event
// it received (Last-Event-ID), so no change is lost while the connection is down.
import { type QueryClient, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';

/** The queries (by their key's start) each kind of event changes, by the event type's first part. */
const AFFECTED: Record<string, readonly (readonly string[])[]> = {
  message: [['messages'], ['dashboard', 'messages'], ['conversations'], ['campaigns']],
  call: [['calls'], ['dashboard', 'calls'], ['queues'], ['conversations'], ['recordings']],
  voicemail: [['voicemails'], ['conversations']],
  recording: [['recordings'], ['calls']],
  transcription: [['voicemails'], ['recordings']],
  agent_call: [['agent-calls'], ['conversations']],
  conversation: [['conversations']],
  campaign: [['campaigns']],
  link: [['campaigns']],
  contact: [['contacts'], ['contact-lists'], ['conversations']],
  export: [['exports']],
  webhook: [['webhooks']],
};

/**
 * Event types that change less than their first part says: an agent's turn changes its agent call's transcript
 * (the live calls and agent calls pages), not the conversations that list its call.
 */
const AFFECTED_BY_TYPE: Record<string, readonly (readonly string[])[]> = {
  'agent_call.turn': [['agent-calls']],
};

/** Every event type the stream may carry, so that each gets its listener (EventSource dispatches by type). */
const TYPES = [
  'message.sent',
  'message.delivered',
  'message.failed',
  'message.undelivered',
  'message.received',
  'call.ringing',
  'call.answered',
  'call.completed',
  'call.transferred',
  'call.gather.completed',
  'call.queue.joined',
  'call.queue.answered',
  'call.queue.abandoned',
  'call.stream.started',
  'call.stream.stopped',
  'voicemail.created',
  'recording.completed',
  'transcription.completed',
  'agent_call.started',
  'agent_call.completed',
  'agent_call.transferred',
  'agent_call.turn',
  'conversation.created',
  'conversation.assigned',
  'conversation.closed',
  'campaign.started',
  'campaign.paused',
  'campaign.completed',
  'campaign.cancelled',
  'link.clicked',
  'contact.opted_in',
  'contact.opted_out',
  'contact.import_completed',
  'export.completed',
  'webhook.endpoint_disabled',
];

/** What the latest event was, for pages that show activity as it happens (and for the console's tests). */
export const liveState = { connected: false, received: 0 };

/** The queries (by their key's start) an event of `type` changes. */
export function affectedBy(type: string): readonly (readonly string[])[] {
  return AFFECTED_BY_TYPE[type] ?? AFFECTED[type.split('.')[0]!] ?? [];
}

/**
 * How long events are gathered before the queries they touch are marked stale: a campaign sending hundreds of
 * messages a second would otherwise restart the dashboard's reads at each one, and none would finish.
 */
const GATHER_MS = 250;

/** Marks stale the queries a burst of events changes, each once, at most once per GATHER_MS. */
function gathering(client: QueryClient): (type: string) => void {
  const pending = new Map<string, readonly string[]>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  return (type) => {
    for (const queryKey of affectedBy(type)) pending.set(queryKey.join('\u0000'), queryKey);
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      const keys = [...pending.values()];
      pending.clear();
      for (const queryKey of keys) void client.invalidateQueries({ queryKey: [...queryKey] });
    }, GATHER_MS);
  };
}

/** Keeps the stream open while the component that calls it (the signed-in shell) is shown. */
export function useLiveUpdates(enabled: boolean): void {
  const client = useQueryClient();
  useEffect(() => {
    if (!enabled || typeof EventSource === 'undefined') return;
    const source = new EventSource('/v2/portal/events');
    const refresh = gathering(client);
    const onEvent = (event: MessageEvent) => {
      liveState.received++;
      refresh(event.type);
    };
    source.onopen = () => {
      liveState.connected = true;
    };
    source.onerror = () => {
      liveState.connected = false;
    };
    for (const type of TYPES) source.addEventListener(type, onEvent);
    return () => {
      liveState.connected = false;
      source.close();
    };
  }, [client, enabled]);
}
