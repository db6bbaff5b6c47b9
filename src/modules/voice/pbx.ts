// The seam between the platform and whatever carries the calls' signalling and media. The platform keeps the
// records, the capacity and the dial plan (ring the extension, then its forward, then its voicemail); the PBX
// carries out one step at a time and says how it went, like the verbs of jambonz or FreeSWITCH's dialplan
// applications. The simulated PBX (simulated-pbx.ts) behaves like a real one without a network; a SIP PBX
// (SIP_PORT, a later part) answers the same calls with phones and a trunk.
import type { SpeechStream } from './speech-stream.ts';

/** A call as the PBX knows it. */
export interface PbxCall {
  id: string;
  direction: 'inbound' | 'outbound' | 'internal';
  /** E.164, or an extension number on internal calls. */
  from: string;
  to: string;
  /** The call is recorded: its media must be in a codec we decode (G.711), on every leg. */
  record?: boolean;
}

/**
 * Who a leg rings: the phones registered to an extension, or a phone number through the trunk (shown the
 * call's `from`, or `callerId`: one of the organization's numbers, a call flow's dial `callerId`).
 */
export type Party =
  | { kind: 'extension'; extensionId: string; extension: string }
  /**
   * Several extensions rung at once (a ring group, a flow's simultaneous dial), and with them `phones`
   * through the trunk (a flow's dial of numbers and extensions at once): the first to answer takes it.
   */
  | {
      kind: 'extensions';
      members: { extensionId: string; extension: string }[];
      phones?: { number: string; callerId?: string }[];
    }
  | { kind: 'phone'; number: string; callerId?: string };

/** How ringing a party ended. `canceled`: the call was hung up (by either side or the API) before an answer. */
export type RingOutcome = 'answered' | 'busy' | 'no_answer' | 'failed' | 'canceled';

export interface RingResult {
  outcome: RingOutcome;
  at: Date;
  /** Why, in the words of docs/voice.md "Hang-up causes" (`hangup_requested`, `caller_hangup`, …). */
  cause: string;
  /** Answered: the extension whose phone answered, when the party was extensions (a ring group's turn). */
  answeredBy?: string;
}

/** A recording: 8 kHz mono 16-bit PCM WAV. `voice` says what made the sound (`espeak-ng`, `tone`, `rtp`). */
export interface CallAudio {
  wav: Buffer;
  durationSeconds: number;
  voice: string;
}

export interface CallEnd {
  at: Date;
  cause: string;
}

/** What a voicemail box says before the beep: the owner's uploaded audio (8 kHz) when there is one, else the text. */
export interface VoicemailGreeting {
  text: string;
  audio?: Int16Array;
}

export interface Pbx {
  readonly name: string;
  /** Whether it can take voicemail (record a caller's audio); without, unanswered calls end unanswered. */
  readonly takesVoicemail: boolean;
  /**
   * Rings `party` on the call for at most `ringSeconds` (then `no_answer`, cause `ring_timeout`). `onRinging`
   * is awaited when it starts to ring.
   */
  ring(
    call: PbxCall,
    party: Party,
    ringSeconds: number,
    onRinging: (at: Date) => Promise<void>,
  ): Promise<RingResult>;
  /** Holds an answered call until a side hangs up; with `record`, the audio of the conversation. */
  converse(call: PbxCall, options: { record: boolean }): Promise<CallEnd & { recording?: CallAudio }>;
  /** Plays the greeting, then records the caller until they hang up. */
  takeVoicemail(call: PbxCall, greeting: VoicemailGreeting): Promise<CallEnd & { audio: CallAudio }>;
  /**
   * The answered call as a voice agent hears and speaks it (an AI agent answering or calling); with `record`,
   * both sides of what is said are kept. Absent: the PBX cannot carry agent calls.
   */
  agentLine?(call: PbxCall, options: { record: boolean }): AgentLine;
  /**
   * The call answered with the PBX's own media for a call flow to speak, play and gather keys on (answered
   * once; a later line reuses the answered call). Absent: the PBX cannot carry call flows.
   */
  callerLine?(call: PbxCall): CallerLine;
  /**
   * Moves the caller of an answered call, while it converses, from the person they talk with to `party`
   * (a transfer: call-transfer.ts). `party` rings for at most `ringSeconds`; answered, the caller talks with
   * them and the pending converse goes on (it resolves when that conversation ends). With `keepCurrent`, the
   * person stays with the caller until the answer (and, unanswered, the conversation goes on as it was);
   * without, they are let go at once and, unanswered, the conversation ends (converse resolves, cause
   * `transfer_failed`). Undefined at once when the call is not conversing with a person, or a transfer of it is
   * under way. Absent: the PBX cannot transfer.
   */
  transfer?(
    call: PbxCall,
    party: Party,
    ringSeconds: number,
    options: { keepCurrent: boolean },
  ): Promise<RingResult> | undefined;
  /**
   * Ends what the call is doing now; the pending step resolves with `cause`: `hangup_requested` (the API's, the
   * default) or `server_shutdown` (the process is stopping and its grace period ran out: docs/operations.md).
   */
  hangup(callId: string, cause?: string): boolean;
  /**
   * Speaks `text` to the party who answered the call's last ring, before the caller is put through with them
   * (an agent's warm transfer: a summary of the call); the caller hears nothing of it. Absent: the PBX cannot.
   */
  announce?(call: PbxCall, text: string, voice?: string): Promise<void>;
  /** The platform is done with the call (it ended): the PBX forgets it. */
  release(callId: string): void;
}

