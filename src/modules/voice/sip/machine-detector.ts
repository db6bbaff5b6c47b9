// Answering machine detection on an outbound agent call, from the callee's audio as RTP brings it (8 kHz, 20 ms
// packets). The heuristic every carrier's AMD uses (Asterisk's AMD(), Twilio's AMD): a person answers with a
// short greeting ("Hello?", "Dr Smith's office") and then waits for us; a machine speaks a long greeting
// without waiting. So: speech that goes on past MACHINE_SPEECH_MS (pauses between words and sentences
// shorter than SPEECH_END_MS do not end it) is a machine; speech followed by SPEECH_END_MS of quiet is a
// person; nothing said within INITIAL_SILENCE_MS is unknown (the agent then talks, as to a person).
// Once a machine is heard, GreetingEnd waits for where a message is recorded from: the beep (a sustained pure
// tone: in each 20 ms frame one frequency between 400 and 2000 Hz carries most of the energy, the same one for
// BEEP_MS), heard to its end; a machine without a beep, after the greeting's last words and GREETING_SILENCE_MS
// of quiet.
import type { AnsweredBy } from '../pbx.ts';

const FRAME = 160; // 20 ms at 8 kHz
const FRAME_MS = 20;
/** RMS of a voiced frame, on 16-bit samples (as utterances.ts: about -36 dBFS). */
const VOICED_RMS = 500;
/** Voiced audio that counts as the start of speech (a click is not). */
const SPEECH_START_MS = 60;
export const MACHINE_SPEECH_MS = 2400;
export const SPEECH_END_MS = 1000;
export const INITIAL_SILENCE_MS = 5000;
/** A tone this long at one frequency is a beep (answering machines beep for 0.2 to 1 s). */
const BEEP_MS = 160;
/** Share of a frame's energy at one frequency that makes it a pure tone (speech is far below). */
const TONE_CONCENTRATION = 0.6;
/** How far two frames' strongest frequencies may be apart and still be one tone. */
const TONE_DRIFT_HZ = 60;
const BEEP_LOW_HZ = 400;
const BEEP_HIGH_HZ = 2000;
/** Frequencies probed for a beep: 20 Hz apart, so a tone is at most 10 Hz off one (a 0.9 share still). */
const PROBE_STEP_HZ = 20;
export const GREETING_SILENCE_MS = 1500;
/** The longest greeting we wait through for its beep or its end; then the message is left anyway. */
export const GREETING_MAX_MS = 30_000;

/** Something that listens to the callee's audio until it has decided. */
export interface GreetingListener<T> {
  /** A packet's samples; the decision once made. */
  push(samples: Int16Array): T | undefined;
  /** The phone has sent nothing for `quietMs` (phones that suppress silence): the decision, if that makes one. */
  quiet(): T | undefined;
  /** What the listener decides when time is up or the callee is gone. */
  giveUp(): T;
  readonly quietMs: number;
  readonly deadlineMs: number;
}

/** Human or machine, from the greeting's length (see the top of the file). */
export class MachineDetector implements GreetingListener<AnsweredBy> {
  readonly quietMs = SPEECH_END_MS;
  readonly deadlineMs = INITIAL_SILENCE_MS + MACHINE_SPEECH_MS;
  private readonly frames = new FrameCutter();
  private heardMs = 0;
  private voicedRunMs = 0;
  private quietRunMs = 0;
  /** From the first voiced frame of speech to now, pauses included. */
  private speechMs?: number;

  push(samples: Int16Array): AnsweredBy | undefined {
    for (const frame of this.frames.push(samples)) {
      this.heardMs += FRAME_MS;
      const voiced = rms(frame) >= VOICED_RMS;
      this.voicedRunMs = voiced ? this.voicedRunMs + FRAME_MS : 0;
      this.quietRunMs = voiced ? 0 : this.quietRunMs + FRAME_MS;
      if (this.speechMs === undefined) {
        if (this.voicedRunMs >= SPEECH_START_MS) this.speechMs = this.voicedRunMs;
        else if (this.heardMs >= INITIAL_SILENCE_MS) return 'unknown';
        continue;
      }
      this.speechMs += FRAME_MS;
      if (this.quietRunMs >= SPEECH_END_MS)
        return this.speechMs - this.quietRunMs < MACHINE_SPEECH_MS ? 'human' : 'machine';
      if (this.speechMs - this.quietRunMs >= MACHINE_SPEECH_MS) return 'machine';
    }
    return undefined;
  }

  quiet(): AnsweredBy | undefined {
    return this.speechMs === undefined ? undefined : 'human';
  }

  giveUp(): AnsweredBy {
    return 'unknown';
  }
}

