// An AI agent on a SIP call: what it says is synthesised by espeak-ng and played into RTP at real-time pace;
// what the caller says is cut into utterances from their RTP (utterances.ts) and handed to the agent as WAV
// audio, which the agents module transcribes with the call's Transcriber. A say with `bargeIn` goes on hearing
// the caller: one who talks over the agent (a sustained voice, not a cough) stops its audio at the next packet
// and their words, from their start, are the next utterance. Without it turns are half duplex: while the agent
// speaks, what the line picks up is not the caller's turn (a phone with no echo cancelling sends the agent's
// own voice back). With `record`, both sides are kept on one timeline, as a recorded call between two people is.
import type { Clock } from '../../../platform/clock.ts';
import { encodeWav, MAX_SECONDS, synthesise, tone } from '../audio.ts';
import type { AgentLine, AnsweredBy, CallAudio, Heard, Said, SayOptions } from '../pbx.ts';
import type { SpeechStream } from '../speech-stream.ts';
import {
  GreetingEnd,
  type GreetingListener,
  listenUntilDecided,
  MachineDetector,
} from './machine-detector.ts';
import { CallRecorder, type RtpSession, rtpAudio } from './rtp.ts';
import { type Utterance, UtteranceDetector } from './utterances.ts';

/** The most keys taken as one group while the agent speaks (an account or card number is under 32). */
const MAX_KEYS_AT_ONCE = 32;

/** How long a phone may send nothing before what the caller was saying counts as said. */
const SILENT_PHONE_MS = 800;
/** Without espeak-ng the caller hears a tone as long as the words would take (about 2.5 words a second). */
const WORDS_PER_SECOND = 2.5;

export class RtpAgentLine implements AgentLine {
  private session?: Promise<RtpSession>;
  private readonly detector = new UtteranceDetector();
  private readonly recorder?: CallRecorder;
  private readonly heard: Heard[] = [];
  private waiting?: (heard: Heard) => void;
  private speaking = false;
  /** The say under way may be cut off by the caller. */
  private interruptible = false;
  /** The caller cut off the say under way. */
  private cut = false;
  private gone?: Heard & { kind: 'hangup' };
  /** Starts recognition of an utterance as it begins (hearWith); the stream of the one being heard. */
  private recogniser?: () => SpeechStream;
  private recognising?: SpeechStream;
  private silentPhone?: NodeJS.Timeout;
  /** Answering machine detection listening to the callee (machine-detector.ts): their audio is not a turn. */
  private greeting?: { hear?: (samples: Int16Array) => void; gone?: () => void };

  constructor(
    private readonly deps: {
      /** Answers the caller with our own media (once): the session the agent speaks and listens on. */
      open: () => Promise<RtpSession>;
      clock: Clock;
      record: boolean;
      /** The agent is done with the line. */
      onClose: () => void;
    },
  ) {
    if (deps.record) this.recorder = new CallRecorder(MAX_SECONDS);
    this.detector.onStart = () => {
      if (this.speaking && this.interruptible) this.cut = true;
      // Recognition starts with the utterance (hearWith): its words are ready soon after the caller stops.
      this.recognising?.abort();
      this.recognising = this.recogniser?.();
    };
    this.detector.onAudio = (samples) => this.recognising?.push(samples);
  }

  async say(text: string, voice?: string, options: SayOptions = {}): Promise<Said | undefined> {
    if (this.gone) return undefined;
    const session = await this.media();
    if (this.gone) return undefined;
    // A voice this espeak-ng does not have is spoken in its default voice rather than not at all.
    const speech =
      (await synthesise(text, voice)
        .catch(() => synthesise(text))
        .catch(() => undefined)) ?? tone(Math.max(1, text.split(/\s+/).length / WORDS_PER_SECOND));
    // A caller already talking (an utterance begun) interrupts at once.
    const bargeIn = options.bargeIn === true;
    if (bargeIn && this.detector.hearing) return { interrupted: true, heard: 0 };
    this.speaking = true;
    this.interruptible = bargeIn;
    this.cut = false;
    this.detector.agentSpeaking = bargeIn;
    if (!bargeIn) this.forget();
    try {
      const at = this.recorder?.now() ?? 0;
      options.onAudio?.();
      const sent = await session.play(speech, () => this.gone !== undefined || this.cut);
      this.recorder?.add('agent', at, session.carried(speech.subarray(0, sent)));
      return { interrupted: this.cut, heard: speech.length === 0 ? 1 : sent / speech.length };
    } finally {
      this.speaking = false;
      this.interruptible = false;
      this.detector.agentSpeaking = false;
    }
  }

