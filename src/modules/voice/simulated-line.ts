// A call flow's line on the simulated PBX (CallerLine, pbx.ts): nothing is played to anyone; each step takes
// the time it would take on a phone, or none, by who decides what happens (simulated-pbx.ts):
// A record step keeps what the script's caller says (`speech`, synthesised as a recorded call's is: audio.ts)
// for as long as it lasted: until its finish key (the test control's `digits`), its maxSeconds on the clock,
// or the caller hanging up. Words for a speech gather come from the test control (`speech`: LineSteps.heard).
//   auto     say, play and pause take their time on timers (say about 70 ms a character, as espeak-ng speaks;
//            play the audio's length times its loops; pause its seconds); a gather times out, since nobody
//            presses keys (its prompt takes its time first).
//   manual   (APP_ENV=test) say, play and pause end at once, so a flow runs to its next gather (or ring, or end)
//            without a test sleeping; a gather waits for the test control's `digits` (or `completed`), or its
//            timeout on the platform's clock, which a test moves (POST /admin/v1/test/clock) instead of waiting.
//            Taking a step's time here would make every flow test as slow as its prompts and tie its result to
//            the machine's speed; what a test of a flow checks is the order of steps and what the keys chose.
//   instant  a scripted call played through at once: steps take no real time but move the script's own clock,
//            and a gather, with nobody to press keys, times out at once (after the keys typed ahead).
// A media stream (`stream`) runs in real time in every play, as its app does: each 20 ms the simulated caller
// sends a frame of silence (nobody speaks on a simulated call) and the frame the app queued is taken (and
// heard by nobody), so marks come back as on a phone; keys come from the test control's `digits`, and the
// stream waits for its app to close it or for the test control's `completed` (the caller hanging up).
// The rules of steps and keys are line-steps.ts's, the same as the SIP PBX's.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../../platform/clock.ts';
import { recordedAudio, SAMPLE_RATE } from './audio.ts';
import { clockTime, type LineMedia, type LineTime } from './line-media.ts';
import { LineSteps } from './line-steps.ts';
import { STREAM_FRAME_BYTES } from './pbx.ts';
import { MULAW_SILENCE } from './stream-playback.ts';

/** espeak-ng's pace: about 15 characters a second. */
const SPEECH_SECONDS_PER_CHARACTER = 0.07;
/** A media stream's frame time. */
const STREAM_FRAME_MS = 20;
/** The longest a simulated say lasts (espeak-ng's longest text takes longer, but no flow should). */
const LONGEST_SAY_SECONDS = 60;

export type LinePlay = 'auto' | 'manual' | 'instant';

export interface SimulatedLineOptions {
  clock: Clock;
  play: LinePlay;
  /** `instant`: the script's clock, and moving it on by a step's seconds. */
  script?: { now(): Date; elapse(seconds: number): void };
  /** A gather or a record starts waiting for the caller (the PBX's test control may then drive it); returns its end. */
  onGather?: () => () => void;
  /** A media stream starts (the test control's `completed` may then end the call); returns its end. */
  onStream?: () => () => void;
  /** Each text the line speaks, as it starts (what a test reads back: SimulatedPbx.said). */
  onSay?: (text: string) => void;
  /** What the script's caller says into a record step. */
  speech?: () => string | undefined;
}

/** The seconds a step would take on a phone. */
export function sayingSeconds(text: string): number {
  return Math.min(LONGEST_SAY_SECONDS, text.length * SPEECH_SECONDS_PER_CHARACTER);
}

export function simulatedLine(options: SimulatedLineOptions): LineSteps {
  const time = lineTime(options);
  const take = stepTime(options, time);
  const media: LineMedia = {
    answer: async () => {},
    say: (text, _voice, signal) => {
      options.onSay?.(text);
      return take(sayingSeconds(text), signal);
    },
    play: (audio, loop, signal) => take((audio.length / SAMPLE_RATE) * loop, signal),
    pause: (seconds, signal) => take(seconds, signal),
    stream: async (io, signal) => {
      const stopWaiting = options.onStream?.();
      const silent = new Uint8Array(STREAM_FRAME_BYTES).fill(MULAW_SILENCE);
      try {
        while (!signal.aborted) {
          io.heard(silent);
          io.next();
          await sleep(STREAM_FRAME_MS, undefined, { signal }).catch(() => undefined);
        }
      } finally {
        stopWaiting?.();
      }
    },
    record: async (signal) => {
      const started = time.now();
      if (!signal.aborted)
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      const seconds = (time.now().getTime() - started.getTime()) / 1000;
      return recordedAudio({ text: options.speech?.(), seconds });
    },
    close: () => {},
  };
  return new LineSteps(media, time, { onGather: options.onGather });
}

/**
 * What the simulated PBX's test control reaches while a gather waits (a waiter of step `gather`): `digits`
 * go to the line by the PBX's own path; `completed` is the caller hanging up, the API's hang-up the call's.
 */
export function keysWaiter(line: LineSteps, step: 'gather' | 'stream' = 'gather') {
  return {
    step,
    deliver: async (_completed: string, at: Date) => line.hungUp('normal_clearing', at),
    hangup: (at: Date, cause: string) => line.hungUp(cause, at),
  };
}

/** How long a step lasts in each play: its seconds on the clock, none, or the script's. */
function stepTime(
  options: SimulatedLineOptions,
  time: LineTime,
): (seconds: number, signal: AbortSignal) => Promise<void> {
  if (options.play === 'manual') return async () => {};
  if (options.play === 'instant') return async (seconds) => options.script?.elapse(seconds);
  return (seconds, signal) =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const cancel = time.after(seconds, () => {
        signal.removeEventListener('abort', aborted);
        resolve();
      });
      const aborted = () => {
        cancel();
        resolve();
      };
      signal.addEventListener('abort', aborted, { once: true });
    });
}

function lineTime(options: SimulatedLineOptions): LineTime {
  const onClock = clockTime(options.clock);
  const script = options.script;
  if (options.play !== 'instant' || !script) return onClock;
  return {
    now: () => script.now(),
    // Nobody presses keys in a script: the silence passes at once, on the script's clock.
    after: (seconds, then) => {
      let canceled = false;
      queueMicrotask(() => {
        if (canceled) return;
        script.elapse(seconds);
        then();
      });
      return () => {
        canceled = true;
      };
    },
  };
}
