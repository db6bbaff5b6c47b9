// The PBX on the wire: calls placed by SIP phones, by the trunk and by the API, carried as a back-to-back user
// agent. The caller's INVITE is one dialog (we answer it), the leg to the callee's registered phone another (we
// place it), and the platform's dial plan drives them through the same steps as the simulated PBX, so a SIP
// call makes the same records and events. A call the API places (POST /calls, click-to-call) has no caller's
// INVITE: we place its first leg too (third-party call control, RFC 3725 flow I with our own offer), and that
// leg then plays the caller's part. Media between the two sides is anchored on our RTP relay (rtp.ts): each
// side's SDP goes to the other with our relay's address in it, so calls can be recorded (`record`) and neither
// side needs to reach the other. Voicemail we answer ourselves: our SDP, the greeting spoken into RTP, the
// caller's RTP recorded to WAV. Re-INVITEs and UPDATEs (hold, session refreshes, a phone that moved) are
// answered by us with the SDP that side already has; the other side is not disturbed.
// The parts: invites.ts (the INVITEs that begin calls), forks.ts (ringing a party), signalling.ts (what we send
// on a call's dialogs), dialog.ts (dialogs and the requests built from them), sip-call.ts (what we hold of a call).
import { concatenate, MAX_SECONDS, silence, synthesise, tone } from '../audio.ts';
import type { CallService } from '../calls.ts';
import type { LineSteps } from '../line-steps.ts';
import type {
  CallAudio,
  CallEnd,
  CallerLine,
  Party,
  Pbx,
  PbxCall,
  RingOutcome,
  RingResult,
  VoicemailGreeting,
} from '../pbx.ts';
import { RtpAgentLine } from './agent-line.ts';
import { announceToCallee } from './announce.ts';
import { callerLineOf } from './caller-line.ts';
import { DialogRequests } from './dialog-requests.ts';
import { codecsOf, Ringer } from './forks.ts';
import { InviteEntry } from './invites.ts';
import type { SipPbxDeps } from './pbx-deps.ts';
import { parseReplaces, ReferHandler } from './refer.ts';
import { RtpSession, rtpAudio } from './rtp.ts';
import { answerSdp, offerSdp, parseOffer, relaySdp } from './sdp.ts';
import { CallSignalling } from './signalling.ts';
import { remoteMoved, type SipCall, SipCallTable } from './sip-call.ts';
import type { SipMessage, SipRemote } from './stack/index.ts';
import { SipTransfers } from './transfers.ts';

/** The final answer to the caller's INVITE when the call ended without an answer. */
const FINAL_RESPONSE: Record<RingOutcome, [number, string]> = {
  answered: [200, 'OK'],
  busy: [486, 'Busy Here'],
  no_answer: [480, 'Temporarily Unavailable'],
  failed: [503, 'Service Unavailable'],
  canceled: [487, 'Request Terminated'],
};

export class SipPbx implements Pbx {
  readonly name = 'sip';
  readonly takesVoicemail = true;
  private readonly table = new SipCallTable();
  private readonly signalling: CallSignalling;
  private readonly ringer: Ringer;
  private readonly entry: InviteEntry;
  private readonly requests: DialogRequests;
  private readonly transfers: SipTransfers;
  /** Each call's open call-flow line: the keys of the caller's SIP INFO go there. */
  private readonly lines = new WeakMap<SipCall, LineSteps>();
  /** Each call's agent line: the keys of the caller's SIP INFO go there when no flow line is open. */
  private readonly agentLines = new WeakMap<SipCall, RtpAgentLine>();
  private callService?: CallService;

  constructor(private readonly deps: SipPbxDeps) {
    const table = this.table;
    this.signalling = new CallSignalling({ stack: deps.stack, address: deps.address, table, log: deps.log });
    this.ringer = new Ringer({ ...deps, table, signalling: this.signalling });
    this.transfers = new SipTransfers({ ...deps, table, signalling: this.signalling, ringer: this.ringer });
    const refers = new ReferHandler({
      ...deps,
      table,
      signalling: this.signalling,
      transfers: this.transfers,
      calls: () => this.calls(),
    });
    this.requests = new DialogRequests({
      table,
      signalling: this.signalling,
      keys: (call, key) => (this.lines.get(call) ?? this.agentLines.get(call))?.press(key),
      refer: (call, side, dialog, request, respond) => refers.refer(call, side, dialog, request, respond),
    });
    this.entry = new InviteEntry({
      ...deps,
      pbx: this,
      calls: () => this.calls(),
      track: (callId, invite) => table.open(callId, invite),
      replacesDialog: (value) => {
        const named = parseReplaces(value);
        return Boolean(
          named &&
            table.byDialog(named.callId, named.toTag, named.fromTag, (each, side) =>
              side === 'caller' ? this.signalling.callerDialog(each) : each.callee,
            ),
        );
      },
    });
  }

