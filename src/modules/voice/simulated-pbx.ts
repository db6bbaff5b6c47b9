// A PBX that behaves like a real one without a network. Each step of a call plays out as a real PBX's
// would: a leg rings, then is answered, busy, unanswered at its ring timeout, or fails; a conversation lasts
// until a side hangs up; a voicemail box records what the caller says (speech synthesised by espeak-ng when
// installed, else a plain tone, and the record says which: audio.ts).
//
// Who decides what happens:
//   auto     (outside APP_ENV=test) the simulator plays every call out by itself on timers, like the simulated
//            carrier's receipts: phones answer after a few seconds unless the number's last four digits say
//            otherwise (MAGIC_CALL_SUFFIXES), conversations last a caller's `durationSeconds` or 30 s.
//   manual   (APP_ENV=test) nothing moves until the operator's test control says what happens next
//            (POST /admin/v1/test/pbx/calls/{id} {event}), so a test sees every state. A `ringing` while the
//            call talks is a late one: the phone's 180 that the network delivered behind its answer, handed to
//            the platform as a real PBX would, for its call table to refuse (call-states.ts).
//   instant  a test inbound call given an `outcome` is played through at once, its times as the script sets
//            them (the clock is not moved: `endedAt` may lie after the clock's now).
import type { Clock } from '../../platform/clock.ts';
import { ApiError } from '../../platform/errors.ts';
import { conversationAudio, recordedAudio } from './audio.ts';
import type { LineSteps } from './line-steps.ts';
import type {
  AgentLine,
  CallAudio,
  CallEnd,
  CallerLine,
  Heard,
  Party,
  Pbx,
  PbxCall,
  RingOutcome,
  RingResult,
  VoicemailGreeting,
} from './pbx.ts';
import {
  ACCEPTS,
  DEFAULT_TALK_SECONDS,
  MACHINE_SUFFIX,
  type PbxEvent,
  type PlannedEvent,
  ringPlan,
  SaidLog,
  type SimulatedBehaviour,
  type SimulatedCall,
  type SimulationMode,
  secondsBetween,
  type Utterance,
  type Waiter,
  WORDLESS_VOICEMAIL_SECONDS,
} from './simulated-calls.ts';
import { keysWaiter, simulatedLine } from './simulated-line.ts';
import { simulatedTransfer } from './simulated-transfer.ts';

export class SimulatedPbx implements Pbx {
  readonly name = 'simulated';
  readonly takesVoicemail = true;
  private readonly calls = new Map<string, SimulatedCall>();
  /** What call flows said on each call, in manual play (tests read it back); the latest SAID_KEPT calls. */
  private readonly spoken = new SaidLog();

  constructor(
    private readonly clock: Clock,
    private readonly mode: SimulationMode,
  ) {}

  /** Says what the far end of a call will do; `instant` plays it through without waiting on anyone. */
  script(callId: string, behaviour: SimulatedBehaviour, instant: boolean): void {
    const call = this.call(callId);
    call.behaviour = behaviour;
    call.instant = instant;
    if (instant) call.virtualNow = this.clock.now();
  }

  ring(
    call: PbxCall,
    party: Party,
    ringSeconds: number,
    onRinging: (at: Date) => Promise<void>,
  ): Promise<RingResult> {
    const rung = this.call(call.id);
    rung.ringing = onRinging;
    // Kept for the call's life (a test reads what a leg was shown), bounded as a call's legs are.
    if (rung.rung.length < 100) rung.rung.push(party);
    return this.wait<RingResult>(
      call.id,
      (settle) => ({
        step: 'ring',
        deliver: async (event, at) => {
          if (event === 'ringing') return onRinging(at);
          if (event === 'completed') return settle({ outcome: 'canceled', at, cause: 'caller_hangup' });
          const outcome = event as Exclude<RingOutcome, 'canceled'>;
          // Of several extensions rung at once, the simulator's first member is the one who answers.
          const answeredBy =
            outcome !== 'answered'
              ? undefined
              : party.kind === 'extension'
                ? party.extensionId
                : party.kind === 'extensions'
                  ? party.members[0]?.extensionId
                  : undefined;
          settle({
            outcome,
            at,
            cause: outcome === 'no_answer' ? 'ring_timeout' : outcome,
            ...(answeredBy ? { answeredBy } : {}),
          });
        },
        hangup: (at, cause) => settle({ outcome: 'canceled', at, cause }),
      }),
      (simulated) => ringPlan(simulated, party, ringSeconds),
    );
  }

