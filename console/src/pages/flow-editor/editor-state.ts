// The state a page holding a step editor keeps (the call flow editor, a queue's onTimeout steps): which fields
// were touched, whether a save was tried, and the server's refusal of the last one, placed at the field it names
// (`data.path` of a 400 INVALID_FLOW_STEP) and given the focus, so a person sees what to fix where it is.
import { useEffect, useState } from 'react';
import { ApiProblem } from '../../api.ts';
import { type EditorState, usePickers } from './fields.tsx';
import { normalPath } from './model.ts';
import type { Problems } from './validate.ts';

export interface EditorControl {
  state: EditorState;
  /** Call before saving: false (and every problem shown, the first focused) when the editor found some. */
  ready: () => boolean;
  /** Call with a save's error: a refusal naming a field's path is shown at that field. */
  refused: (error: unknown) => void;
  /** Call when the steps change: the server's refusal was about what they were. */
  changed: () => void;
}

function focusPath(path: string): void {
  const escaped = CSS.escape(path);
  const field = document.querySelector<HTMLElement>(`[data-path="${escaped}"]`);
  if (field) {
    field.focus();
    field.scrollIntoView({ block: 'center' });
    return;
  }
  document.querySelector<HTMLElement>(`[data-step-path="${escaped}"]`)?.scrollIntoView({ block: 'center' });
}

export function useEditorState(problems: Problems, options: { readOnly: boolean; selfId?: string }) {
  const [touched, setTouched] = useState<ReadonlySet<string>>(new Set());
  const [submitted, setSubmitted] = useState(false);
  const [server, setServer] = useState<{ path: string; message: string }>();
  const [focus, setFocus] = useState<{ path?: string; at: number }>();
  const pickers = usePickers();

  // After the render that shows the problems: focus the field named, else the first field marked invalid.
  useEffect(() => {
    if (!focus) return;
    if (focus.path) focusPath(focus.path);
    else document.querySelector<HTMLElement>('[data-path][aria-invalid="true"]')?.focus();
  }, [focus]);

  const state: EditorState = {
    problems,
    server,
    shown: (path) => submitted || touched.has(path),
    touch: (path) => {
      if (!touched.has(path)) setTouched((current) => new Set(current).add(path));
    },
    pickers,
    selfId: options.selfId,
    readOnly: options.readOnly,
  };

  const control: EditorControl = {
    state,
    ready: () => {
      setSubmitted(true);
      setServer(undefined);
      if (problems.size === 0) return true;
      setFocus({ at: Date.now() });
      return false;
    },
    refused: (error) => {
      const path =
        error instanceof ApiProblem ? (error.data as { path?: unknown } | undefined)?.path : undefined;
      if (error instanceof ApiProblem && typeof path === 'string') {
        // The message starts with the path; at the field, its label says where instead.
        const message = error.message.startsWith(`${path} `)
          ? error.message.slice(path.length + 1)
          : error.message;
        const normal = normalPath(path);
        setServer({ path: normal, message });
        setFocus({ path: normal, at: Date.now() });
      }
    },
    changed: () => setServer(undefined),
  };
  return control;
}