  /** The platform's calls (set once both exist: each needs the other). */
  useCalls(calls: CallService): void {
    this.callService = calls;
  }

  private calls(): CallService {
    if (!this.callService) throw new Error('The SIP PBX has no call service yet');
    return this.callService;
  }

  // Requests from phones

  /** An INVITE outside a dialog: a call from the trunk or from a phone (invites.ts). */
  invite(request: SipMessage, remote: SipRemote, respond: (message: SipMessage) => void): Promise<void> {
    return this.entry.invite(request, remote, respond);
  }

  /** CANCEL of a caller's INVITE that has not been answered (dialog-requests.ts, as are the next four). */
  cancel(request: SipMessage, respond: (message: SipMessage) => void): void {
    this.requests.cancel(request, respond);
  }

  bye(request: SipMessage, respond: (message: SipMessage) => void): void {
    this.requests.bye(request, respond);
  }

  answerReinvite(request: SipMessage, respond: (message: SipMessage) => void): void {
    this.requests.answerReinvite(request, respond);
  }

  ack(request: SipMessage): void {
    this.requests.ack(request);
  }

  /** INFO inside a call: the caller's keys as `application/dtmf-relay`. */
  info(request: SipMessage, respond: (message: SipMessage) => void): void {
    this.requests.info(request, respond);
  }

  /** REFER inside a call: a phone's transfer (refer.ts). */
  refer(request: SipMessage, respond: (message: SipMessage) => void): void {
    this.requests.refer(request, respond);
  }

  unacknowledged(response: SipMessage): void {
    this.requests.unacknowledged(response);
  }

  /** The phone of the leg `sipCallId` went away with its connection (a browser's WebSocket). */
  connectionLost(sipCallId: string): void {
    this.requests.connectionLost(sipCallId);
  }

  // The platform's steps

  ring(
    call: PbxCall,
    party: Party,
    ringSeconds: number,
    onRinging: (at: Date) => Promise<void>,
  ): Promise<RingResult> {
    return this.ringer.ring(call, party, ringSeconds, onRinging);
  }

  async converse(call: PbxCall, options: { record: boolean }): Promise<CallEnd & { recording?: CallAudio }> {
    const sipCall = this.table.get(call.id);
    if (!sipCall) return { at: this.deps.clock.now(), cause: 'normal_clearing' };
    const relay = sipCall.relay;
    const hosts = this.deps.mediaHosts();
    const calleeSdp = sipCall.remoteSdp.callee;
    if (sipCall.ownMedia && relay && hosts && calleeSdp) {
      // The caller talked with our own media (an AI agent that transferred them): a re-INVITE moves them onto
      // the relay, towards the person who answered.
      const sdp = relaySdp(calleeSdp, hosts.advertise, relay.port('caller'));
      sipCall.ownMedia.close();
      sipCall.ownMedia = undefined;
      sipCall.localSdp.caller = sdp;
      const dialog = this.signalling.callerDialog(sipCall);
      const answer =
        dialog && !sipCall.callerGone ? await this.signalling.sendReinvite(dialog, sdp) : undefined;
      if (answer) remoteMoved(sipCall, 'caller', answer);
      else relay.setRemote('caller', sipCall.remoteSdp.caller);
      if (answer === undefined) {
        // The caller is gone or refused: the person is hung up on.
        if (sipCall.callee) this.signalling.sendBye(sipCall.callee);
        this.signalling.hangUpCaller(sipCall);
        return { at: this.deps.clock.now(), cause: 'normal_clearing' };
      }
    } else if (sipCall.invite && !sipCall.answered) {
      // The caller is answered with the callee's SDP moved to our relay; a caller who offered nothing gets
      // our offer in the callee's codec and answers in the ACK.
      const sdp =
        relay && hosts && calleeSdp
          ? sipCall.invite.content
            ? relaySdp(calleeSdp, hosts.advertise, relay.port('caller'))
            : offerSdp(hosts.advertise, relay.port('caller'), codecsOf(calleeSdp))
          : undefined;
      sipCall.localSdp.caller = sdp;
      sipCall.answered = true;
      relay?.setRemote('caller', sipCall.remoteSdp.caller);
      this.signalling.respondToCaller(sipCall, 200, 'OK', sdp);
    }
    if (options.record) relay?.startRecording(MAX_SECONDS);
    return new Promise((resolve) => {
      // Ends the conversation: each side still there is sent a BYE (`from` sent its own), a transfer's ring
      // stops, and the media goes. The relay is read as it is then: after a transfer it carries the target.
      const end = (from: 'caller' | 'callee' | undefined, cause: string) => {
        sipCall.onBye = undefined;
        sipCall.talk = undefined;
        if (sipCall.transfer) sipCall.onCancel?.(cause);
        if (
          from !== 'callee' &&
          sipCall.callee &&
          !(sipCall.transfer?.side === 'callee' && sipCall.transfer.gone)
        )
          this.signalling.sendBye(sipCall.callee);
        if (from !== 'caller') this.signalling.hangUpCaller(sipCall);
        const current = sipCall.relay;
        current?.close();
        const samples = options.record ? current?.recorded() : undefined;
        resolve({ at: this.deps.clock.now(), cause, ...(samples ? { recording: rtpAudio(samples) } : {}) });
      };
      sipCall.talk = { end: (cause) => end(undefined, cause) };
      sipCall.onBye = (from, cause) => {
        // The side a transfer replaces hung up while the target rings: the call goes on without it.
        if (from !== 'api' && sipCall.transfer?.side === from) {
          sipCall.transfer.gone = true;
          return;
        }
        end(
          from === 'api' ? undefined : from,
          from === 'api' ? (cause ?? 'hangup_requested') : 'normal_clearing',
        );
      };
    });
  }

