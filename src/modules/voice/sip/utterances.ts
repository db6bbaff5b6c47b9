// Where a caller's utterance begins and ends in the audio of a call, for an AI agent to take turns: an energy
// detector, what telephone IVRs use. Audio is voiced when a 20 ms frame's RMS is above a threshold; an
// utterance begins after a run of voiced frames (a click or a breath is not one) with a little of the audio
// before it (a soft first consonant is kept), and ends after a stretch of quiet (a pause between words is
// not an end) or at a length limit. Phones that stop sending packets in silence (voice activity detection)
// are ended by the caller of `quiet`, on a timer.
import { concatenate, SAMPLE_RATE } from '../audio.ts';

const FRAME = SAMPLE_RATE / 50; // 20 ms

export interface UtteranceOptions {
  /** RMS of a voiced frame, on 16-bit samples. About -36 dBFS: speech on a phone line is far above it. */
  threshold: number;
  /** Voiced audio that begins an utterance. */
  startMs: number;
  /** Quiet that ends one. */
  endMs: number;
  /** The longest utterance; longer ones are cut into several. */
  maxMs: number;
  /** Audio before the start kept with the utterance. */
  prerollMs: number;
}

export const UTTERANCE_DEFAULTS: UtteranceOptions = {
  threshold: 500,
  startMs: 60,
  endMs: 800,
  maxMs: 30_000,
  prerollMs: 300,
};

export class UtteranceDetector {
  private readonly options: UtteranceOptions;
  /** Samples not yet a whole frame. */
  private pending = new Int16Array(0);
  /** Recent frames before an utterance began (the pre-roll and the voiced run that may begin one). */
  private before: Int16Array[] = [];
  private voicedRun = 0;
  /** The utterance being heard: its frames and the quiet frames since its last voiced one. */
  private current?: { frames: Int16Array[]; quiet: number };

  constructor(options: Partial<UtteranceOptions> = {}) {
    this.options = { ...UTTERANCE_DEFAULTS, ...options };
  }

  /** Whether an utterance has begun and not ended. */
  get hearing(): boolean {
    return this.current !== undefined;
  }

  /** The caller's audio as it arrives; returns the utterances it completes (usually none, at most a few). */
  push(samples: Int16Array): Int16Array[] {
    const joined = new Int16Array(this.pending.length + samples.length);
    joined.set(this.pending);
    joined.set(samples, this.pending.length);
    const done: Int16Array[] = [];
    let offset = 0;
    for (; offset + FRAME <= joined.length; offset += FRAME) {
      const finished = this.frame(joined.slice(offset, offset + FRAME));
      if (finished) done.push(finished);
    }
    this.pending = joined.slice(offset);
    return done;
  }

  /** No audio arrives (a phone silent between words): the utterance being heard, if any, ends now. */
  quiet(): Int16Array | undefined {
    if (!this.current) return undefined;
    // What is left short of a frame belongs to the end of this utterance.
    this.current.frames.push(this.pending);
    this.pending = new Int16Array(0);
    return this.finish();
  }

  /** Forgets everything heard (the agent speaks: what the line picks up meanwhile is not the caller's turn). */
  reset(): void {
    this.pending = new Int16Array(0);
    this.before = [];
    this.voicedRun = 0;
    this.current = undefined;
  }

  private frame(frame: Int16Array): Int16Array | undefined {
    const voiced = rms(frame) >= this.options.threshold;
    const ms = (frames: number) => (frames * FRAME * 1000) / SAMPLE_RATE;
    if (this.current) {
      this.current.frames.push(frame);
      this.current.quiet = voiced ? 0 : this.current.quiet + 1;
      if (
        ms(this.current.quiet) >= this.options.endMs ||
        ms(this.current.frames.length) >= this.options.maxMs
      ) {
        return this.finish();
      }
      return undefined;
    }
    this.before.push(frame);
    this.voicedRun = voiced ? this.voicedRun + 1 : 0;
    if (this.voicedRun > 0 && ms(this.voicedRun) >= this.options.startMs) {
      const keep = Math.ceil(this.options.prerollMs / ms(1)) + this.voicedRun;
      this.current = { frames: this.before.slice(-keep), quiet: 0 };
      this.before = [];
      this.voicedRun = 0;
      return undefined;
    }
    const limit = Math.ceil(this.options.prerollMs / ms(1)) + Math.ceil(this.options.startMs / ms(1));
    if (this.before.length > limit) this.before.splice(0, this.before.length - limit);
    return undefined;
  }

  private finish(): Int16Array {
    const frames = this.current!.frames;
    this.current = undefined;
    return concatenate(...frames);
  }
}

function rms(frame: Int16Array): number {
  let sum = 0;
  for (const sample of frame) sum += sample * sample;
  return Math.sqrt(sum / frame.length);
}
