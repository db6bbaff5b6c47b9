// What calls leave behind: voicemails, recordings, and their transcriptions. A voicemail or recording is
// stored with its call's end, in that transaction, with its event; when the server has a transcription engine
// (transcribers.ts) a transcription is queued beside it and made by the `voice.transcribe` job, which names
// the engine in the record. Without an engine none is made: a transcription is never invented.
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import type { Job, JobQueue } from '../../platform/jobs.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import type { CallRow } from './call-store.ts';
import { RecordingCompleted, TranscriptionCompleted, VoicemailCreated } from './events.ts';
import { MediaStore, type RecordingRow, type TranscriptionRow, type VoicemailRow } from './media-store.ts';
import type { CallAudio } from './pbx.ts';
import type { PublicRecording, PublicTranscription, PublicVoicemail } from './schemas.ts';
import { deferredStream, type SpeechStream } from './speech-stream.ts';
import { type Transcriber, TranscriptionError, type TranscriptionHints } from './transcribers.ts';

export const TRANSCRIBE_QUEUE = 'voice.transcribe';

export class CallMedia {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly events: EventOutbox;
  private readonly jobs: JobQueue;
  private readonly transcriber: () => Promise<Transcriber | undefined>;
  readonly store = new MediaStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    pagination: Paginator;
    events: EventOutbox;
    jobs: JobQueue;
    /** The engine, found once (looking for pocketsphinx runs a program). */
    transcriber: () => Promise<Transcriber | undefined>;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
    this.events = deps.events;
    this.jobs = deps.jobs;
    this.transcriber = deps.transcriber;
  }

  /** Stores the voicemail a caller left on `call`, in the transaction that ends the call. */
  async addVoicemail(
    tx: Queryable,
    call: CallRow,
    extensionId: string,
    audio: CallAudio,
    at: Date,
  ): Promise<VoicemailRow> {
    const row = await this.store.insertVoicemail(tx, {
      id: newId('vm', at.getTime()),
      organization_id: call.organization_id,
      call_id: call.id,
      extension_id: extensionId,
      from_number: call.from_number,
      to_number: call.to_number,
      duration_seconds: audio.durationSeconds,
      voice: audio.voice,
      audio: audio.wav,
      created_at: at,
    });
    await this.events.record(tx, VoicemailCreated, {
      organizationId: row.organization_id,
      data: toVoicemail(row),
    });
    await this.queueTranscription(tx, row.organization_id, { voicemail_id: row.id, recording_id: null }, at);
    return row;
  }

  /** Stores the recording of `call`, in the transaction that ends the call. */
  /**
   * The words in a WAV (a caller speaking to an AI agent), by the same engine as transcriptions; undefined
   * when no engine is configured or installed. `hints` (the agent's speech domain) help an engine that uses them.
   */
  async speechToText(wav: Buffer, hints?: TranscriptionHints): Promise<string | undefined> {
    const transcriber = await this.transcriber();
    return transcriber ? (await transcriber.transcribe(wav, hints)).trim() : undefined;
  }

  /**
   * Recognition while a caller speaks to an AI agent (speech-stream.ts), where the engine can; its end() is
   * undefined when it cannot (no engine, or one that hears whole utterances only: speechToText then).
   */
  speechStream(hints?: TranscriptionHints): SpeechStream {
    return deferredStream(this.transcriber().then((transcriber) => transcriber?.stream?.(hints)));
  }

  async addRecording(tx: Queryable, call: CallRow, audio: CallAudio, at: Date): Promise<RecordingRow> {
    const row = await this.store.insertRecording(tx, {
      id: newId('rec', at.getTime()),
      organization_id: call.organization_id,
      call_id: call.id,
      duration_seconds: audio.durationSeconds,
      voice: audio.voice,
      audio: audio.wav,
      created_at: at,
    });
    await this.events.record(tx, RecordingCompleted, {
      organizationId: row.organization_id,
      data: toRecording(row),
    });
    await this.queueTranscription(tx, row.organization_id, { voicemail_id: null, recording_id: row.id }, at);
    return row;
  }

  private async queueTranscription(
    tx: Queryable,
    organizationId: string,
    of: Pick<TranscriptionRow, 'voicemail_id' | 'recording_id'>,
    at: Date,
  ): Promise<void> {
    const transcriber = await this.transcriber();
    if (!transcriber) return;
    const row = await this.store.insertTranscription(tx, {
      id: newId('tr', at.getTime()),
      organization_id: organizationId,
      ...of,
      engine: transcriber.engine,
      created_at: at,
    });
    await this.jobs.enqueue(tx, TRANSCRIBE_QUEUE, { transcriptionId: row.id });
  }

  /**
   * The `voice.transcribe` job: hands the audio to the engine and keeps what it heard. An engine that is down
   * or busy (a retryable error) is tried again by the queue; one that refuses the audio fails the
   * transcription at once, with its reason kept (never shown: it may quote the engine's answer).
   */
  async transcribe(
    payload: { transcriptionId: string },
    job: Job<{ transcriptionId: string }>,
  ): Promise<void> {
    const row = await this.store.queuedTranscription(this.db, payload.transcriptionId);
    if (!row) return; // done already, or its audio was deleted
    const transcriber = await this.transcriber();
    let text: string;
    try {
      if (!transcriber || transcriber.engine !== row.engine) {
        throw new TranscriptionError(`The engine ${row.engine} is no longer configured`, false);
      }
      text = await transcriber.transcribe(
        Buffer.from(row.audio.buffer, row.audio.byteOffset, row.audio.byteLength),
      );
    } catch (error) {
      const retryable = !(error instanceof TranscriptionError) || error.retryable;
      if (retryable && job.attempts < job.maxAttempts) throw error;
      await this.finish(row.id, { status: 'failed', text: null, error: errorText(error) });
      return;
    }
    await this.finish(row.id, { status: 'completed', text: text.trim(), error: null });
  }

  private async finish(
    id: string,
    result: { status: 'completed' | 'failed'; text: string | null; error: string | null },
  ) {
    await this.db.transaction(async (tx) => {
      const row = await this.store.finishTranscription(tx, id, result, this.clock.now());
      if (row) {
        await this.events.record(tx, TranscriptionCompleted, {
          organizationId: row.organization_id,
          data: toTranscription(row),
        });
      }
    });
  }

  // The API

  voicemails(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.voicemails.list`,
      keyset: false,
      organizationId,
      ...this.store.voicemailList(organizationId),
      map: toVoicemail,
    });
  }

  async voicemail(organizationId: string, id: string): Promise<PublicVoicemail> {
    const row = await this.store.findVoicemail(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Voicemail');
    return toVoicemail(row);
  }

  async markVoicemail(organizationId: string, id: string, read: boolean): Promise<PublicVoicemail> {
    const row = await this.store.setRead(this.db, organizationId, id, read, this.clock.now());
    if (!row) throw ApiError.notFound('Voicemail');
    return toVoicemail(row);
  }

  recordings(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.recordings.list`,
      keyset: false,
      organizationId,
      ...this.store.recordingList(organizationId),
      map: toRecording,
    });
  }

  async recording(organizationId: string, id: string): Promise<PublicRecording> {
    const row = await this.store.findRecording(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Recording');
    return toRecording(row);
  }

  /** The WAV of a voicemail or recording. */
  async audio(kind: 'voicemails' | 'recordings', organizationId: string, id: string): Promise<Buffer> {
    const audio = await this.store.audio(this.db, kind, organizationId, id);
    if (!audio) throw ApiError.notFound(kind === 'voicemails' ? 'Voicemail' : 'Recording');
    return audio;
  }

  /**
   * Deletes a voicemail or recording with its transcriptions; the call that made it forgets it (its id would
   * lead nowhere).
   */
  async remove(kind: 'voicemails' | 'recordings', organizationId: string, id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      if (!(await this.store.remove(tx, kind, organizationId, id))) {
        throw ApiError.notFound(kind === 'voicemails' ? 'Voicemail' : 'Recording');
      }
      await this.store.forgetOnCall(tx, kind, organizationId, id);
    });
  }

  transcriptions(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.transcriptions.list`,
      keyset: false,
      organizationId,
      ...this.store.transcriptionList(organizationId),
      map: toTranscription,
    });
  }

  async transcription(organizationId: string, id: string): Promise<PublicTranscription> {
    const row = await this.store.findTranscription(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Transcription');
    return toTranscription(row);
  }
}

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 500);
}

export function toVoicemail(row: VoicemailRow): PublicVoicemail {
  return {
    id: row.id,
    callId: row.call_id,
    extensionId: row.extension_id,
    from: row.from_number,
    to: row.to_number,
    durationSeconds: row.duration_seconds,
    voice: row.voice,
    read: row.read,
    createdAt: row.created_at.toISOString(),
  };
}

export function toRecording(row: RecordingRow): PublicRecording {
  return {
    id: row.id,
    callId: row.call_id,
    durationSeconds: row.duration_seconds,
    voice: row.voice,
    createdAt: row.created_at.toISOString(),
  };
}

export function toTranscription(row: TranscriptionRow): PublicTranscription {
  return {
    id: row.id,
    recordingId: row.recording_id,
    voicemailId: row.voicemail_id,
    status: row.status,
    text: row.text,
    engine: row.engine,
    createdAt: row.created_at.toISOString(),
    completedAt: row.completed_at?.toISOString() ?? null,
  };
}