  converse(call: PbxCall, options: { record: boolean }): Promise<CallEnd & { recording?: CallAudio }> {
    const simulated = this.call(call.id);
    const answeredAt = this.now(simulated);
    const end = async (at: Date, cause: string) => ({
      at,
      cause,
      ...(options.record
        ? {
            recording: await recordedAudio({
              text: simulated.behaviour.speech,
              seconds: secondsBetween(answeredAt, at),
            }),
          }
        : {}),
    });
    return this.wait(
      call.id,
      (settle, fail) => ({
        step: 'converse',
        deliver: async (event, at) => {
          if (event === 'ringing') return simulated.ringing?.(at);
          // `failed` is the PBX's own (a blind transfer nobody answered: simulated-transfer.ts), never the test
          // control's, which ACCEPTS refuses for this step.
          settle(await end(at, event === 'failed' ? 'transfer_failed' : 'normal_clearing'));
        },
        hangup: (at, cause) => void end(at, cause).then(settle, fail),
      }),
      () => [[simulated.behaviour.durationSeconds ?? DEFAULT_TALK_SECONDS, 'completed']],
    );
  }

  takeVoicemail(call: PbxCall, _greeting: VoicemailGreeting): Promise<CallEnd & { audio: CallAudio }> {
    const simulated = this.call(call.id);
    const startedAt = this.now(simulated);
    const text = simulated.behaviour.voicemailText;
    const end = async (at: Date, cause: string) => ({
      at,
      cause,
      audio: await recordedAudio({ text, seconds: secondsBetween(startedAt, at) }),
    });
    // Speech at espeak-ng's pace is about 2.5 words a second; the audio says how long it really is.
    const speaking = text ? Math.ceil(text.split(/\s+/).length / 2.5) + 1 : WORDLESS_VOICEMAIL_SECONDS;
    return this.wait(
      call.id,
      (settle, fail) => ({
        step: 'voicemail',
        deliver: async (_event, at) => settle(await end(at, 'normal_clearing')),
        hangup: (at, cause) => void end(at, cause).then(settle, fail),
      }),
      () => [[speaking, 'completed']],
    );
  }

  /**
   * An agent on the call: what it says is taken as said (nothing is played to anyone); what the caller says
   * comes from the script's `utterances` in turn, then from the test control's `utterance` events (manual),
   * and once the script has no more words the caller hangs up (auto, instant). With `record`, the recording
   * is both sides' words in turn, spoken by espeak-ng (a caller's audio as they sent it).
   */
  agentLine(call: PbxCall, options: { record: boolean }): AgentLine {
    const simulated = this.call(call.id);
    const said: (string | Buffer)[] = [];
    return {
      // Said at once and whole: nobody on a simulated call talks over the agent.
      say: async (text, _voice, options) => {
        options?.onAudio?.();
        said.push(text);
        return undefined;
      },
      listen: async () => {
        const heard = await this.wait<Heard>(
          call.id,
          (settle) => ({
            step: 'listen',
            deliver: async (event, at, utterance) => {
              if (event === 'digits') settle({ kind: 'keys', at, digits: utterance?.digits ?? '' });
              else if (event === 'utterance') settle({ kind: 'speech', at, ...utterance });
              else settle({ kind: 'hangup', at, cause: 'normal_clearing' });
            },
            hangup: (at, cause) => settle({ kind: 'hangup', at, cause }),
          }),
          () => {
            const next = simulated.behaviour.utterances?.shift();
            if (next !== undefined)
              return [[Math.ceil(next.split(/\s+/).length / 2.5), 'utterance', { text: next }]];
            return [[2, 'completed']];
          },
          // Scripted words are said even in manual play; only the end waits for the test control.
          () => (simulated.behaviour.utterances?.length ?? 0) > 0,
        );
        if (heard.kind === 'speech') {
          const words = heard.text ?? heard.audio;
          if (words) said.push(words);
        }
        return heard;
      },
      // The callee of a number ending in MACHINE_SUFFIX is a machine; its greeting is over at once.
      answeredBy: async () => (call.to.endsWith(MACHINE_SUFFIX) ? 'machine' : 'human'),
      greetingOver: async () => {},
      close: async () => (options.record ? conversationAudio(said) : undefined),
    };
  }

  /**
   * A call flow's line (simulated-line.ts says how its steps take time). A gather is a waiter of step
   * `gather`, a media stream one of step `stream`: the test control's `digits` and `completed` reach it. An
   * open line is handed out again.
   */
  callerLine(call: PbxCall): CallerLine {
    const simulated = this.call(call.id);
    if (simulated.line && simulated.line.current !== 'closed') return simulated.line;
    const line = simulatedLine({
      clock: this.clock,
      play: simulated.instant ? 'instant' : this.mode,
      script: { now: () => this.now(simulated), elapse: (seconds) => this.elapse(simulated, seconds) },
      onGather: () => this.waitForKeys(call.id, line),
      onStream: () => this.waitForKeys(call.id, line, 'stream'),
      onSay: this.mode === 'manual' ? (text) => this.spoken.keep(call.id, text) : undefined,
      speech: () => simulated.behaviour.speech,
    });
    simulated.line = line;
    return line;
  }