/** Where a machine's greeting is over: its beep ended, or its words and then quiet. */
export class GreetingEnd implements GreetingListener<'beep' | 'silence' | 'timeout'> {
  readonly quietMs = GREETING_SILENCE_MS;
  readonly deadlineMs = GREETING_MAX_MS;
  private readonly frames = new FrameCutter();
  private quietRunMs = 0;
  private tone?: { hz: number; ms: number };
  private beeped = false;

  push(samples: Int16Array): 'beep' | 'silence' | undefined {
    for (const frame of this.frames.push(samples)) {
      const level = rms(frame);
      this.quietRunMs = level >= VOICED_RMS ? 0 : this.quietRunMs + FRAME_MS;
      const hz = level >= VOICED_RMS ? pureTone(frame) : undefined;
      if (hz !== undefined && this.tone && Math.abs(hz - this.tone.hz) <= TONE_DRIFT_HZ) {
        this.tone.ms += FRAME_MS;
      } else if (hz !== undefined) {
        this.tone = { hz, ms: FRAME_MS };
      } else {
        // The tone stopped: a beep long enough is over, and the machine records from now.
        if (this.beeped) return 'beep';
        this.tone = undefined;
      }
      if (this.tone && this.tone.ms >= BEEP_MS) this.beeped = true;
      if (!this.beeped && this.quietRunMs >= GREETING_SILENCE_MS) return 'silence';
    }
    return undefined;
  }

  quiet(): 'beep' | 'silence' {
    return this.beeped ? 'beep' : 'silence';
  }

  giveUp(): 'timeout' {
    return 'timeout';
  }
}

/**
 * The frequency between 400 and 2000 Hz that carries at least TONE_CONCENTRATION of `frame`'s energy, or
 * undefined: the Goertzel algorithm's power at each probed frequency, against the frame's energy (for a pure
 * tone at a probed frequency, 2|X|² / (N Σx²) is 1).
 */
export function pureTone(frame: Int16Array): number | undefined {
  let energy = 0;
  for (const sample of frame) energy += sample * sample;
  if (energy === 0) return undefined;
  let best = 0;
  let bestHz = 0;
  for (let hz = BEEP_LOW_HZ; hz <= BEEP_HIGH_HZ; hz += PROBE_STEP_HZ) {
    const coefficient = 2 * Math.cos((2 * Math.PI * hz) / 8000);
    let previous = 0;
    let beforePrevious = 0;
    for (const sample of frame) {
      const next = sample + coefficient * previous - beforePrevious;
      beforePrevious = previous;
      previous = next;
    }
    const power =
      previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious;
    if (power > best) {
      best = power;
      bestHz = hz;
    }
  }
  return (2 * best) / (frame.length * energy) >= TONE_CONCENTRATION ? bestHz : undefined;
}

/**
 * Runs `listener` on the audio `tap` hands it until it decides, the phone has been quiet for its `quietMs`,
 * its deadline passes or `gone` says the callee hung up.
 */
export function listenUntilDecided<T>(
  listener: GreetingListener<T>,
  tap: (hear: ((samples: Int16Array) => void) | undefined) => void,
  onGone: (stop: () => void) => void,
): Promise<T> {
  return new Promise((resolve) => {
    let quietTimer: NodeJS.Timeout | undefined;
    const finish = (decision: T) => {
      clearTimeout(quietTimer);
      clearTimeout(deadline);
      tap(undefined);
      resolve(decision);
    };
    const restartQuiet = () => {
      clearTimeout(quietTimer);
      quietTimer = setTimeout(() => {
        const decision = listener.quiet();
        if (decision !== undefined) finish(decision);
      }, listener.quietMs);
      quietTimer.unref();
    };
    const deadline = setTimeout(() => finish(listener.giveUp()), listener.deadlineMs);
    deadline.unref();
    tap((samples) => {
      const decision = listener.push(samples);
      if (decision !== undefined) finish(decision);
      else restartQuiet();
    });
    onGone(() => finish(listener.giveUp()));
  });
}

/** Cuts packets of any length into 20 ms frames. */
class FrameCutter {
  private pending = new Int16Array(0);

  push(samples: Int16Array): Int16Array[] {
    const all = new Int16Array(this.pending.length + samples.length);
    all.set(this.pending);
    all.set(samples, this.pending.length);
    const frames: Int16Array[] = [];
    let at = 0;
    for (; at + FRAME <= all.length; at += FRAME) frames.push(all.subarray(at, at + FRAME));
    this.pending = all.slice(at);
    return frames;
  }
}

function rms(frame: Int16Array): number {
  let sum = 0;
  for (const sample of frame) sum += sample * sample;
  return Math.sqrt(sum / frame.length);
}
