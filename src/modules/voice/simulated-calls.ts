// What the simulated PBX (simulated-pbx.ts) knows of a call and what may happen on it next: the test control's
// events, each step's accepted events, a scripted call's behaviour and plan, and the phone numbers whose last
// digits make a leg end a given way. The PBX itself plays these out.
import type { LineSteps } from './line-steps.ts';
import type { Party } from './pbx.ts';

/** What the operator's test control may say happens next on a call. */
export const PBX_EVENTS = [
  'ringing',
  'answered',
  'completed',
  'busy',
  'no_answer',
  'failed',
  'utterance',
  'digits',
  'speech',
] as const;
export type PbxEvent = (typeof PBX_EVENTS)[number];

/** Last four digits of a phone number that make the simulator's legs to it end that way. */
export const MAGIC_CALL_SUFFIXES = {
  /** SIP 486 Busy Here. */
  busy: '0486',
  /** SIP 480 Temporarily Unavailable: rings until the ring timeout. */
  no_answer: '0480',
  /** SIP 503 Service Unavailable: the leg fails at once. */
  failed: '0503',
} as const;

/** Last four digits of a phone number whose callee is an answering machine (an agent's machine detection). */
export const MACHINE_SUFFIX = '0626';

/** What the simulated far end does: the callee's answer, the caller's words and the talk time. */
export interface SimulatedBehaviour {
  outcome?: 'answered' | 'no_answer' | 'busy';
  voicemailText?: string;
  speech?: string;
  durationSeconds?: number;
  /** What the caller says to an AI agent, turn by turn; then they hang up (auto, instant) or wait (manual). */
  utterances?: string[];
}

/** What a test control's `utterance` carries: the caller's words as text, or a WAV of them (`digits`: keys). */
export interface Utterance {
  text?: string;
  audio?: Buffer;
  digits?: string;
}

export type SimulationMode = 'auto' | 'manual';

/** Seconds a phone rings before the simulator answers it in `auto` and `instant`. */
export const ANSWER_AFTER_SECONDS = 3;
/** Talk time when the behaviour does not say. */
export const DEFAULT_TALK_SECONDS = 30;
/** A caller without words leaves this much tone. */
export const WORDLESS_VOICEMAIL_SECONDS = 5;

export type Step = 'ring' | 'converse' | 'voicemail' | 'listen' | 'gather' | 'stream';

/** The events each step takes; anything else from a test control is a 409 that says what it takes. */
export const ACCEPTS: Record<Step, readonly PbxEvent[]> = {
  ring: ['ringing', 'answered', 'busy', 'no_answer', 'failed', 'completed'],
  converse: ['completed', 'ringing'],
  voicemail: ['completed'],
  /** An AI agent listening: the caller's words, keys, the caller hanging up. */
  listen: ['utterance', 'digits', 'completed'],
  /** A flow's gather or record step: keys, words (a speech gather), the caller hanging up. */
  gather: ['digits', 'speech', 'completed'],
  stream: ['digits', 'completed'],
};

export interface Waiter {
  step: Step;
  deliver(event: PbxEvent, at: Date, utterance?: Utterance): Promise<void>;
  /** The call was hung up (the API's, or the server shutting down's), with `cause`. */
  hangup(at: Date, cause: string): void;
}

/** A scripted event: seconds after the previous one, the event, and the caller's words for an utterance. */
export type PlannedEvent = [number, PbxEvent] | [number, PbxEvent, Utterance];

export interface SimulatedCall {
  behaviour: SimulatedBehaviour;
  instant: boolean;
  /** The script's own time, in `instant` play. */
  virtualNow?: Date;
  waiter?: Waiter;
  timers: Set<NodeJS.Timeout>;
  /** Resolved when the platform next waits on the PBX or releases the call: a test control then answers. */
  onSettle: (() => void)[];
  /** Who hears the last ring's `ringing`: a late one (after the answer) goes there too. */
  ringing?: (at: Date) => Promise<void>;
  /** Each party rung on the call, in order, with the number it was shown (a flow's dial `callerId`). */
  rung: Party[];
  /** A call flow's line (simulated-line.ts): it hears the keys of the test control's `digits`. */
  line?: LineSteps;
}

export function magicOutcome(number: string): 'busy' | 'no_answer' | 'failed' | undefined {
  for (const [outcome, suffix] of Object.entries(MAGIC_CALL_SUFFIXES)) {
    if (number.endsWith(suffix)) return outcome as 'busy' | 'no_answer' | 'failed';
  }
  return undefined;
}

/** How ringing `party` plays out on a scripted call: its script's outcome, or a magic number's. */
export function ringPlan(call: SimulatedCall, party: Party, ringSeconds: number): PlannedEvent[] {
  const outcome =
    (party.kind === 'phone' ? magicOutcome(party.number) : undefined) ?? call.behaviour.outcome ?? 'answered';
  switch (outcome) {
    case 'answered':
      return [
        [1, 'ringing'],
        [Math.min(ANSWER_AFTER_SECONDS, ringSeconds - 1), 'answered'],
      ];
    case 'no_answer':
      return [
        [1, 'ringing'],
        [ringSeconds - 1, 'no_answer'],
      ];
    case 'busy':
      return [[1, 'busy']];
    case 'failed':
      return [[0.5, 'failed']];
  }
}

/** Whole seconds from `from` to `to`, at least one (a recording is never empty). */
export function secondsBetween(from: Date, to: Date): number {
  return Math.max(1, Math.round((to.getTime() - from.getTime()) / 1000));
}

/** Calls whose spoken words the simulator keeps for tests (manual play). */
const SAID_KEPT = 1000;

/** What call flows said on each call, in order: the latest SAID_KEPT calls (a test process runs for minutes). */
export class SaidLog {
  private readonly texts = new Map<string, string[]>();

  said(callId: string): string[] {
    return [...(this.texts.get(callId) ?? [])];
  }

  keep(callId: string, text: string): void {
    let texts = this.texts.get(callId);
    if (!texts) {
      if (this.texts.size >= SAID_KEPT) this.texts.delete(this.texts.keys().next().value!);
      texts = [];
      this.texts.set(callId, texts);
    }
    texts.push(text);
  }
}