  /**
   * The voicemail box answers the caller itself: 200 with our SDP, the greeting (the uploaded audio, else its
   * text spoken by espeak-ng, else a tone) and a beep into RTP, then the caller's RTP recorded until a side
   * hangs up or ten minutes pass. A caller
   * whose offer has neither PCMU nor PCMA cannot leave a message: the step fails (the call ends `failed`,
   * `platform_error`) and the caller gets 488.
   */
  async takeVoicemail(call: PbxCall, greeting: VoicemailGreeting): Promise<CallEnd & { audio: CallAudio }> {
    const sipCall = this.table.get(call.id);
    if (!sipCall) return { at: this.deps.clock.now(), cause: 'normal_clearing', audio: emptyAudio() };
    const media = await this.answerWithOwnMedia(sipCall);
    return new Promise((resolve) => {
      let ended = false;
      const end = (cause: string) => {
        if (ended) return;
        ended = true;
        clearTimeout(limit);
        sipCall.onBye = undefined;
        media.close();
        const samples = media.recorded();
        resolve({
          at: this.deps.clock.now(),
          cause,
          audio: rtpAudio(samples),
        });
      };
      sipCall.onBye = (from, cause) => {
        if (from !== 'caller') this.signalling.hangUpCaller(sipCall);
        end(from === 'api' ? (cause ?? 'hangup_requested') : 'normal_clearing');
      };
      // The greeting takes its own time; the message may then last MAX_SECONDS.
      let limit: NodeJS.Timeout | undefined;
      void (async () => {
        const speech = greeting.audio ?? (await synthesise(greeting.text).catch(() => undefined)) ?? tone(1);
        await media.play(concatenate(speech, silence(0.3), tone(0.4, 1000)));
        if (ended) return;
        media.startRecording();
        limit = setTimeout(() => {
          this.signalling.hangUpCaller(sipCall);
          end('normal_clearing');
        }, MAX_SECONDS * 1000);
        limit.unref();
      })().catch((error) => this.deps.log.warn({ err: error, callId: call.id }, 'voicemail greeting failed'));
    });
  }

  /**
   * An AI agent on the call: answered with our own media (the caller's INVITE, or the first leg of a call the
   * API placed, re-INVITEd from the relay), the agent's words spoken into it and the caller's cut into
   * utterances (agent-line.ts). A transfer moves the caller back onto the relay, towards the person (converse).
   */
  agentLine(call: PbxCall, options: { record: boolean }): RtpAgentLine {
    const sipCall = this.table.get(call.id);
    const line = new RtpAgentLine({
      open: () =>
        sipCall ? this.answerWithOwnMedia(sipCall) : Promise.reject(new Error('The call has ended')),
      clock: this.deps.clock,
      record: options.record,
      // The line's end hands the call's BYEs to whatever step comes next (the transfer's ring, converse).
      onClose: () => {
        if (!sipCall) return;
        sipCall.onBye = undefined;
        this.agentLines.delete(sipCall);
      },
    });
    if (!sipCall) line.hungUp('normal_clearing');
    else {
      this.agentLines.set(sipCall, line);
      sipCall.onBye = (from, cause) => {
        if (from !== 'caller') this.signalling.hangUpCaller(sipCall);
        line.hungUp(from === 'api' ? (cause ?? 'hangup_requested') : 'normal_clearing');
      };
    }
    return line;
  }

