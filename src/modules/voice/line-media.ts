// A call flow's line, the parts both PBXs share with its rules (line-steps.ts): the line's states and the table
// of its moves, what a PBX provides to make steps heard (LineMedia), and the line's clock (LineTime): the
// platform clock, or a script's own in an instant simulated call.
import type { Clock } from '../../platform/clock.ts';
import type { CallAudio } from './pbx.ts';

export type LineState =
  /** Answered, no step in progress. */
  | 'idle'
  /** say, play or pause in progress. */
  | 'sounding'
  /** A gather's prompt plays; the first key stops it. */
  | 'prompting'
  /** A gather waits for keys or words (its timeout runs). */
  | 'collecting'
  /** A media stream runs: the caller's audio and keys go to it, its app's audio to the caller. */
  | 'streaming'
  /** A record step keeps the caller's audio. */
  | 'recording'
  /** The caller hung up, or the API hung up: every step now ends `hangup` at once. */
  | 'gone'
  /** The flow let the line go (close): steps are refused. */
  | 'closed';

export type LineEvent = 'sound' | 'prompt' | 'collect' | 'stream' | 'record' | 'finish' | 'hangup' | 'close';

export const TRANSITIONS: Record<LineState, Partial<Record<LineEvent, LineState>>> = {
  idle: {
    sound: 'sounding',
    prompt: 'prompting',
    collect: 'collecting',
    stream: 'streaming',
    record: 'recording',
    hangup: 'gone',
    close: 'closed',
  },
  recording: { finish: 'idle', hangup: 'gone', close: 'closed' },
  sounding: { finish: 'idle', hangup: 'gone', close: 'closed' },
  prompting: { collect: 'collecting', finish: 'idle', hangup: 'gone', close: 'closed' },
  collecting: { finish: 'idle', hangup: 'gone', close: 'closed' },
  streaming: { finish: 'idle', hangup: 'gone', close: 'closed' },
  gone: { close: 'closed' },
  closed: {},
};

/** How a PBX makes the steps heard. Each resolves when done, or soon after `signal` aborts. */
export interface LineMedia {
  /** Before every step: the caller answered with the PBX's media (once; rejects when it cannot be). */
  answer(): Promise<void>;
  say(text: string, options: { voice?: string; language?: string }, signal: AbortSignal): Promise<void>;
  play(audio: Int16Array, loop: number, signal: AbortSignal): Promise<void>;
  pause(seconds: number, signal: AbortSignal): Promise<void>;
  /**
   * A media stream: every 20 ms the PBX plays `io.next()` (silence, or nothing, when it is undefined) and hands
   * the caller's audio to `io.heard` as it arrives (8 kHz µ-law), until `signal` aborts.
   */
  stream(io: StreamIo, signal: AbortSignal): Promise<void>;
  /** Keeps the caller's audio from now until `signal` aborts. */
  record(signal: AbortSignal): Promise<CallAudio>;
  /**
   * Listens for the caller's words (a speech gather, once its prompt has ended): `started` when an utterance
   * begins, `heard` with its transcript when it ends ('' when nothing was recognised). Returns its stop.
   * Absent: the PBX hears words only from elsewhere (the simulated PBX's test control: LineSteps.heard).
   */
  listen?(hooks: { started(): void; heard(text: string): void }): () => void;
  /** The line is let go: its media released. */
  close(): Promise<void> | void;
}

/** What a PBX's media exchanges with a media stream (LineMedia.stream). */
export interface StreamIo {
  heard(mulaw: Uint8Array): void;
  next(): Uint8Array | undefined;
}

/** The line's time: now, and a timer that fires `seconds` from now (returns its cancel). */
export interface LineTime {
  now(): Date;
  after(seconds: number, then: () => void): () => void;
}

/**
 * Time on the platform's clock: a timer fires when the clock reads its deadline, by real time passing or by a
 * test moving the clock (APP_ENV=test), so a test sees a gather time out without sleeping through it.
 */
export function clockTime(clock: Clock): LineTime {
  return {
    now: () => clock.now(),
    after: (seconds, then) => {
      const deadline = clock.nowMs() + seconds * 1000;
      let timer: NodeJS.Timeout | undefined;
      let stopped = false;
      const stop = () => {
        stopped = true;
        clearTimeout(timer);
        unlisten();
      };
      const check = () => {
        clearTimeout(timer);
        if (stopped) return;
        const left = deadline - clock.nowMs();
        if (left <= 0) {
          stop();
          then();
          return;
        }
        // A frozen clock does not reach the deadline by real time: the timer re-checks and waits again.
        timer = setTimeout(check, left);
        timer.unref();
      };
      const unlisten = clock.onMove(check);
      check();
      return stop;
    },
  };
}
