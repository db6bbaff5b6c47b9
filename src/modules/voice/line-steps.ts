// The life of a call flow's line (CallerLine, pbx.ts), the same on both PBXs: one step at a time; the caller's
// keys gathered by the rules pbx.ts states (a count, a finish key, silence after the prompt or the last key);
// the caller's words heard once a speech gather's prompt has ended (the PBX cuts and transcribes them, or the
// test control says them); a record step's audio kept until its finish key, its longest time or a hang-up;
// keys pressed while nothing gathers kept for the next gather (a caller who knows the menu types ahead); a key
// during a gather's prompt stops the prompt and counts (barge-in); the caller gone (or the API's hang-up) ends
// whatever is in progress. A media stream (`stream`) hands the caller's audio and keys to the stream and plays
// what its app queues (stream-playback.ts), until the stream ends or the caller goes. What a step sounds like
// and how long it takes belongs to the PBX (LineMedia): the simulated PBX takes a step's time or none
// (simulated-line.ts), the SIP PBX plays it into RTP (sip/caller-line.ts). Keeping the rules here means the
// two PBXs cannot disagree on what a gather returns.

import { type LineEvent, type LineMedia, type LineState, type LineTime, TRANSITIONS } from './line-media.ts';
import type {
  CallAudio,
  CallerLine,
  GatherPrompt,
  GatherResult,
  LineResult,
  LineStreamControl,
  LineStreamHandlers,
  RecordResult,
} from './pbx.ts';
import { StreamPlayback } from './stream-playback.ts';

/** The keys a caller can press: RFC 4733 events 0-15. */
export const KEYS = '0123456789*#ABCD';
/** Keys kept while nothing gathers; more are dropped (a stuck key must not grow memory without end). */
const MAX_TYPED_AHEAD = 64;
/** A gather without numDigits or finish key ends at this many keys. */
const MAX_GATHERED = 128;

type Hangup = Extract<LineResult, { kind: 'hangup' }>;
type GatherOptions = Parameters<CallerLine['gather']>[0];

const DONE: LineResult = { kind: 'done' };

export class LineSteps implements CallerLine {
  private state: LineState = 'idle';
  private typedAhead = '';
  /** The sound in progress (a step's, or a gather's prompt): aborted by a hang-up, a close or a barge-in. */
  private sound?: AbortController;
  private gathering?: {
    key(key: string): void;
    /** The caller began to speak: the silence timeout waits for their words. */
    speaking(): void;
    /** The caller's words ('' when nothing was recognised); false when this gather does not listen for them. */
    speech(text: string): boolean;
    end(result: GatherResult): void;
    /** Ends the gather with the keys it has. */
    stop(): void;
  };
  /** The media stream running: the caller's keys go to it. */
  private streaming?: LineStreamHandlers;
  /** A record step in progress: its finish key, and how it is stopped. */
  private recording?: { finishOnKey: string; stop(ended: RecordResult['ended']): void };
  private gone?: Hangup;
  private readonly goneSignal: Promise<Hangup>;
  private goneNow!: (hangup: Hangup) => void;

  constructor(
    private readonly media: LineMedia,
    private readonly time: LineTime,
    private readonly hooks: {
      /** A gather starts waiting for keys; the function it returns is called when it stops. */
      onGather?: () => () => void;
    } = {},
  ) {
    this.goneSignal = new Promise((resolve) => {
      this.goneNow = resolve;
    });
  }

  /** Whether steps may still be taken (neither closed nor hung up). */
  get open(): boolean {
    return this.state !== 'closed' && this.state !== 'gone';
  }

  get current(): LineState {
    return this.state;
  }

  say(text: string, options: { voice?: string; language?: string } = {}): Promise<LineResult> {
    return this.sounding((signal) => this.media.say(text, options, signal));
  }

  play(audio: Int16Array, options: { loop?: number } = {}): Promise<LineResult> {
    const loop = Math.max(1, Math.floor(options.loop ?? 1));
    return this.sounding((signal) => this.media.play(audio, loop, signal));
  }

  pause(seconds: number): Promise<LineResult> {
    return this.sounding((signal) => this.media.pause(Math.max(0, seconds), signal));
  }

