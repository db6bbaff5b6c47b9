// What writing a text needs wherever it is written (Messages' compose, the inbox's reply): the server's own
// segment count as you type, the merge-variable buttons, and uploads read as base64 for `mediaFiles`.
import { useQuery } from '@tanstack/react-query';
import { useDeferredValue } from 'react';
import { data } from '../api.ts';

export const MERGE_VARIABLES = ['first_name', 'last_name', 'full_name', 'company', 'email', 'phone'];

export function readAsBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

/** A form's chosen files as the send's `mediaFiles`, or undefined when none was chosen. */
export async function mediaFilesOf(form: FormData, name = 'media') {
  const files = (form.getAll(name) as File[]).filter((file) => file.size > 0);
  const mediaFiles = await Promise.all(
    files.map(async (file) => ({
      contentType: file.type || 'application/octet-stream',
      data: await readAsBase64(file),
      filename: file.name,
    })),
  );
  return mediaFiles.length ? mediaFiles : undefined;
}

/** Characters, segments and encoding as the server counts them (it alone knows GSM-7 from UCS-2 for sure). */
export function SegmentCounter({ body, testId = 'segment-counter' }: { body: string; testId?: string }) {
  const deferred = useDeferredValue(body);
  const count = useQuery({
    queryKey: ['segments', deferred],
    queryFn: () =>
      data<{ segments: number; encoding: string; characters: number }>(
        'POST',
        '/v2/portal/messages/segments',
        {
          message: deferred,
        },
      ),
    enabled: deferred.length > 0,
    staleTime: Number.POSITIVE_INFINITY,
  });
  return (
    <p aria-live="polite" data-testid={testId} className="segment-counter">
      {body.length === 0
        ? 'Empty'
        : count.data
          ? `${count.data.characters} characters · ${count.data.segments} segment${count.data.segments === 1 ? '' : 's'} · ${count.data.encoding}`
          : 'Counting…'}
    </p>
  );
}

/** Buttons that append a merge variable to the text being written. */
export function MergeVariables({ onPick }: { onPick: (variable: string) => void }) {
  return (
    <>
      Merge variables:{' '}
      {MERGE_VARIABLES.map((name) => (
        <button
          key={name}
          type="button"
          className="secondary outline copy"
          onClick={() => onPick(`{{${name}}}`)}
        >
          {`{{${name}}}`}
        </button>
      ))}{' '}
      — a fallback: {'{{first_name|there}}'}
    </>
  );
}
