// The reply box of a thread: the text (with the server's live segment count and merge variables, filled from
// the contact), MMS by hosted URLs and/or uploaded files. Ctrl+Enter (⌘+Enter) sends. The reply goes out from
// the thread's number to its phone through the same rules as any send; a refusal shows the server's message.
import { useRef, useState } from 'react';
import { data } from '../api.ts';
import { Field, MutationForm, useAction } from '../ui.tsx';
import { MergeVariables, mediaFilesOf, SegmentCounter } from './compose.tsx';

export function Reply({ path }: { path: string }) {
  const [body, setBody] = useState('');
  const box = useRef<HTMLDivElement>(null);
  const send = useAction(
    async (form) => {
      const urls = String(form.get('mediaUrls') ?? '')
        .split(/\s+/)
        .filter(Boolean);
      return data<{ id: string; status: string }>('POST', `${path}/messages`, {
        message: body === '' ? undefined : body,
        mediaUrls: urls.length ? urls : undefined,
        mediaFiles: await mediaFilesOf(form),
      });
    },
    [['conversations'], ['messages']],
    () => {
      setBody('');
      box.current?.querySelector('form')?.reset();
    },
  );
  return (
    <div ref={box} className="reply">
      <MutationForm mutation={send} label="Send a reply" submit="Send reply">
        <label htmlFor="inbox-reply">Reply</label>
        <textarea
          id="inbox-reply"
          name="message"
          rows={3}
          value={body}
          aria-describedby="inbox-reply-hint"
          onChange={(event) => setBody(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
              event.preventDefault();
              event.currentTarget.form?.requestSubmit();
            }
          }}
        />
        <small id="inbox-reply-hint">
          <MergeVariables onPick={(variable) => setBody(`${body}${variable}`)} /> · Ctrl+Enter sends
        </small>
        <SegmentCounter body={body} testId="reply-segment-counter" />
        <details>
          <summary>Pictures or files (MMS)</summary>
          <Field label="Media URLs" hint="https addresses, separated by spaces or lines">
            {(id, hint) => <textarea id={id} name="mediaUrls" rows={2} aria-describedby={hint} />}
          </Field>
          <Field label="Files">
            {(id) => (
              <input id={id} name="media" type="file" multiple accept="image/*,video/*,audio/*,.pdf,.vcf" />
            )}
          </Field>
        </details>
      </MutationForm>
    </div>
  );
}