  async gather(options: GatherOptions): Promise<GatherResult> {
    const gone = await this.answered();
    if (gone) return gone;
    const finishOnKey = options.finishOnKey ?? '#';
    const numDigits =
      options.numDigits !== undefined ? Math.max(1, Math.floor(options.numDigits)) : undefined;
    const timeoutSeconds = Math.max(0, options.timeoutSeconds);
    const takesKeys = options.dtmf !== false;
    const takesSpeech = options.speech === true;
    const prompt = hasSound(options.prompt) ? options.prompt : undefined;
    this.move(prompt ? 'prompt' : 'collect');
    const stopWaiting = this.hooks.onGather?.();
    return new Promise<GatherResult>((resolve, reject) => {
      let digits = '';
      let cancelTimeout: (() => void) | undefined;
      let stopListening: (() => void) | undefined;
      const promptSound = new AbortController();
      const finish = (result: GatherResult) => {
        if (this.gathering !== gathering) return;
        this.gathering = undefined;
        cancelTimeout?.();
        stopListening?.();
        promptSound.abort();
        if (this.sound === promptSound) this.sound = undefined;
        if (this.state === 'prompting' || this.state === 'collecting') this.move('finish');
        stopWaiting?.();
        resolve(result);
      };
      // The gather's silence: from the prompt's end, then again from each key or unrecognised utterance. Words
      // are listened for from the prompt's end too: during it, the caller's phone echoes the prompt back.
      const restartTimeout = () => {
        if (takesSpeech && !stopListening && this.media.listen) {
          stopListening = this.media.listen({
            started: () => gathering.speaking(),
            heard: (text) => gathering.speech(text),
          });
        }
        cancelTimeout?.();
        cancelTimeout = this.time.after(timeoutSeconds, () =>
          finish(digits ? { kind: 'digits', digits } : { kind: 'timeout' }),
        );
      };
      const gathering = {
        key: (key: string) => {
          if (!takesKeys) return;
          if (this.state === 'prompting') {
            promptSound.abort();
            this.move('collect');
          }
          if (finishOnKey.includes(key)) return finish({ kind: 'digits', digits });
          digits += key;
          if ((numDigits !== undefined && digits.length >= numDigits) || digits.length >= MAX_GATHERED)
            return finish({ kind: 'digits', digits });
          restartTimeout();
        },
        speaking: () => {
          if (takesSpeech && this.state === 'collecting') cancelTimeout?.();
        },
        speech: (text: string) => {
          if (!takesSpeech) return false;
          if (this.state === 'prompting') {
            promptSound.abort();
            this.move('collect');
          }
          const words = text.trim();
          if (words) finish({ kind: 'speech', text: words });
          else restartTimeout();
          return true;
        },
        end: finish,
        stop: () => finish(digits ? { kind: 'digits', digits } : { kind: 'timeout' }),
      };
      this.gathering = gathering;
      // Keys typed ahead count first, as if pressed now: the caller who already answered skips the prompt.
      const ahead = this.typedAhead;
      this.typedAhead = '';
      for (let index = 0; index < ahead.length; index++) {
        if (this.gathering !== gathering) {
          this.typedAhead = ahead.slice(index);
          break;
        }
        gathering.key(ahead[index]!);
      }
      if (this.gathering !== gathering) return;
      if (this.state === 'collecting') return restartTimeout();
      this.sound = promptSound;
      this.playPrompt(prompt!, promptSound.signal).then(
        () => {
          if (this.gathering !== gathering || this.state !== 'prompting') return;
          this.move('collect');
          restartTimeout();
        },
        (error: unknown) => {
          if (this.gathering !== gathering) return;
          this.gathering = undefined;
          cancelTimeout?.();
          if (this.state === 'prompting') this.move('finish');
          stopWaiting?.();
          reject(error);
        },
      );
    });
  }

  /**
   * The call's media to a stream (a call flow's `stream` step) until the control's `end` or the caller's
   * hang-up; keys go to the stream, not to a later gather.
   */
  async stream(handlers: LineStreamHandlers): Promise<LineResult> {
    const gone = await this.answered();
    if (gone) return gone;
    this.move('stream');
    const ended = new AbortController();
    this.sound = ended;
    this.streaming = handlers;
    const playback = new StreamPlayback({
      mark: (name) => handlers.mark(name),
      played: handlers.played && ((frame) => handlers.played?.(frame)),
    });
    const control: LineStreamControl = {
      play: (mulaw) => {
        if (!ended.signal.aborted) playback.play(mulaw);
      },
      mark: (name) => {
        if (!ended.signal.aborted) playback.mark(name);
      },
      clear: () => {
        if (!ended.signal.aborted) playback.clear();
      },
      end: () => ended.abort(),
    };
    try {
      handlers.started(control);
      const io = { heard: (mulaw: Uint8Array) => handlers.audio(mulaw), next: () => playback.next() };
      const streamed = this.media.stream(io, ended.signal).then(() => undefined);
      const result = await Promise.race([streamed, this.goneSignal]);
      if (result) return result;
    } finally {
      ended.abort();
      if (this.streaming === handlers) this.streaming = undefined;
      if (this.sound === ended) this.sound = undefined;
      if (this.state === 'streaming') this.move('finish');
    }
    return this.gone ?? DONE;
  }