  async listen(): Promise<Heard> {
    if (!this.gone) await this.media();
    const next = this.heard.shift() ?? this.gone;
    if (next) return next;
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  async answeredBy(): Promise<AnsweredBy> {
    return (await this.hearGreeting(new MachineDetector())) ?? 'unknown';
  }

  async greetingOver(): Promise<void> {
    await this.hearGreeting(new GreetingEnd());
  }

  /**
   * A key the caller pressed (RFC 4733, SIP INFO): the agent's next Heard; keys not yet taken come together. A
   * key stops the agent's words at the next packet, barge-in or not: a key is never the agent's own echo, and a
   * caller pressing 0 for a person should not sit through the rest of the sentence first.
   */
  press(key: string): void {
    if (this.gone) return;
    if (this.speaking) this.cut = true;
    const waiting = this.heard.at(-1);
    if (!this.waiting && waiting?.kind === 'keys') {
      // A phone that keeps sending keys while the agent talks gets a group of a number's length, not a book.
      if (waiting.digits.length < MAX_KEYS_AT_ONCE) waiting.digits += key;
    } else this.deliver({ kind: 'keys', at: this.deps.clock.now(), digits: key });
  }

  /** The caller hung up, or the call was hung up (`hangup_requested`): what listens hears it. */
  hungUp(cause: string): void {
    if (this.gone) return;
    this.greeting?.gone?.();
    this.recognising?.abort();
    this.recognising = undefined;
    this.gone = { kind: 'hangup', at: this.deps.clock.now(), cause };
    this.deliver(this.gone);
    void this.session?.then((session) => session.close()).catch(() => {});
  }

  async close(): Promise<CallAudio | undefined> {
    this.deps.onClose();
    clearTimeout(this.silentPhone);
    this.forget();
    this.detector.close();
    const session = await this.session?.catch(() => undefined);
    session?.close();
    if (!this.recorder) return undefined;
    return rtpAudio(this.recorder.mixed());
  }

  private media(): Promise<RtpSession> {
    this.session ??= this.deps.open().then((session) => {
      session.onAudio = (samples, timestamp) => this.hear(samples, timestamp);
      session.onDtmf = (key) => this.press(key);
      return session;
    });
    return this.session;
  }

  private hear(samples: Int16Array, timestamp: number): void {
    this.recorder?.stream('caller', timestamp, samples);
    if (this.greeting) {
      this.greeting.hear?.(samples);
      return;
    }
    if ((this.speaking && !this.interruptible) || this.gone) return;
    for (const utterance of this.detector.push(samples)) this.utterance(utterance);
    clearTimeout(this.silentPhone);
    if (this.detector.hearing) {
      this.silentPhone = setTimeout(() => {
        const utterance = this.detector.quiet(SILENT_PHONE_MS);
        if (utterance && !(this.speaking && !this.interruptible) && !this.gone) this.utterance(utterance);
      }, SILENT_PHONE_MS);
      this.silentPhone.unref();
    }
  }

  hearWith(start: () => SpeechStream): void {
    this.recogniser = start;
  }

  /** What the line was hearing is not a turn: the detector starts afresh and its recognition is dropped. */
  private forget(): void {
    this.detector.reset();
    this.recognising?.abort();
    this.recognising = undefined;
  }

  private utterance(utterance: Utterance): void {
    const recognised = this.recognising;
    this.recognising = undefined;
    this.deliver({
      kind: 'speech',
      at: this.deps.clock.now(),
      audio: encodeWav(utterance.audio),
      endOfTurnMs: utterance.quietMs,
      ...(recognised ? { transcript: recognised.end() } : {}),
    });
  }

  private deliver(heard: Heard): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) waiting(heard);
    else if (heard.kind !== 'hangup') this.heard.push(heard);
  }

  /** Runs `listener` on the callee's audio (before the agent speaks); undefined when the line is gone. */
  private async hearGreeting<T>(listener: GreetingListener<T>): Promise<T | undefined> {
    if (this.gone || !(await this.media().catch(() => undefined)) || this.gone) return undefined;
    const greeting: NonNullable<typeof this.greeting> = {};
    this.greeting = greeting;
    try {
      return await listenUntilDecided(
        listener,
        (hear) => {
          greeting.hear = hear;
        },
        (stop) => {
          greeting.gone = stop;
        },
      );
    } finally {
      this.greeting = undefined;
      this.forget();
    }
  }
}