  /**
   * A call flow's line (caller-line.ts): the caller answered with our own media on its first step, keys by
   * RFC 4733 or SIP INFO. Closed, a dial's converse moves the caller onto the relay, as after an agent.
   */
  callerLine(call: PbxCall): CallerLine {
    return callerLineOf(this.table.get(call.id), {
      lines: this.lines,
      open: (sipCall) => this.answerWithOwnMedia(sipCall),
      hangUpCaller: (sipCall) => this.signalling.hangUpCaller(sipCall),
      clock: this.deps.clock,
      speechToText: this.deps.speechToText,
      log: this.deps.log,
    });
  }

  /**
   * Answers the caller with media of our own (the voicemail box, an AI agent): an RTP session in the codec
   * the caller offered, in our 200 to their INVITE, or in a re-INVITE of a leg answered already (an API call's
   * first leg, a caller the agent answered before the voicemail). A caller whose offer has neither PCMU nor
   * PCMA gets 488 and the step fails.
   */
  private async answerWithOwnMedia(sipCall: SipCall): Promise<RtpSession> {
    const offer = parseOffer(sipCall.remoteSdp.caller);
    const hosts = this.deps.mediaHosts();
    if (!offer || !hosts) {
      if (sipCall.invite && !sipCall.answered) {
        this.signalling.respondToCaller(sipCall, 488, 'Not Acceptable Here');
        sipCall.answered = true; // Answered with the 488: release must not answer again.
      }
      throw new Error('The caller offered no G.711 audio stream: we cannot speak with them');
    }
    sipCall.relay?.close();
    sipCall.relay = undefined;
    sipCall.ownMedia?.close();
    const media = await RtpSession.open(hosts.bind, offer, MAX_SECONDS);
    const ours = answerSdp(hosts.advertise, media.port, offer);
    sipCall.localSdp.caller = ours;
    if (sipCall.invite && !sipCall.answered) {
      sipCall.answered = true;
      this.signalling.respondToCaller(sipCall, 200, 'OK', ours);
    } else {
      const dialog = this.signalling.callerDialog(sipCall);
      const answer = dialog ? await this.signalling.sendReinvite(dialog, ours) : undefined;
      if (answer === undefined) {
        media.close();
        this.signalling.hangUpCaller(sipCall);
        throw new Error('The caller refused the re-INVITE to our media');
      }
      if (answer) sipCall.remoteSdp.caller = answer;
    }
    sipCall.ownMedia = media;
    return media;
  }

  /**
   * RTP packets our relay has passed each way on a live call (none: the call is not ours, or has no relay):
   * one-way audio shows here as one side at zero.
   */
  mediaOf(callId: string): { fromCaller: number; fromCallee: number } | undefined {
    const relay = this.table.get(callId)?.relay;
    return relay && { fromCaller: relay.forwarded.caller, fromCallee: relay.forwarded.callee };
  }

  /** A transfer of the conversation (transfers.ts). */
  transfer(
    call: PbxCall,
    party: Party,
    ringSeconds: number,
    options: { keepCurrent: boolean },
  ): Promise<RingResult> | undefined {
    return this.transfers.transfer(call, party, ringSeconds, options);
  }

  /** A warm transfer's summary to the person who answered (announce.ts). */
  async announce(call: PbxCall, text: string, voice?: string): Promise<void> {
    const sipCall = this.table.get(call.id);
    if (sipCall) await announceToCallee(sipCall, text, voice);
  }

  hangup(callId: string, cause = 'hangup_requested'): boolean {
    const call = this.table.get(callId);
    if (!call) return false;
    if (call.onBye) call.onBye('api', cause);
    else call.onCancel?.(cause);
    return true;
  }

  release(callId: string): void {
    const call = this.table.get(callId);
    if (!call) return;
    if (call.invite && !call.answered) {
      const [status, reason] = FINAL_RESPONSE[call.lastOutcome === 'answered' ? 'failed' : call.lastOutcome];
      this.signalling.respondToCaller(call, status, reason);
    } else {
      // Answered and ended by us: an AI agent that said goodbye, an API call whose first leg answered but
      // that ended before talking (the callee busy, say). Once only: a side that hung up is not sent a BYE.
      this.signalling.hangUpCaller(call);
    }
    call.relay?.close();
    call.ownMedia?.close();
    this.table.forget(callId);
  }

  /** Resolves when every BYE we sent has its final response (a stopping listener waits, within a bound). */
  byesAnswered(): Promise<void> {
    return this.signalling.byesAnswered();
  }

  /**
   * The listener is stopping: every live call's media sockets close (their timers and ringing go with the SIP
   * stack). Without this a call still ringing at shutdown kept its RTP ports bound and the process alive.
   */
  closeAll(): void {
    for (const call of this.table.all()) {
      call.onCancel?.('hangup_requested');
      call.relay?.close();
      call.ownMedia?.close();
    }
    this.table.clear();
  }
}

/** A message with nothing in it: a second of silence. */
function emptyAudio(): CallAudio {
  return rtpAudio(silence(1));
}