  /**
   * Records the caller until `finishOnKey` (pressed keys other than it are not kept for a gather), `maxSeconds`
   * or their hanging up, whose audio is kept.
   */
  async record(options: { maxSeconds: number; finishOnKey?: string }): Promise<RecordResult> {
    const gone = await this.answered();
    if (gone) return { ended: 'hangup', hangup: { at: gone.at, cause: gone.cause } };
    this.move('record');
    const stopWaiting = this.hooks.onGather?.();
    const sound = new AbortController();
    this.sound = sound;
    let ended: RecordResult['ended'] = 'max_seconds';
    const recording = {
      finishOnKey: options.finishOnKey ?? '',
      stop: (why: RecordResult['ended']) => {
        ended = why;
        sound.abort();
      },
    };
    this.recording = recording;
    const cancel = this.time.after(Math.max(0, options.maxSeconds), () => recording.stop('max_seconds'));
    let audio: CallAudio;
    try {
      audio = await this.media.record(sound.signal);
    } finally {
      cancel();
      stopWaiting?.();
      if (this.recording === recording) this.recording = undefined;
      if (this.sound === sound) this.sound = undefined;
      if (this.state === 'recording') this.move('finish');
    }
    const hangup = this.gone;
    if (hangup) return { audio, ended: 'hangup', hangup: { at: hangup.at, cause: hangup.cause } };
    return { audio, ended };
  }

  /**
   * The caller's words (the simulated PBX's test control; a SIP line hears them itself): to a gather that
   * listens for speech. False when nothing takes them.
   */
  heard(text: string): boolean {
    if (!this.gathering || !this.open) return false;
    return this.gathering.speech(text);
  }

  /** Keys the caller pressed (RFC 4733, SIP INFO, the test control): to the stream, record or gather, else kept. */
  press(keys: string): void {
    for (const key of keys) {
      if (!KEYS.includes(key) || !this.open) return;
      if (this.streaming) {
        this.streaming.key(key);
        continue;
      }
      if (this.recording) {
        if (this.recording.finishOnKey.includes(key)) this.recording.stop('finish_key');
        continue;
      }
      if (this.gathering) this.gathering.key(key);
      else if (this.typedAhead.length < MAX_TYPED_AHEAD) this.typedAhead += key;
    }
  }

  /** The caller hung up (`normal_clearing`), or the call was hung up (`hangup_requested`). */
  hungUp(cause: string, at: Date = this.time.now()): void {
    if (!this.open) return;
    const gone: Hangup = { kind: 'hangup', at, cause };
    this.gone = gone;
    this.move('hangup');
    this.sound?.abort();
    this.gathering?.end(gone);
    this.goneNow(gone);
  }

  /** A step still in progress ends as if it had finished (a gather with the keys it has). */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.move('close');
    this.sound?.abort();
    this.gathering?.stop();
    await this.media.close();
  }

  /** Before a step: refused on a closed line; the caller answered; their hang-up, if they are gone. */
  private async answered(): Promise<Hangup | undefined> {
    if (this.state === 'closed') throw new Error('The caller line is closed');
    if (!this.gone) await this.media.answer();
    return this.gone;
  }

  private async sounding(run: (signal: AbortSignal) => Promise<void>): Promise<LineResult> {
    const gone = await this.answered();
    if (gone) return gone;
    this.move('sound');
    const sound = new AbortController();
    this.sound = sound;
    try {
      const ended = await Promise.race([run(sound.signal).then(() => undefined), this.goneSignal]);
      if (ended) return ended;
    } finally {
      sound.abort();
      if (this.sound === sound) this.sound = undefined;
      if (this.state === 'sounding') this.move('finish');
    }
    return this.gone ?? DONE;
  }

  private playPrompt(prompt: GatherPrompt, signal: AbortSignal): Promise<void> {
    if (prompt.audio) return this.media.play(prompt.audio, 1, signal);
    return this.media.say(prompt.text!, { voice: prompt.voice }, signal);
  }

  /** Moves the line by `event`; a step the state does not take is the flow's mistake, refused. */
  private move(event: LineEvent): void {
    const next = TRANSITIONS[this.state][event];
    if (!next) throw new Error(`The caller line is ${this.state}: it does not take ${event}`);
    this.state = next;
  }
}

function hasSound(prompt: GatherPrompt | undefined): prompt is GatherPrompt {
  return Boolean(prompt && ((prompt.audio && prompt.audio.length > 0) || prompt.text));
}
