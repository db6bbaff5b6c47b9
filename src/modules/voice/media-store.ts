// The SQL of voicemails, recordings and transcriptions. Lists and reads never select `audio`; only the audio
// endpoints do.
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';

export interface VoicemailRow {
  id: string;
  organization_id: string;
  call_id: string;
  extension_id: string | null;
  from_number: string;
  to_number: string;
  duration_seconds: number;
  voice: string;
  read: boolean;
  created_at: Date;
}

export interface RecordingRow {
  id: string;
  organization_id: string;
  call_id: string;
  duration_seconds: number;
  voice: string;
  created_at: Date;
}

export interface TranscriptionRow {
  id: string;
  organization_id: string;
  recording_id: string | null;
  voicemail_id: string | null;
  status: 'queued' | 'completed' | 'failed';
  text: string | null;
  engine: string;
  error: string | null;
  created_at: Date;
  completed_at: Date | null;
}

const VOICEMAIL_COLUMNS =
  'id, organization_id, call_id, extension_id, from_number, to_number, duration_seconds, voice, read, created_at';
const RECORDING_COLUMNS = 'id, organization_id, call_id, duration_seconds, voice, created_at';

type Listing<Row> = Pick<ListQuery<Row, unknown>, 'select' | 'from' | 'where' | 'params'>;

export class MediaStore {
  async insertVoicemail(
    db: Queryable,
    row: Omit<VoicemailRow, 'read'> & { audio: Buffer },
  ): Promise<VoicemailRow> {
    const [inserted] = await db.query<VoicemailRow>(
      `INSERT INTO voicemails (id, organization_id, call_id, extension_id, from_number, to_number,
                               duration_seconds, voice, audio, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
       RETURNING ${VOICEMAIL_COLUMNS}`,
      [
        row.id,
        row.organization_id,
        row.call_id,
        row.extension_id,
        row.from_number,
        row.to_number,
        row.duration_seconds,
        row.voice,
        row.audio,
        row.created_at,
      ],
    );
    return inserted!;
  }

  async insertRecording(db: Queryable, row: RecordingRow & { audio: Buffer }): Promise<RecordingRow> {
    const [inserted] = await db.query<RecordingRow>(
      `INSERT INTO recordings (id, organization_id, call_id, duration_seconds, voice, audio, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       RETURNING ${RECORDING_COLUMNS}`,
      [row.id, row.organization_id, row.call_id, row.duration_seconds, row.voice, row.audio, row.created_at],
    );
    return inserted!;
  }

  async findVoicemail(db: Queryable, organizationId: string, id: string): Promise<VoicemailRow | undefined> {
    const [row] = await db.query<VoicemailRow>(
      `SELECT ${VOICEMAIL_COLUMNS} FROM voicemails WHERE id = $1 AND organization_id = $2`,
      [id, organizationId],
    );
    return row;
  }

  async findRecording(db: Queryable, organizationId: string, id: string): Promise<RecordingRow | undefined> {
    const [row] = await db.query<RecordingRow>(
      `SELECT ${RECORDING_COLUMNS} FROM recordings WHERE id = $1 AND organization_id = $2`,
      [id, organizationId],
    );
    return row;
  }

  /** The audio of a voicemail or recording of the organization. */
  async audio(
    db: Queryable,
    table: 'voicemails' | 'recordings',
    organizationId: string,
    id: string,
  ): Promise<Buffer | undefined> {
    const [row] = await db.query<{ audio: Uint8Array }>(
      `SELECT audio FROM ${table} WHERE id = $1 AND organization_id = $2`,
      [id, organizationId],
    );
    return row ? Buffer.from(row.audio.buffer, row.audio.byteOffset, row.audio.byteLength) : undefined;
  }