  /** What call flows said on the call so far, in order (manual play, APP_ENV=test; else nothing). */
  said(callId: string): string[] {
    return this.spoken.said(callId);
  }

  /** A transfer of the conversation (simulated-transfer.ts says how it plays out). */
  transfer(
    call: PbxCall,
    party: Party,
    ringSeconds: number,
    options: { keepCurrent: boolean },
  ): Promise<RingResult> | undefined {
    const simulated = this.calls.get(call.id);
    if (!simulated) return undefined;
    return simulatedTransfer(
      {
        ring: (ringing, seconds) => this.ring(call, ringing, seconds, async () => {}),
        resume: (talk) => this.resume(simulated, talk),
      },
      simulated,
      party,
      ringSeconds,
      options,
    );
  }

  /** A warm transfer's summary: taken as said to the person (kept with what was said, in manual play). */
  async announce(call: PbxCall, text: string): Promise<void> {
    if (this.mode === 'manual') this.spoken.keep(call.id, text);
  }

  hangup(callId: string, cause = 'hangup_requested'): boolean {
    const call = this.calls.get(callId);
    if (!call) return false;
    this.clearTimers(call);
    call.waiter?.hangup(this.now(call), cause);
    call.line?.hungUp(cause, this.now(call));
    return true;
  }

  release(callId: string): void {
    const call = this.calls.get(callId);
    if (!call) return;
    this.clearTimers(call);
    this.calls.delete(callId);
    for (const settled of call.onSettle.splice(0)) settled();
  }

  /**
   * The test control: what happens next on a call. Answers once the platform has taken the event in (it waits
   * on the PBX again or has ended the call), so the caller reads the call's new state. A 409 when the call is
   * not waiting on anything that takes `event`.
   */
  async drive(callId: string, event: PbxEvent, utterance?: Utterance, digits = ''): Promise<void> {
    const call = this.calls.get(callId);
    const waiter = call?.waiter;
    if (event === 'digits' && waiter?.step === 'listen') {
      const settled = this.settled(call!);
      await waiter.deliver(event, this.clock.now(), { digits });
      return settled;
    }
    if (event === 'digits') return this.press(call, digits);
    if (event === 'speech') return this.speak(call, utterance?.text ?? '');
    if (!call || !waiter)
      throw new ApiError(409, 'The call is not waiting on the PBX', { code: 'CALL_NOT_ACTIVE' });
    if (!ACCEPTS[waiter.step].includes(event)) {
      throw new ApiError(
        409,
        `The call is in its ${waiter.step} step, which takes ${ACCEPTS[waiter.step].join(', ')}; not ${event}`,
        { code: 'CALL_NOT_ACTIVE' },
      );
    }
    if (event === 'ringing') return waiter.deliver(event, this.clock.now());
    const settled = this.settled(call);
    await waiter.deliver(event, this.clock.now(), utterance);
    await settled;
  }

  /**
   * A line's gather (or media stream) waits for keys: a waiter of step `gather` (`stream`) until it ends (the
   * function returned).
   */
  private waitForKeys(callId: string, line: LineSteps, step: 'gather' | 'stream' = 'gather'): () => void {
    let stop = () => {};
    const waiting = (settle: (done: undefined) => void) => {
      stop = () => settle(undefined);
      return keysWaiter(line, step);
    };
    void this.wait<undefined>(callId, waiting, () => []);
    return () => stop();
  }

  private elapse(call: SimulatedCall, seconds: number): void {
    call.virtualNow = new Date(this.now(call).getTime() + seconds * 1000);
  }

  /** Keys to the call's open line (409 without); keys that end a gather answer once the flow moves on. */
  private async press(call: SimulatedCall | undefined, digits: string): Promise<void> {
    const line = call?.line;
    if (!call || !line?.open)
      throw new ApiError(409, 'No call flow is taking keys on this call', { code: 'CALL_NOT_ACTIVE' });
    const gather = call.waiter?.step === 'gather' ? call.waiter : undefined;
    const settled = this.settled(call);
    line.press(digits);
    if (gather && call.waiter !== gather) await settled;
  }

