// The end of a call, written once: its record (status, end time, duration, hang-up cause, the place it held
// given back), what it left behind (a voicemail, a recording) and call.completed, all in the caller's
// transaction so a call never shows ended without its event or its media. Also the call's public shape.
import type { Queryable } from '../../platform/db/index.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { EndStatus } from './call-states.ts';
import type { CallChange, CallRow, CallStore } from './call-store.ts';
import { CallCompleted } from './events.ts';
import type { CallMedia } from './media.ts';
import type { CallAudio } from './pbx.ts';
import type { PublicCall } from './schemas.ts';

/** How a call ended: its last status, when, and why (docs/voice.md "Hang-up causes"). */
export interface CallOutcome {
  status: EndStatus;
  at: Date;
  cause: string;
}

/** What a call leaves behind when it ends. */
export interface Leftovers {
  voicemail?: { audio: CallAudio; extensionId: string };
  recording?: CallAudio;
}

export class CallEnding {
  constructor(
    private readonly deps: {
      store: CallStore;
      media: CallMedia;
      events: EventOutbox;
      /** Counts a call ended, by its end status (comms_calls_ended_total). */
      countEnded?: (status: EndStatus) => void;
    },
  ) {}

  /**
   * Ends `current` on `tx`. Undefined when the call had ended already (the store changes only a live call):
   * nothing is written then, not even the event.
   */
  async write(
    tx: Queryable,
    current: CallRow,
    end: CallOutcome,
    left: Leftovers = {},
  ): Promise<CallRow | undefined> {
    const { store, media, events } = this.deps;
    const change: CallChange = {
      status: end.status,
      ended_at: end.at,
      hangup_cause: end.cause,
      lease_expires_at: null,
      duration_seconds: current.answered_at
        ? Math.max(0, Math.round((end.at.getTime() - current.answered_at.getTime()) / 1000))
        : 0,
    };
    if (left.voicemail) {
      const { audio, extensionId } = left.voicemail;
      change.voicemail_id = (await media.addVoicemail(tx, current, extensionId, audio, end.at)).id;
    }
    if (left.recording)
      change.recording_id = (await media.addRecording(tx, current, left.recording, end.at)).id;
    const row = await store.change(tx, current.id, change, end.at);
    if (row) {
      await events.record(tx, CallCompleted, { organizationId: row.organization_id, data: toCall(row) });
      this.deps.countEnded?.(end.status);
    }
    return row;
  }
}

export function toCall(row: CallRow): PublicCall {
  return {
    id: row.id,
    direction: row.direction,
    from: row.from_number,
    to: row.to_number,
    status: row.status,
    startedAt: row.started_at.toISOString(),
    answeredAt: row.answered_at?.toISOString() ?? null,
    endedAt: row.ended_at?.toISOString() ?? null,
    durationSeconds: row.duration_seconds,
    hangupCause: row.hangup_cause,
    extensionId: row.extension_id,
    agentId: row.agent_id,
    recordingId: row.recording_id,
    voicemailId: row.voicemail_id,
    transferredTo:
      row.transferred_to_type && row.transferred_to
        ? { type: row.transferred_to_type, target: row.transferred_to }
        : null,
    transferredAt: row.transferred_at?.toISOString() ?? null,
  };
}
