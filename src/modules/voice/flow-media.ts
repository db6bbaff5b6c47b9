// A call flow's steps that carry audio of their own (CONTRACT section 13): `play` (a recording of the
// organization by `audioId`, or a WAV fetched from `audioUrl` when the step runs), `play` as a gather's
// prompt, and `record` (the caller's audio kept as a recording of the call, and the flow goes on). Also how a
// gather's answer picks its branch: keys exactly, words by the rule of `branchFor`.
import { concatenate, decodeWav, MAX_SECONDS, SAMPLE_RATE, telephoneAudio } from './audio.ts';
import type { Ended, FlowControl, Run } from './flow-control.ts';
import type { FlowStep, GatherPromptStep, PlayStep, RecordStep } from './flows/index.ts';
import type { CallAudio, GatherPrompt, GatherResult } from './pbx.ts';

/** Seconds a record step records when it does not say. */
export const RECORD_DEFAULT_SECONDS = 120;

/**
 * Plays the step's audio `loop` times (the flow answers first, if it has not). Audio that cannot be had (a
 * URL that fails, times out, is too large or is not a WAV; a recording deleted since the flow was saved) skips
 * the step with a warning in the log: the caller hears the rest of the flow rather than lose the call.
 */
export async function play(flow: FlowControl, run: Run, step: PlayStep): Promise<Ended> {
  const audio = await audioOf(flow, run, step);
  if (!audio) return 'continue';
  const line = await flow.line(run);
  if (!line) return 'over';
  const result = await line.play(audio, { loop: step.loop });
  return result.kind === 'hangup' ? flow.callerGone(run, result) : 'continue';
}

/** What a gather plays while it waits: a say step's words, a play step's audio (skipped when not to be had). */
export async function gatherPrompt(
  flow: FlowControl,
  run: Run,
  prompt: GatherPromptStep | undefined,
): Promise<GatherPrompt | undefined> {
  if (!prompt) return undefined;
  if (prompt.type === 'say')
    return { text: prompt.text, voice: prompt.voice ?? prompt.language?.toLowerCase() };
  const audio = await audioOf(flow, run, prompt);
  if (!audio) return undefined;
  const loops = Math.max(1, prompt.loop ?? 1);
  // Played as one sound, so the first key stops it wherever it is; no longer than the longest audio.
  return {
    audio: concatenate(...Array.from({ length: loops }, () => audio)).subarray(0, MAX_SECONDS * SAMPLE_RATE),
  };
}

/**
 * Records the caller until the step's finish key, its maxSeconds or their hanging up; the audio becomes a
 * recording of the call (`recording.completed`, a transcription when the server has an engine, the call's
 * `recordingId`), and the flow goes on unless the caller hung up.
 */
export async function record(flow: FlowControl, run: Run, step: RecordStep): Promise<Ended> {
  const line = await flow.line(run);
  if (!line) return 'over';
  const result = await line.record({
    maxSeconds: step.maxSeconds ?? RECORD_DEFAULT_SECONDS,
    finishOnKey: step.finishOnKey,
  });
  if (result.audio) await keep(flow, run, result.audio);
  if (result.hangup) return flow.callerGone(run, result.hangup);
  return 'continue';
}

/**
 * The branch a gather's answer takes. Keys: the branch whose key is exactly the digits. Words: a branch whose
 * key's words all appear in what the caller said, compared without case or punctuation ("sales" matches "uh,
 * Sales please"; "billing department" needs both words); of several, the one with the most words, then the
 * first in the flow's order. Key branches are never matched by words.
 */
export function branchFor(
  branches: Record<string, FlowStep[]> | undefined,
  result: GatherResult,
): FlowStep[] | undefined {
  if (!branches) return undefined;
  if (result.kind === 'digits') return result.digits ? branches[result.digits] : undefined;
  if (result.kind !== 'speech') return undefined;
  const said = new Set(words(result.text));
  let best: { steps: FlowStep[]; size: number } | undefined;
  for (const [key, steps] of Object.entries(branches)) {
    if (/^[0-9*#]+$/.test(key)) continue;
    const wanted = words(key);
    if (wanted.length === 0 || !wanted.every((word) => said.has(word))) continue;
    if (!best || wanted.length > best.size) best = { steps, size: wanted.length };
  }
  return best?.steps;
}

/** A phrase's words: lower case, split on anything that is not a letter, a digit or an apostrophe. */
export function words(text: string): string[] {
  return text
    .toLocaleLowerCase('en')
    .split(/[^\p{L}\p{N}']+/u)
    .map((word) => word.replace(/^'+|'+$/g, ''))
    .filter((word) => word !== '');
}

/** The play step's audio at 8 kHz, or undefined (logged) when it cannot be had. */
async function audioOf(flow: FlowControl, run: Run, step: PlayStep): Promise<Int16Array | undefined> {
  const { db, media, audio, log } = flow.deps;
  try {
    if (step.audioId) {
      const wav = await media.store.audio(db, 'recordings', run.live.row.organization_id, step.audioId);
      if (!wav) throw new Error('the recording no longer exists');
      return telephoneAudio(decodeWav(wav));
    }
    return await audio.fetch(step.audioUrl!);
  } catch (error) {
    // The URL's host only: its path or query may carry the customer's token.
    const where = step.audioId ?? hostOf(step.audioUrl);
    log.warn(
      { callId: run.live.id, audio: where, reason: (error as Error).message },
      'call flow play step skipped: its audio could not be had',
    );
    return undefined;
  }
}

function hostOf(url: string | undefined): string | undefined {
  try {
    return url ? new URL(url).host : undefined;
  } catch {
    return undefined;
  }
}

/** A record step's audio as a recording of the call, which the call's record then names. */
async function keep(flow: FlowControl, run: Run, audio: CallAudio): Promise<void> {
  const { db, clock, media } = flow.deps;
  const at = clock.now();
  const row = run.live.row;
  const recording = await db.transaction((tx) => media.addRecording(tx, row, audio, at));
  await run.live.note({ recording_id: recording.id });
}