  async setRead(db: Queryable, organizationId: string, id: string, read: boolean, now: Date) {
    const [row] = await db.query<VoicemailRow>(
      `UPDATE voicemails SET read = $3, updated_at = $4 WHERE id = $1 AND organization_id = $2
       RETURNING ${VOICEMAIL_COLUMNS}`,
      [id, organizationId, read, now],
    );
    return row;
  }

  /** Deletes a voicemail or recording (its transcriptions go with it); false when it is not there. */
  async remove(db: Queryable, table: 'voicemails' | 'recordings', organizationId: string, id: string) {
    const rows = await db.query(`DELETE FROM ${table} WHERE id = $1 AND organization_id = $2 RETURNING id`, [
      id,
      organizationId,
    ]);
    return rows.length > 0;
  }

  /** The call that made a deleted voicemail or recording stops naming it. */
  async forgetOnCall(db: Queryable, table: 'voicemails' | 'recordings', organizationId: string, id: string) {
    const field = table === 'voicemails' ? 'voicemail_id' : 'recording_id';
    await db.query(`UPDATE calls SET ${field} = NULL WHERE organization_id = $1 AND ${field} = $2`, [
      organizationId,
      id,
    ]);
  }

  voicemailList(organizationId: string): Listing<VoicemailRow> {
    return {
      select: VOICEMAIL_COLUMNS,
      from: 'voicemails',
      where: 'organization_id = $1',
      params: [organizationId],
    };
  }

  recordingList(organizationId: string): Listing<RecordingRow> {
    return {
      select: RECORDING_COLUMNS,
      from: 'recordings',
      where: 'organization_id = $1',
      params: [organizationId],
    };
  }

  transcriptionList(organizationId: string): Listing<TranscriptionRow> {
    return { select: '*', from: 'transcriptions', where: 'organization_id = $1', params: [organizationId] };
  }

  async insertTranscription(
    db: Queryable,
    row: Pick<
      TranscriptionRow,
      'id' | 'organization_id' | 'recording_id' | 'voicemail_id' | 'engine' | 'created_at'
    >,
  ): Promise<TranscriptionRow> {
    const [inserted] = await db.query<TranscriptionRow>(
      `INSERT INTO transcriptions (id, organization_id, recording_id, voicemail_id, status, engine, created_at)
       VALUES ($1, $2, $3, $4, 'queued', $5, $6) RETURNING *`,
      [row.id, row.organization_id, row.recording_id, row.voicemail_id, row.engine, row.created_at],
    );
    return inserted!;
  }

  async findTranscription(db: Queryable, organizationId: string, id: string) {
    const [row] = await db.query<TranscriptionRow>(
      'SELECT * FROM transcriptions WHERE id = $1 AND organization_id = $2',
      [id, organizationId],
    );
    return row;
  }

  /** A queued transcription with its audio, for the job that makes it; undefined once it is done or deleted. */
  async queuedTranscription(
    db: Queryable,
    id: string,
  ): Promise<(TranscriptionRow & { audio: Uint8Array }) | undefined> {
    const [row] = await db.query<TranscriptionRow & { audio: Uint8Array }>(
      `SELECT t.*, COALESCE(v.audio, r.audio) AS audio
         FROM transcriptions t
         LEFT JOIN voicemails v ON v.id = t.voicemail_id
         LEFT JOIN recordings r ON r.id = t.recording_id
        WHERE t.id = $1 AND t.status = 'queued'`,
      [id],
    );
    return row;
  }

  /** Completes or fails a queued transcription; undefined when it was not queued any more. */
  async finishTranscription(
    db: Queryable,
    id: string,
    result: { status: 'completed' | 'failed'; text: string | null; error: string | null },
    now: Date,
  ): Promise<TranscriptionRow | undefined> {
    const [row] = await db.query<TranscriptionRow>(
      `UPDATE transcriptions SET status = $2, text = $3, error = $4, completed_at = $5
        WHERE id = $1 AND status = 'queued' RETURNING *`,
      [id, result.status, result.text, result.error, now],
    );
    return row;
  }
}
