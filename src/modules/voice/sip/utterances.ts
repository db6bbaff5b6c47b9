// Where a caller's utterance begins and ends in the audio of a call, for an AI agent to take turns. Each 20 ms
// frame is voiced or not by the WebRTC voice activity detector (vad.ts). An utterance begins after a run of
// voiced frames (a click or a breath is not one) with a little of the audio before it (a soft first consonant
// is kept), and ends after a stretch of quiet whose length depends on what was heard (end-of-turn.ts: short
// after a complete sentence, longer after a filler or a short burst), or at a length limit. While the agent
// speaks, a caller who talks over it (barge-in) needs a longer voiced run to begin an utterance: a cough or an
// "mm-hm" is not a turn. Phones that stop sending packets in silence are ended by the caller of `quiet`.
import { concatenate, SAMPLE_RATE } from '../audio.ts';
import { endOfTurnSilenceMs, type TurnSoFar } from './end-of-turn.ts';
import { VAD_FRAME, type VadMode, VoiceActivityDetector } from './vad.ts';

const FRAME = VAD_FRAME; // 20 ms
const FRAME_MS = (FRAME * 1000) / SAMPLE_RATE;

export interface UtteranceOptions {
  /** Voiced audio that begins an utterance. */
  startMs: number;
  /** Voiced audio that begins one while the agent speaks (a barge-in). */
  bargeInMs: number;
  /** The longest utterance; longer ones are cut into several. */
  maxMs: number;
  /** Audio before the start kept with the utterance. */
  prerollMs: number;
  /** Quiet after the last voiced frame kept with the utterance (the rest of the end's silence is not). */
  tailMs: number;
  /** The quiet that ends the utterance so far. */
  endOfTurn: (turn: TurnSoFar) => number;
  vadMode: VadMode;
}

export const UTTERANCE_DEFAULTS: UtteranceOptions = {
  startMs: 60,
  bargeInMs: 200,
  maxMs: 30_000,
  prerollMs: 300,
  tailMs: 200,
  endOfTurn: endOfTurnSilenceMs,
  vadMode: 2,
};

/** An utterance heard whole. */
export interface Utterance {
  audio: Int16Array;
  /** Voiced audio in it. */
  speechMs: number;
  /** The quiet after its last voiced frame that ended it (the end-of-turn wait). */
  quietMs: number;
}

export class UtteranceDetector {
  private readonly options: UtteranceOptions;
  private readonly vad: VoiceActivityDetector;
  /** Samples not yet a whole frame. */
  private pending = new Int16Array(0);
  /** Recent frames before an utterance began (the pre-roll and the voiced run that may begin one). */
  private before: Int16Array[] = [];
  private voicedRun = 0;
  /** The utterance being heard: its frames, its voiced ones and the quiet frames since its last voiced one. */
  private current?: { frames: Int16Array[]; voiced: number; quiet: number };
  /** The agent is speaking: an utterance needs `bargeInMs` of voice to begin. */
  agentSpeaking = false;
  /** The words recognised so far in the utterance being heard (a streaming recogniser's partial result). */
  partial?: string;
  /** An utterance has begun (a barge-in, when the agent is speaking). */
  onStart?: () => void;
  /** The audio of an utterance as it is heard: at its start, all of it so far (the pre-roll included), then
   * each frame (a recogniser running while the caller speaks is fed from here). */
  onAudio?: (samples: Int16Array) => void;

  constructor(options: Partial<UtteranceOptions> = {}) {
    this.options = { ...UTTERANCE_DEFAULTS, ...options };
    this.vad = new VoiceActivityDetector(this.options.vadMode);
  }

  /** Whether an utterance has begun and not ended. */
  get hearing(): boolean {
    return this.current !== undefined;
  }

  /** The caller's audio as it arrives; returns the utterances it completes (usually none, at most a few). */
  push(samples: Int16Array): Utterance[] {
    const joined = new Int16Array(this.pending.length + samples.length);
    joined.set(this.pending);
    joined.set(samples, this.pending.length);
    const done: Utterance[] = [];
    let offset = 0;
    for (; offset + FRAME <= joined.length; offset += FRAME) {
      const finished = this.frame(joined.slice(offset, offset + FRAME));
      if (finished) done.push(finished);
    }
    this.pending = joined.slice(offset);
    return done;
  }

  /** No audio arrives (a phone silent between words): the utterance being heard, if any, ends now. */
  quiet(quietMs = 0): Utterance | undefined {
    if (!this.current) return undefined;
    // What is left short of a frame belongs to the end of this utterance.
    this.current.frames.push(this.pending);
    if (this.pending.length > 0) this.onAudio?.(this.pending);
    this.pending = new Int16Array(0);
    return this.finish(quietMs);
  }

  /** Forgets everything heard (the agent speaks and the caller may not interrupt: what the line picks up is not a turn). */
  reset(): void {
    this.pending = new Int16Array(0);
    this.before = [];
    this.voicedRun = 0;
    this.current = undefined;
    this.partial = undefined;
  }

  /** The call is done with the detector. */
  close(): void {
    this.reset();
    this.vad.close();
  }

  private frame(frame: Int16Array): Utterance | undefined {
    const voiced = this.vad.voiced(frame);
    const ms = (frames: number) => frames * FRAME_MS;
    const current = this.current;
    if (current) {
      current.frames.push(frame);
      this.onAudio?.(frame);
      current.quiet = voiced ? 0 : current.quiet + 1;
      if (voiced) current.voiced++;
      const enough = this.options.endOfTurn({ speechMs: ms(current.voiced), partial: this.partial });
      if (current.quiet > 0 && ms(current.quiet) >= enough) return this.finish(ms(current.quiet));
      if (ms(current.frames.length) >= this.options.maxMs) return this.finish(ms(current.quiet));
      return undefined;
    }
    this.before.push(frame);
    this.voicedRun = voiced ? this.voicedRun + 1 : 0;
    const startMs = this.agentSpeaking ? this.options.bargeInMs : this.options.startMs;
    if (this.voicedRun > 0 && ms(this.voicedRun) >= startMs) {
      const keep = Math.ceil(this.options.prerollMs / FRAME_MS) + this.voicedRun;
      this.current = { frames: this.before.slice(-keep), voiced: this.voicedRun, quiet: 0 };
      this.before = [];
      this.voicedRun = 0;
      this.partial = undefined;
      this.onStart?.();
      this.onAudio?.(concatenate(...this.current.frames));
      return undefined;
    }
    const limit =
      Math.ceil(this.options.prerollMs / FRAME_MS) +
      Math.ceil(Math.max(this.options.startMs, this.options.bargeInMs) / FRAME_MS);
    if (this.before.length > limit) this.before.splice(0, this.before.length - limit);
    return undefined;
  }

  private finish(quietMs: number): Utterance {
    const { frames, voiced, quiet } = this.current!;
    this.current = undefined;
    this.partial = undefined;
    // The end's silence past `tailMs` is left out: the recogniser has less to go through.
    const drop = Math.max(0, quiet - Math.ceil(this.options.tailMs / FRAME_MS));
    const audio = concatenate(...frames.slice(0, frames.length - drop));
    return { audio, speechMs: voiced * FRAME_MS, quietMs };
  }
}
