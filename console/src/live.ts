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

export function refreshFor(client: QueryClient, type: string): void {
  for (const queryKey of AFFECTED[type.split('.')[0]!] ?? []) {
    void client.invalidateQueries({ queryKey: [...queryKey] });
  }
}

/** Keeps the stream open while the component that calls it (the signed-in shell) is shown. */
export function useLiveUpdates(enabled: boolean): void {
  const client = useQueryClient();
  useEffect(() => {
    if (!enabled || typeof EventSource === 'undefined') return;
    const source = new EventSource('/v2/portal/events');
    const onEvent = (event: MessageEvent) => {
      liveState.received++;
      refreshFor(client, event.type);
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