  /**
   * The conversation waits on the PBX again (a transfer's ring is over): the test control's events reach it,
   * and in auto play it ends by itself after the talk time, as a fresh conversation would.
   */
  private resume(call: SimulatedCall, talk: Waiter): void {
    call.waiter = talk;
    for (const settled of call.onSettle.splice(0)) settled();
    if (this.mode === 'auto' && !call.instant)
      this.playOnTimers(call, talk, [[call.behaviour.durationSeconds ?? DEFAULT_TALK_SECONDS, 'completed']]);
  }

  /** The caller's words to the gather waiting for them (409 without); answers once the flow moves on. */
  private async speak(call: SimulatedCall | undefined, text: string): Promise<void> {
    const line = call?.line;
    const gather = call?.waiter?.step === 'gather' ? call.waiter : undefined;
    if (!call || !line?.open || !gather)
      throw new ApiError(409, 'No gather is listening on this call', { code: 'CALL_NOT_ACTIVE' });
    const settled = this.settled(call);
    if (!line.heard(text))
      throw new ApiError(409, 'The gather on this call does not listen for speech', {
        code: 'CALL_NOT_ACTIVE',
      });
    await settled;
  }

  /** The parties rung on a live call, in order (what a phone number was shown is its `callerId`). */
  rungParties(callId: string): Party[] {
    return [...(this.calls.get(callId)?.rung ?? [])];
  }

  /** Resolves when the platform next waits on the PBX for this call, or releases it. */
  settled(callId: string | SimulatedCall): Promise<void> {
    const call = typeof callId === 'string' ? this.calls.get(callId) : callId;
    if (!call) return Promise.resolve();
    return new Promise((resolve) => call.onSettle.push(resolve));
  }

  /** Registers the step's waiter, then lets the script (auto, instant) play its planned events. */
  private wait<T>(
    callId: string,
    makeWaiter: (settle: (result: T) => void, fail: (error: unknown) => void) => Waiter,
    plan: (call: SimulatedCall) => PlannedEvent[],
    scriptedEvenWhenManual: () => boolean = () => false,
  ): Promise<T> {
    const call = this.call(callId);
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const finish = (then: () => void) => {
        if (done) return;
        done = true;
        if (call.waiter === waiter) call.waiter = undefined;
        this.clearTimers(call);
        then();
      };
      const fail = (error: unknown) => finish(() => reject(error));
      const waiter = makeWaiter((result) => finish(() => resolve(result)), fail);
      // Whoever delivers an event (a timer, the instant script, a test control), a failure to take it in
      // (the database gone while writing `ringing`) fails the step, and the call's program ends the call.
      const deliver = waiter.deliver;
      waiter.deliver = (event, at, utterance) => deliver(event, at, utterance).catch(fail);
      call.waiter = waiter;
      for (const settled of call.onSettle.splice(0)) settled();
      if (call.instant || (this.mode === 'manual' && scriptedEvenWhenManual())) {
        void this.playInstantly(call, waiter, plan(call));
      } else if (this.mode === 'auto') this.playOnTimers(call, waiter, plan(call));
    });
  }

  private playOnTimers(call: SimulatedCall, waiter: Waiter, plan: PlannedEvent[]): void {
    let at = 0;
    for (const [delaySeconds, event, utterance] of plan) {
      at += delaySeconds;
      const timer = setTimeout(() => {
        call.timers.delete(timer);
        if (call.waiter === waiter) void waiter.deliver(event, this.clock.now(), utterance);
      }, at * 1000);
      timer.unref();
      call.timers.add(timer);
    }
  }

  private async playInstantly(call: SimulatedCall, waiter: Waiter, plan: PlannedEvent[]): Promise<void> {
    // After the step's promise is handed back, so the platform is listening before the first event.
    await Promise.resolve();
    for (const [delaySeconds, event, utterance] of plan) {
      if (call.waiter !== waiter) return;
      // Manual play keeps the clock's time; only an instant script runs on its own.
      if (call.instant) call.virtualNow = new Date(this.now(call).getTime() + delaySeconds * 1000);
      await waiter.deliver(event, this.now(call), utterance);
    }
  }

  private call(callId: string): SimulatedCall {
    let call = this.calls.get(callId);
    if (!call) {
      call = { behaviour: {}, instant: false, timers: new Set(), onSettle: [], rung: [] };
      this.calls.set(callId, call);
    }
    return call;
  }

  private now(call: SimulatedCall): Date {
    return call.instant && call.virtualNow ? call.virtualNow : this.clock.now();
  }

  private clearTimers(call: SimulatedCall): void {
    for (const timer of call.timers) clearTimeout(timer);
    call.timers.clear();
  }
}
