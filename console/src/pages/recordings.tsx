// Call recordings: play, read the transcription; owners and admins also delete (as voicemails).
import { call } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import type { Item } from '../shapes.ts';
import { ActionButton, AudioPlayer, PagedTable, PageHeader, usePagedList, when } from '../ui.tsx';
import { transcriptOf, useTranscriptions } from './transcripts.ts';

type Recording = Item<'/v2/portal/recordings'>;

export default function Recordings() {
  const manager = canManage(useMe().data);
  const list = usePagedList<Recording>(['recordings'], '/v2/portal/recordings', 'offset');
  const transcriptions = useTranscriptions();
  return (
    <>
      <PageHeader title="Recordings" />
      <PagedTable
        list={list}
        caption="Recordings"
        empty="No recordings."
        columns={[
          { header: 'When', cell: (r) => when(r.createdAt) },
          { header: 'Call', cell: (r) => <code>{r.callId}</code> },
          { header: 'Length', cell: (r) => `${r.durationSeconds} s` },
          {
            header: 'Listen',
            cell: (r) => (
              <AudioPlayer
                src={`/v2/portal/recordings/${encodeURIComponent(r.id)}/audio`}
                label={`Recording of call ${r.callId}`}
              />
            ),
          },
          {
            header: 'Transcription',
            cell: (r) => transcriptOf(transcriptions.data, (t) => t.recordingId === r.id),
          },
          {
            header: '',
            cell: (r) =>
              manager ? (
                <ActionButton
                  label="Delete"
                  className="secondary outline"
                  confirm="Delete this recording?"
                  run={() => call('DELETE', `/v2/portal/recordings/${encodeURIComponent(r.id)}`)}
                  invalidate={[['recordings']]}
                />
              ) : null,
          },
        ]}
      />
    </>
  );
}
