// The voice module's metrics (docs/operations.md): calls live and ended, SIP registrations and SIP messages.
// Live calls and registrations are read from their tables at scrape time (every instance sees the same
// numbers: they are the database's); ends and messages are counted by the instance that saw them.
import type { Meter } from '../../platform/metrics/index.ts';
import type { EndStatus } from './call-states.ts';
import type { CallStore } from './call-store.ts';
import type { SipMessageCount } from './sip/listener.ts';
import type { Registrar } from './sip/registrar.ts';

export interface VoiceMetrics {
  callEnded(status: EndStatus): void;
  sipMessage(message: SipMessageCount): void;
}

export function voiceMetrics(
  meter: Meter,
  parts: { db: Parameters<CallStore['liveByStatus']>[0]; calls: () => CallStore; registrar: () => Registrar },
): VoiceMetrics {
  meter.readings({
    gauges: [
      { name: 'comms_calls_active', help: 'Calls not ended yet, by status', labels: ['status'] },
      {
        name: 'comms_sip_registrations',
        help: 'Live SIP registrations (bindings of a phone to an extension)',
      },
      { name: 'comms_sip_registered_extensions', help: 'Extensions with at least one registered phone' },
    ],
    read: async () => {
      const [live, registered] = await Promise.all([
        parts.calls().liveByStatus(parts.db),
        parts.registrar().activeRegistrations(),
      ]);
      const byStatus = new Map(live.map((row) => [row.status, row.calls]));
      return {
        comms_calls_active: ['queued', 'ringing', 'in_progress'].map((status) => ({
          labels: { status },
          value: byStatus.get(status) ?? 0,
        })),
        comms_sip_registrations: [{ value: registered.bindings }],
        comms_sip_registered_extensions: [{ value: registered.extensions }],
      };
    },
  });
  const ended = meter.counter({
    name: 'comms_calls_ended_total',
    help: 'Calls ended, by outcome (their end status: completed, busy, no_answer, failed, canceled, …)',
    labels: ['outcome'],
  });
  const messages = meter.counter({
    name: 'comms_sip_messages_total',
    help: 'SIP messages received (in) and sent (out), retransmissions included, by method and status class',
    labels: ['direction', 'method', 'status_class'],
  });
  return {
    callEnded: (status) => ended.inc({ outcome: status }),
    sipMessage: ({ direction, method, statusClass }) =>
      messages.inc({ direction, method, status_class: statusClass }),
  };
}
