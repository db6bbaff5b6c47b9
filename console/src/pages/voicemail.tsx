// The voicemail inbox: each message with an audio player, its transcription, read/unread; owners and admins
// also delete (docs/auth.md: the same roles delete voicemails and recordings).
import { call } from '../api.ts';
import { canManage, useMe } from '../session.ts';
import type { Item } from '../shapes.ts';
import { ActionButton, AudioPlayer, PagedTable, PageHeader, usePagedList, when } from '../ui.tsx';
import { transcriptOf, useTranscriptions } from './transcripts.ts';

type Voicemail = Item<'/v2/portal/voicemails'>;

export default function VoicemailInbox() {
  const manager = canManage(useMe().data);
  const list = usePagedList<Voicemail>(['voicemails'], '/v2/portal/voicemails', 'offset');
  const transcriptions = useTranscriptions();
  return (
    <>
      <PageHeader title="Voicemail" />
      <PagedTable
        list={list}
        caption="Voicemail"
        empty="No voicemail."
        columns={[
          {
            header: 'When',
            cell: (v) => (v.read ? when(v.createdAt) : <strong>{when(v.createdAt)} (new)</strong>),
          },
          { header: 'From', cell: (v) => v.from },
          { header: 'Length', cell: (v) => `${v.durationSeconds} s` },
          {
            header: 'Listen',
            cell: (v) => (
              <AudioPlayer
                src={`/v2/portal/voicemails/${encodeURIComponent(v.id)}/audio`}
                label={`Voicemail from ${v.from}`}
              />
            ),
          },
          {
            header: 'Transcription',
            cell: (v) => transcriptOf(transcriptions.data, (t) => t.voicemailId === v.id),
          },
          {
            header: '',
            cell: (v) => (
              <div className="row-actions">
                <ActionButton
                  label={v.read ? 'Mark unread' : 'Mark read'}
                  className="secondary outline"
                  run={() =>
                    call('PATCH', `/v2/portal/voicemails/${encodeURIComponent(v.id)}`, { read: !v.read })
                  }
                  invalidate={[['voicemails']]}
                />
                {manager ? (
                  <ActionButton
                    label="Delete"
                    className="secondary outline"
                    confirm="Delete this voicemail?"
                    run={() => call('DELETE', `/v2/portal/voicemails/${encodeURIComponent(v.id)}`)}
                    invalidate={[['voicemails']]}
                  />
                ) : null}
              </div>
            ),
          },
        ]}
      />
    </>
  );
}