/**
 * What a voice agent hears: the caller's words (as text, or as audio to transcribe), keys they pressed (RFC 4733,
 * SIP INFO, the test control's `digits`; keys pressed while the agent was busy come together), or the caller gone.
 */
export type Heard =
  | {
      kind: 'speech';
      at: Date;
      text?: string;
      audio?: Buffer;
      /** The silence waited after the caller's last voiced audio before the turn counted as ended. */
      endOfTurnMs?: number;
      /** The words, from recognition that ran while the caller spoke (hearWith); undefined: use `audio`. */
      transcript?: Promise<string | undefined>;
    }
  | { kind: 'keys'; at: Date; digits: string }
  | { kind: 'hangup'; at: Date; cause: string };

/** Who answered an outbound call, as heard from their first words (answering machine detection). */
export type AnsweredBy = 'human' | 'machine' | 'unknown';

export interface SayOptions {
  /** The caller may interrupt (barge in). */
  bargeIn?: boolean;
  /** The first audio of it goes to the caller now. */
  onAudio?: () => void;
}

/** How much of a say the caller heard. */
export interface Said {
  /** A caller who talked over it cut it off. */
  interrupted: boolean;
  /** The part of its audio sent, 0 to 1. */
  heard: number;
}

/** An answered call as a voice agent has it: it speaks, then listens for the caller's next words. */
export interface AgentLine {
  /**
   * Speaks `text` to the caller (synthesised in `voice`, an espeak-ng voice, where the PBX carries audio);
   * resolves when it has been said, or cut off: with `bargeIn`, a caller who talks over it stops it (their
   * words are the next thing heard). Resolves with what the caller heard, where the PBX carries audio.
   */
  say(text: string, voice?: string, options?: SayOptions): Promise<Said | undefined>;
  /** The caller's next utterance, or their hanging up (the API's hang-up too: cause `hangup_requested`). */
  listen(): Promise<Heard>;
  /**
   * Recognises each utterance while the caller speaks: `start` is asked for a stream at the utterance's start
   * and fed its audio, and the utterance's Heard carries the stream's words as `transcript`. Absent: the line
   * hands over audio only.
   */
  hearWith?(start: () => SpeechStream): void;
  /**
   * Before the agent speaks on an outbound call: listens to the callee's greeting and says whether a person or
   * an answering machine answered ('unknown' when it cannot tell, or the callee hung up). Absent: it cannot.
   */
  answeredBy?(): Promise<AnsweredBy>;
  /**
   * After `answeredBy` said `machine`: resolves once the greeting is over (its beep ended, or it fell silent),
   * when a message left is recorded from its start.
   */
  greetingOver?(): Promise<void>;
  /**
   * The agent is done with the line (the call ends, or goes on to a person): its media is let go, and what it
   * recorded, when asked to, is handed back.
   */
  close(): Promise<CallAudio | undefined>;
}

/** How a step a caller hears ended: it finished, or the caller (or the API) hung up during it. */
export type LineResult = { kind: 'done' } | { kind: 'hangup'; at: Date; cause: string };

/**
 * What the caller answered a gather with: the digits (ended by count, finish key or silence), their words
 * (a gather that listens for speech: the transcript of their utterance), nothing, or gone.
 */
export type GatherResult =
  | { kind: 'digits'; digits: string }
  | { kind: 'speech'; text: string }
  | { kind: 'timeout' }
  | { kind: 'hangup'; at: Date; cause: string };

