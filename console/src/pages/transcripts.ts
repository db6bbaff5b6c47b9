// Transcriptions by what they transcribe: the voicemail and recording pages show each one's text beside it.
import { useQuery } from '@tanstack/react-query';
import { page } from '../api.ts';
import type { Item } from '../shapes.ts';

export type Transcription = Item<'/v2/portal/transcriptions'>;

/** The latest 100 transcriptions, polled while one is still queued. */
export function useTranscriptions() {
  return useQuery({
    queryKey: ['transcriptions'],
    queryFn: async () => (await page<Transcription>('/v2/portal/transcriptions?limit=100')).data,
    refetchInterval: (query) => (query.state.data?.some((t) => t.status === 'queued') ? 3_000 : false),
  });
}

export function transcriptOf(
  list: Transcription[] | undefined,
  match: (t: Transcription) => boolean,
): string {
  const found = list?.find(match);
  if (!found) return '—';
  if (found.status === 'queued') return 'Transcribing…';
  if (found.status === 'failed') return 'Transcription failed';
  return found.text || '(no words heard)';
}