/**
 * What a record step kept: the caller's audio until the finish key (`finish_key`), the longest recording
 * (`max_seconds`) or their hanging up (`hangup`, with when and why: the audio is kept, as a voicemail is).
 */
export interface RecordResult {
  /** None when the caller had hung up before the recording began. */
  audio?: CallAudio;
  ended: 'finish_key' | 'max_seconds' | 'hangup';
  hangup?: { at: Date; cause: string };
}

/** What a gather plays while it waits for keys: a key pressed during it stops it and counts (barge-in). */
export interface GatherPrompt {
  text?: string;
  voice?: string;
  /** 8 kHz mono PCM. */
  audio?: Int16Array;
}

/**
 * An answered call as a call flow has it (issue 33): the PBX answers the caller with its own media and the flow
 * speaks, plays and collects keys (RFC 4733 telephone-events or SIP INFO over SIP; the test control's `digits`
 * on the simulated PBX). Keys pressed while nothing gathers are kept for the next gather, as a phone user
 * typing ahead expects. The API's hang-up ends what is in progress with cause `hangup_requested`.
 */
export interface CallerLine {
  /** Speaks `text` (an espeak-ng voice where the PBX carries audio). */
  say(text: string, options?: { voice?: string; language?: string }): Promise<LineResult>;
  /** Plays `audio` (8 kHz mono PCM) `loop` times (default 1). */
  play(audio: Int16Array, options?: { loop?: number }): Promise<LineResult>;
  /** Silence for `seconds`. */
  pause(seconds: number): Promise<LineResult>;
  /**
   * Collects keys: ends after `numDigits` keys, at `finishOnKey` (not included; default `#`, '' for none), or
   * `timeoutSeconds` after the prompt ended or the last key; `timeout` when no key came at all.
   */
  gather(options: {
    numDigits?: number;
    finishOnKey?: string;
    timeoutSeconds: number;
    prompt?: GatherPrompt;
    /** Keys are taken (default true). */
    dtmf?: boolean;
    /** The caller's words are listened for once the prompt has ended (an utterance ends the gather). */
    speech?: boolean;
  }): Promise<GatherResult>;
  /**
   * Streams the call's media (a call flow's `stream` step, flow-stream.ts): the caller's audio and keys go to
   * `handlers` as they arrive; `handlers.started` gets the stream's control, to queue audio for the caller,
   * mark points in it and clear it. Ends `done` when the control's `end` is called, or `hangup` when the
   * caller (or the API) hangs up.
   */
  stream(handlers: LineStreamHandlers): Promise<LineResult>;
  /**
   * Records the caller (the beep is the flow's to play): until `finishOnKey` (not recorded; none when
   * absent), `maxSeconds`, or their hanging up.
   */
  record(options: { maxSeconds: number; finishOnKey?: string }): Promise<RecordResult>;
  /** The flow is done with the line (the call ends, or goes on to a person): its media is let go. */
  close(): Promise<void>;
}

/** 20 ms of 8 kHz µ-law: one frame of a media stream, as played to the caller. */
export const STREAM_FRAME_BYTES = 160;

/** What a media stream hears of the line (CallerLine.stream). */
export interface LineStreamHandlers {
  /** The stream is on: its control. Called once, before any other handler. */
  started(control: LineStreamControl): void;
  /**
   * The caller's audio as it arrives, 8 kHz µ-law, one packet at a time (20 ms on most phones): a PCMU caller's
   * bytes as they came; other laws transcoded. The buffer is only valid during the call.
   */
  audio(mulaw: Uint8Array): void;
  /** A key the caller pressed (RFC 4733, SIP INFO, the simulated PBX's test control). */
  key(key: string): void;
  /** Playback reached a mark (the audio queued before it was played), or `clear` dropped the audio before it. */
  mark(name: string): void;
  /** A frame of queued audio was sent to the caller (silence between audio is not reported). */
  played?(mulaw: Uint8Array): void;
}

/** How a media stream drives the line's playback. */
export interface LineStreamControl {
  /** Queues 8 kHz µ-law audio behind what is queued; it is played in 20 ms frames at real-time pace. */
  play(mulaw: Uint8Array): void;
  /** A mark behind the audio queued so far: `handlers.mark(name)` once that audio has been played. */
  mark(name: string): void;
  /** Drops the queued audio (playback stops within one frame); the marks behind it are reported at once. */
  clear(): void;
  /** Ends the stream: `stream` resolves `done`. */
  end(): void;
}
