// The PBX on the wire: calls placed by SIP phones, by the trunk and by the API, carried as a back-to-back user
// agent. The caller's INVITE is one dialog (we answer it), the leg to the callee's registered phone another (we
// place it), and the platform's dial plan (calls.ts) drives them through the same steps as the simulated PBX,
// so a SIP call makes the same records and events. A call the API places (POST /calls, click-to-call) has no
// caller's INVITE: we place its first leg too (third-party call control, RFC 3725 flow I with our own offer),
// and that leg then plays the caller's part. Media between the two sides is anchored on our RTP relay (rtp.ts):
// each side's SDP goes to the other with our relay's address in it, so calls can be recorded (`record`) and
// neither side needs to reach the other. Voicemail we answer ourselves: our SDP, the greeting spoken into RTP,
// the caller's RTP recorded to WAV. Re-INVITEs and UPDATEs (hold, session refreshes, a phone that moved) are
// answered by us with the SDP that side already has; the other side is not disturbed. The trunk
// (SIP_TRUNK_URI) is trusted by its address: its INVITEs to our numbers follow their voice routes, anything else
// is refused (no open relay). Out through the trunk go the legs to phone numbers: a phone dialling one, a
// forward, a click-to-call's callee, only ever for a call the platform admitted.
import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/index.ts';
import { ApiError } from '../../../platform/errors.ts';
import type { Organization, OrganizationService } from '../../organizations/index.ts';
import { concatenate, MAX_SECONDS, silence, synthesise, tone } from '../audio.ts';
import type { CallService } from '../calls.ts';
import type { ExtensionService } from '../extensions.ts';
import type {
  CallAudio,
  CallEnd,
  Party,
  Pbx,
  PbxCall,
  RingOutcome,
  RingResult,
  VoicemailGreeting,
} from '../pbx.ts';
import { RtpAgentLine } from './agent-line.ts';
import { Leg } from './leg-states.ts';
import type { Registrar } from './registrar.ts';
import {
  answeringDirection,
  answerSdp,
  type G711,
  offerSdp,
  parseOffer,
  RtpRelay,
  RtpSession,
  relaySdp,
  rtpAudio,
  withDirection,
} from './rtp.ts';
import type { SipAor, SipMessage, SipRemote, SipStack } from './stack/index.ts';
import * as sip from './stack/index.ts';

type Side = 'caller' | 'callee';

/** RFC 3261 section 8.1.1.6: every request we send carries Max-Forwards (a strict phone answers 400 without). */
const MAX_FORWARDS = 70;

/** The most phones of one extension rung at once (a desk phone, a softphone, a mobile app, and then some). */
const MAX_FORKS = 10;

/** The final answer to the caller's INVITE when the call ended without an answer. */
const FINAL_RESPONSE: Record<RingOutcome, [number, string]> = {
  answered: [200, 'OK'],
  busy: [486, 'Busy Here'],
  no_answer: [480, 'Temporarily Unavailable'],
  failed: [503, 'Service Unavailable'],
  canceled: [487, 'Request Terminated'],
};

interface Dialog {
  callId: string;
  localTag: string;
  remoteTag: string;
  /** Where in-dialog requests go: the other side's Contact. */
  remoteUri: string;
  localUri: string;
  remoteAor: string;
  cseq: number;
  /** The route set (RFC 3261 section 12.1): the Record-Route of the INVITE (we are its UAS) or, reversed, of
   * the 2xx (we are its UAC). Empty when no proxy asked to stay on the path. */
  routes: SipAor[];
  /** The life of a leg we placed (none for a caller's INVITE, which we answered). */
  leg?: Leg;
}

/** One INVITE of ours to one phone (or the trunk) while it rings, and its dialog once it answers. */
interface Fork {
  invite: SipMessage;
  localTag: string;
  /** The first final status it answered. */
  final: number | undefined;
  leg: Leg;
  dialog?: Dialog;
  /** The ACK of its 2xx, sent again for each retransmission of that 2xx. */
  ack?: SipMessage;
}

interface SipCall {
  /** The caller's INVITE (its server transaction answers through it); none on a call the API placed. */
  invite?: SipMessage;
  /** Our tag towards the caller. */
  callerTag: string;
  /** The caller's dialog: of their INVITE once we answer it, or of the first leg we placed for the API. */
  caller?: Dialog;
  /** We sent the caller a BYE, or they sent us one. */
  callerGone: boolean;
  /** The caller's INVITE has its final response. */
  answered: boolean;
  lastOutcome: RingOutcome;
  /** The callee leg's dialog once it answers. */
  callee?: Dialog;
  /** The SDP each side gave us last, and the one we gave it (a re-INVITE is answered with ours again). */
  remoteSdp: Partial<Record<Side, string>>;
  localSdp: Partial<Record<Side, string>>;
  /** The media of a call between two sides, from the first leg we place. */
  relay?: RtpRelay;
  /** Our own media with the caller (the voicemail box, an AI agent), instead of the relay's. */
  ownMedia?: RtpSession;
  /** What the current step waits for. */
  onCancel?: (cause: string) => void;
  onBye?: (from: 'caller' | 'callee' | 'api') => void;
}

export class SipPbx implements Pbx {
  readonly name = 'sip';
  readonly takesVoicemail = true;
  private readonly calls = new Map<string, SipCall>();
  /** SIP Call-ID of either leg → our call id. */
  private readonly legs = new Map<string, string>();
  private callService?: CallService;
  /** The trunk's IP address (its host looked up once). */
  private trunkAddress?: Promise<string | undefined>;

  constructor(
    private readonly deps: {
      db: Database;
      clock: Clock;
      registrar: Registrar;
      extensions: ExtensionService;
      organizations: OrganizationService;
      domain: string;
      stack: () => SipStack | undefined;
      /** Our address as phones reach it (`host:port`), for Contact headers. */
      address: () => string;
      /** Where RTP of the calls we answer binds, and the address our SDP names (the listener's). */
      mediaHosts: () => { bind: string; advertise: string } | undefined;
      /** SIP_TRUNK_URI's host and port. */
      trunk?: { host: string; port?: number };
      log: FastifyBaseLogger;
    },
  ) {}

  /** The platform's calls (set once both exist: each needs the other). */
  useCalls(calls: CallService): void {
    this.callService = calls;
  }

  // Requests from phones

  /**
   * An INVITE outside a dialog: from the trunk, a call to one of our numbers; from a phone, a call to another
   * extension of its organization, or to a phone number out through the trunk.
   */
  async invite(
    request: SipMessage,
    remote: SipRemote,
    respond: (message: SipMessage) => void,
  ): Promise<void> {
    if (await this.fromTrunk(remote)) return this.fromNetwork(request, respond);
    const authenticated = await this.deps.registrar.authenticate(request, remote);
    if ('answer' in authenticated) {
      const { status, reason, headers } = authenticated.answer;
      return respond(sip.makeResponse(request, status, reason, { headers }));
    }
    const caller = authenticated.extension;
    const target = sip.parseUri(request.uri ?? '')?.user ?? '';
    if (!/^[0-9]{2,6}$/.test(target)) {
      // A phone number: out through the trunk, if there is one; without, nothing to reach it by.
      if (!this.deps.trunk || !/^\+?[0-9]{7,15}$/.test(target)) {
        return respond(sip.makeResponse(request, 404, 'Not Found'));
      }
      return this.place(request, respond, caller, (org, track) =>
        this.callService!.fromPhoneToNumber(org, caller, target, this, track),
      );
    }
    const callee = await this.deps.extensions.store.findByNumber(
      this.deps.db,
      caller.organization_id,
      target,
    );
    if (!callee) return respond(sip.makeResponse(request, 404, 'Not Found'));
    if (callee.id === caller.id) return respond(sip.makeResponse(request, 486, 'Busy Here'));
    return this.place(request, respond, caller, (org, track) =>
      this.callService!.fromPhone(org, caller, callee, this, track),
    );
  }

  /** A phone's call admitted by the platform (`admit`); refusals answered as SIP. */
  private async place(
    request: SipMessage,
    respond: (message: SipMessage) => void,
    caller: { organization_id: string },
    admit: (org: Organization, track: (callId: string) => void) => Promise<unknown>,
  ): Promise<void> {
    respond(sip.makeResponse(request, 100, 'Trying'));
    const org = await this.deps.organizations.get(caller.organization_id);
    try {
      await admit(org, (callId) => this.track(callId, request));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const busy = error.code === 'VOICE_REGION_UNAVAILABLE';
      respond(
        sip.makeResponse(request, busy ? 503 : 403, busy ? 'Service Unavailable' : 'Forbidden', {
          headers: busy ? { 'retry-after': error.headers?.['Retry-After'] ?? '5' } : {},
        }),
      );
    }
  }

  /**
   * The trunk's INVITE: a call from the telephone network to the number in its request URI, routed by that
   * number's voice route (CallService.arrive). Not one of our numbers: 404, so the trunk can never be made to
   * relay. Refused (no voice product, suspended, no route): 480, recorded `failed`; region full: 486 busy.
   */
  private async fromNetwork(request: SipMessage, respond: (message: SipMessage) => void): Promise<void> {
    const to = sip.parseUri(request.uri ?? '')?.user ?? '';
    const from = sip.parseUri(request.headers.from?.uri ?? '')?.user ?? 'anonymous';
    respond(sip.makeResponse(request, 100, 'Trying'));
    try {
      const { program } = await this.callService!.arrive(
        { from, to },
        (callId) => this.track(callId, request),
        this,
      );
      if (!program) respond(sip.makeResponse(request, 480, 'Temporarily Unavailable'));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.code === 'VOICE_REGION_UNAVAILABLE') respond(sip.makeResponse(request, 486, 'Busy Here'));
      else if (error.status === 404) respond(sip.makeResponse(request, 404, 'Not Found'));
      else respond(sip.makeResponse(request, 480, 'Temporarily Unavailable'));
    }
  }

  /** Whether a request came from the trunk: its address, and its port when SIP_TRUNK_URI names one. */
  private async fromTrunk(remote: SipRemote): Promise<boolean> {
    const trunk = this.deps.trunk;
    if (!trunk) return false;
    this.trunkAddress ??= isIP(trunk.host)
      ? Promise.resolve(trunk.host)
      : lookup(trunk.host).then(
          (found) => found.address,
          (error) => {
            this.deps.log.warn({ err: error, host: trunk.host }, 'SIP trunk host not found');
            this.trunkAddress = undefined;
            return undefined;
          },
        );
    const address = await this.trunkAddress;
    const from = remote.address.replace(/^::ffff:/, '');
    return address === from && (trunk.port === undefined || trunk.port === remote.port);
  }

  /** Ties the caller's INVITE to our call, before its first step. */
  private track(callId: string, invite: SipMessage): void {
    this.calls.set(callId, {
      ...newCall(),
      invite,
      remoteSdp: invite.content ? { caller: invite.content } : {},
    });
    this.legs.set(invite.headers['call-id'], callId);
  }

  /** CANCEL of a caller's INVITE that has not been answered. */
  cancel(request: SipMessage, respond: (message: SipMessage) => void): void {
    const call = this.byLeg(request.headers['call-id']);
    // RFC 3261 section 9.2: the 200 to a CANCEL carries the To tag the INVITE's responses carry.
    const to = request.headers.to;
    const tag = to.params.tag ?? call?.callerTag;
    respond(
      sip.makeResponse(request, 200, 'OK', {
        headers: tag ? { to: { ...to, params: { ...to.params, tag } } } : {},
      }),
    );
    call?.onCancel?.('caller_hangup');
  }

  /** BYE from either leg. */
  bye(request: SipMessage, respond: (message: SipMessage) => void): void {
    const call = this.byLeg(request.headers['call-id']);
    if (!call) {
      respond(sip.makeResponse(request, 481, 'Call/Transaction Does Not Exist'));
      return;
    }
    respond(sip.makeResponse(request, 200, 'OK'));
    const side = this.sideOf(call, request.headers['call-id']);
    this.dialogEnded(request.headers['call-id'], side, 'BYE from the phone');
    call[side]?.leg?.move('bye');
    if (side === 'caller') call.callerGone = true;
    if (call.onBye) call.onBye(side);
    // The first leg of an API call hung up while the callee still rings.
    else if (side === 'caller') call.onCancel?.('caller_hangup');
  }

  /**
   * A re-INVITE or UPDATE inside one of our dialogs: hold and resume, a session-timer refresh, a phone whose
   * address changed. The relay follows the side's new address; the answer is the SDP that side already has
   * from us (the other side is not re-INVITEd: the relay hides the change), in the direction the offer asks.
   */
  answerReinvite(request: SipMessage, respond: (message: SipMessage) => void): void {
    const call = this.byLeg(request.headers['call-id']);
    if (!call) {
      respond(sip.makeResponse(request, 481, 'Call/Transaction Does Not Exist'));
      return;
    }
    const side = this.sideOf(call, request.headers['call-id']);
    if (request.content) this.remoteMoved(call, side, request.content);
    const ours = call.localSdp[side];
    const answer = ours && withDirection(ours, answeringDirection(request.content));
    call.localSdp[side] = answer;
    respond(
      sip.makeResponse(request, 200, 'OK', {
        headers: {
          contact: [{ uri: `sip:pbx@${this.deps.address()}`, params: {} }],
          ...(answer ? { 'content-type': 'application/sdp' } : {}),
        },
        content: answer,
      } as never),
    );
  }

  /** An ACK carrying the caller's answer (they sent their INVITE without an offer, so ours was in the 200). */
  ack(request: SipMessage): void {
    if (!request.content) return;
    const call = this.byLeg(request.headers['call-id']);
    if (!call) return;
    this.remoteMoved(call, this.sideOf(call, request.headers['call-id']), request.content);
  }

  /** A side's new SDP: kept, and the relay sends that side's media where it now says. */
  private remoteMoved(call: SipCall, side: Side, sdp: string): void {
    call.remoteSdp[side] = sdp;
    call.relay?.setRemote(side, sdp);
  }

  // The platform's steps

  ring(
    call: PbxCall,
    party: Party,
    ringSeconds: number,
    onRinging: (at: Date) => Promise<void>,
  ): Promise<RingResult> {
    const now = () => this.deps.clock.now();
    // A call the API placed: we place every leg; the first one answered plays the caller's part.
    let sipCall = this.calls.get(call.id);
    if (!sipCall) {
      sipCall = newCall();
      this.calls.set(call.id, sipCall);
    }
    const trunk = this.deps.trunk;
    if (party.kind === 'phone' && !trunk) {
      return Promise.resolve(this.outcome(sipCall, { outcome: 'failed', at: now(), cause: 'no_trunk' }));
    }
    const leg: Side = sipCall.invite || sipCall.caller ? 'callee' : 'caller';
    const current = sipCall;
    return (async () => {
      const stack = this.deps.stack();
      const hosts = this.deps.mediaHosts();
      if (!stack || !hosts) return this.outcome(current, { outcome: 'failed', at: now(), cause: 'no_sip' });
      // An extension: every phone registered to it rings at once (forking), from the caller's number; the
      // first to answer takes the call and the others are cancelled. A phone number: the trunk, with the call's
      // caller id (one of our numbers) as the From the network shows. The first leg of an API call shows the
      // number it is about to connect to.
      let uris: string[];
      let to: string;
      let fromUser: string;
      if (party.kind === 'extension') {
        const contacts = await this.deps.registrar.contacts(party.extensionId);
        if (contacts.length === 0) {
          return this.outcome(current, { outcome: 'no_answer', at: now(), cause: 'not_registered' });
        }
        uris = contacts.slice(0, MAX_FORKS).map((contact) => contact.contact);
        to = `sip:${party.extension}@${this.deps.domain}`;
        // The caller's extension number or phone number as the platform recorded it (not their SIP username).
        fromUser = leg === 'caller' && !current.invite ? call.to : call.from;
      } else {
        const host = trunk!.host.includes(':') ? `[${trunk!.host}]` : trunk!.host;
        uris = [`sip:${party.number}@${host}${trunk!.port ? `:${trunk!.port}` : ''}`];
        to = uris[0]!;
        fromUser = call.from;
      }
      if (!current.relay) {
        current.relay = await RtpRelay.open(hosts.bind);
        // A caller whose INVITE we have not answered gets no media until we do (converse): the callee's first
        // packets, forwarded before our 200 reached the caller, left some phones (baresip) silent all call.
        if (!current.invite || current.answered) current.relay.setRemote('caller', current.remoteSdp.caller);
      }
      const relay = current.relay;
      // The offer this leg gets: the caller's own, moved to our relay; without one (an API call, a caller who
      // offered nothing), ours, in the codec the caller's leg settled on when there is one.
      const callerOffer = current.invite ? current.remoteSdp.caller : undefined;
      const offer = callerOffer
        ? relaySdp(callerOffer, hosts.advertise, relay.port(leg))
        : offerSdp(hosts.advertise, relay.port(leg), codecsOf(current.remoteSdp.caller));
      current.localSdp[leg] = offer;
      // One INVITE per phone, each its own dialog (we are a back-to-back user agent, not a forking proxy).
      const forks = uris.map((uri) => {
        const localTag = randomBytes(6).toString('hex');
        const invite: SipMessage = {
          method: 'INVITE',
          uri,
          headers: {
            to: { uri: to, params: {} },
            from: { uri: `sip:${fromUser}@${this.deps.domain}`, params: { tag: localTag } },
            'call-id': randomBytes(12).toString('hex'),
            cseq: { method: 'INVITE', seq: 1 },
            via: [],
            contact: [{ uri: `sip:pbx@${this.deps.address()}`, params: {} }],
            'max-forwards': MAX_FORWARDS,
            'content-type': 'application/sdp',
          },
          content: offer,
        };
        this.legs.set(invite.headers['call-id'], call.id);
        const fork: Fork = {
          invite,
          localTag,
          final: undefined,
          leg: new Leg(invite.headers['call-id'], this.deps.log),
        };
        return fork;
      });
      return new Promise<RingResult>((resolve) => {
        let done = false;
        let ringing = false;
        // The platform's write of `ringing`: the outcome waits for it. A phone answering a millisecond after its
        // 180 had the call marked in_progress, then `ringing` again by the slower write on another connection
        // of a PostgreSQL pool (the click-to-call test that stayed ringing on PostgreSQL passes).
        let ringingWritten: Promise<void> = Promise.resolve();
        const settle = (result: RingResult) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          current.onCancel = undefined;
          // The phones still ringing stop; their Call-IDs are forgotten (a late BYE from one gets 481).
          for (const fork of forks) {
            if (fork.leg.pending) {
              fork.leg.move('cancel');
              this.cancelInvite(stack, fork.invite);
            } else if (fork.leg.state === 'refused') this.legs.delete(fork.invite.headers['call-id']);
          }
          void ringingWritten.then(() => resolve(this.outcome(current, result)));
        };
        const timer = setTimeout(
          () => settle({ outcome: 'no_answer', at: now(), cause: 'ring_timeout' }),
          ringSeconds * 1000,
        );
        timer.unref();
        current.onCancel = (cause) => settle({ outcome: 'canceled', at: now(), cause });
        for (const fork of forks) {
          stack.send(fork.invite, (response) => {
            const status = response.status ?? 500;
            if (status >= 200 && status < 300) return answered(fork, response);
            if (status >= 300) {
              fork.final ??= status;
              if (!fork.leg.move('refusal')) return;
              if (done || !forks.every((each) => each.final !== undefined)) return;
              // Every phone refused: the most telling refusal (busy over unanswered over failed).
              const finals = forks.map((each) => each.final!);
              const outcome: RingOutcome = finals.some((code) => code === 486 || code === 600 || code === 603)
                ? 'busy'
                : finals.some((code) => code === 408 || code === 480 || code === 487)
                  ? 'no_answer'
                  : 'failed';
              settle({ outcome, at: now(), cause: outcome === 'no_answer' ? 'ring_timeout' : outcome });
              return;
            }
            if (!fork.leg.move('provisional') || done) return;
            if ((status === 180 || status === 183) && !ringing) {
              ringing = true;
              ringingWritten = onRinging(now()).catch((error) =>
                this.deps.log.warn({ err: error }, 'ringing not recorded'),
              );
              if (current.invite) this.respondToCaller(current, 180, 'Ringing');
            }
          });
        }
        /**
         * A 2xx to a fork's INVITE. The same answer again (its dialog already confirmed: our ACK was lost, RFC
         * 3261 sections 13.3.1.4 and 17.1.1.2) is ACKed again and changes nothing. A first answer takes the
         * call, unless we gave up on the fork or another one won: then it is ACKed and ended with a BYE. A
         * second dialog from the same INVITE (a forking proxy beyond the trunk) is ACKed and ended too.
         */
        const answered = (fork: Fork, response: SipMessage) => {
          fork.final ??= response.status;
          const tag = String(response.headers.to.params.tag ?? '');
          if (fork.dialog && fork.ack && fork.dialog.remoteTag === tag) {
            fork.leg.move('answer_repeated');
            stack.send(fork.ack);
            return;
          }
          const dialog = this.dialogOf(response, fork.invite, fork.localTag);
          const ack = this.ackOf(dialog, fork.invite.headers.cseq.seq);
          stack.send(ack);
          if (fork.dialog) {
            this.sendBye(dialog);
            return;
          }
          fork.dialog = dialog;
          fork.ack = ack;
          dialog.leg = fork.leg;
          fork.leg.move('answer');
          if (done || fork.leg.state !== 'answered') {
            this.sendBye(dialog, 'answered after the call went elsewhere');
            this.legs.delete(fork.invite.headers['call-id']);
            return;
          }
          current[leg] = dialog;
          current.remoteSdp[leg] = response.content;
          relay.setRemote(leg, response.content);
          this.deps.log.info({ callId: call.id, side: leg, sipCallId: dialog.callId }, 'SIP dialog started');
          settle({ outcome: 'answered', at: now(), cause: 'answered' });
        };
      });
    })();
  }

  /** CANCEL of an INVITE of ours that has no final answer yet (RFC 3261 section 9.1: its Via, CSeq number). */
  private cancelInvite(stack: SipStack, invite: SipMessage): void {
    stack.send({
      method: 'CANCEL',
      uri: invite.uri,
      headers: {
        to: invite.headers.to,
        from: invite.headers.from,
        'call-id': invite.headers['call-id'],
        cseq: { method: 'CANCEL', seq: invite.headers.cseq.seq },
        via: invite.headers.via,
        'max-forwards': MAX_FORWARDS,
      },
    });
  }

  async converse(call: PbxCall, options: { record: boolean }): Promise<CallEnd & { recording?: CallAudio }> {
    const sipCall = this.calls.get(call.id);
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
      const dialog = this.callerDialog(sipCall);
      const answer = dialog && !sipCall.callerGone ? await this.sendReinvite(dialog, sdp) : undefined;
      if (answer) this.remoteMoved(sipCall, 'caller', answer);
      else relay.setRemote('caller', sipCall.remoteSdp.caller);
      if (answer === undefined) {
        // The caller is gone or refused: the person is hung up on.
        if (sipCall.callee) this.sendBye(sipCall.callee);
        this.hangUpCaller(sipCall);
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
      this.respondToCaller(sipCall, 200, 'OK', sdp);
    }
    if (options.record) relay?.startRecording(MAX_SECONDS);
    return new Promise((resolve) => {
      sipCall.onBye = (from) => {
        sipCall.onBye = undefined;
        if (from !== 'callee' && sipCall.callee) this.sendBye(sipCall.callee);
        if (from !== 'caller') this.hangUpCaller(sipCall);
        relay?.close();
        const samples = options.record ? relay?.recorded() : undefined;
        resolve({
          at: this.deps.clock.now(),
          cause: from === 'api' ? 'hangup_requested' : 'normal_clearing',
          ...(samples ? { recording: rtpAudio(samples) } : {}),
        });
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
    const sipCall = this.calls.get(call.id);
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
      sipCall.onBye = (from) => {
        if (from !== 'caller') this.hangUpCaller(sipCall);
        end(from === 'api' ? 'hangup_requested' : 'normal_clearing');
      };
      // The greeting takes its own time; the message may then last MAX_SECONDS.
      let limit: NodeJS.Timeout | undefined;
      void (async () => {
        const speech = greeting.audio ?? (await synthesise(greeting.text).catch(() => undefined)) ?? tone(1);
        await media.play(concatenate(speech, silence(0.3), tone(0.4, 1000)));
        if (ended) return;
        media.startRecording();
        limit = setTimeout(() => {
          this.hangUpCaller(sipCall);
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
    const sipCall = this.calls.get(call.id);
    const line = new RtpAgentLine({
      open: () =>
        sipCall ? this.answerWithOwnMedia(sipCall) : Promise.reject(new Error('The call has ended')),
      clock: this.deps.clock,
      record: options.record,
      // The line's end hands the call's BYEs to whatever step comes next (the transfer's ring, converse).
      onClose: () => {
        if (sipCall) sipCall.onBye = undefined;
      },
    });
    if (!sipCall) line.hungUp('normal_clearing');
    else {
      sipCall.onBye = (from) => {
        if (from !== 'caller') this.hangUpCaller(sipCall);
        line.hungUp(from === 'api' ? 'hangup_requested' : 'normal_clearing');
      };
    }
    return line;
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
        this.respondToCaller(sipCall, 488, 'Not Acceptable Here');
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
      this.respondToCaller(sipCall, 200, 'OK', ours);
    } else {
      const dialog = this.callerDialog(sipCall);
      const answer = dialog ? await this.sendReinvite(dialog, ours) : undefined;
      if (answer === undefined) {
        media.close();
        this.hangUpCaller(sipCall);
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
    const relay = this.calls.get(callId)?.relay;
    return relay && { fromCaller: relay.forwarded.caller, fromCallee: relay.forwarded.callee };
  }

  hangup(callId: string): boolean {
    const call = this.calls.get(callId);
    if (!call) return false;
    if (call.onBye) call.onBye('api');
    else call.onCancel?.('hangup_requested');
    return true;
  }

  release(callId: string): void {
    const call = this.calls.get(callId);
    if (!call) return;
    if (call.invite && !call.answered) {
      const [status, reason] = FINAL_RESPONSE[call.lastOutcome === 'answered' ? 'failed' : call.lastOutcome];
      this.respondToCaller(call, status, reason);
    } else {
      // Answered and ended by us: an AI agent that said goodbye, an API call whose first leg answered but
      // that ended before talking (the callee busy, say). Once only: a side that hung up is not sent a BYE.
      this.hangUpCaller(call);
    }
    call.relay?.close();
    call.ownMedia?.close();
    this.calls.delete(callId);
    for (const [leg, id] of this.legs) if (id === callId) this.legs.delete(leg);
  }

  /**
   * The listener is stopping: every live call's media sockets close (their timers and ringing go with the SIP
   * stack). Without this a call still ringing at shutdown kept its RTP ports bound and the process alive.
   */
  closeAll(): void {
    for (const call of this.calls.values()) {
      call.onCancel?.('hangup_requested');
      call.relay?.close();
      call.ownMedia?.close();
    }
    this.calls.clear();
    this.legs.clear();
  }

  // SIP details

  private outcome(call: SipCall | undefined, result: RingResult): RingResult {
    if (call) call.lastOutcome = result.outcome;
    return result;
  }

  private byLeg(sipCallId: string): SipCall | undefined {
    const callId = this.legs.get(sipCallId);
    return callId ? this.calls.get(callId) : undefined;
  }

  /** Which side of the call a SIP Call-ID is. */
  private sideOf(call: SipCall, sipCallId: string): Side {
    const callerCallId = call.invite?.headers['call-id'] ?? call.caller?.callId;
    return sipCallId === callerCallId ? 'caller' : 'callee';
  }

  /** A response to the caller's INVITE, our tag on its To. */
  private respondToCaller(call: SipCall, status: number, reason: string, sdp?: string): void {
    if (!call.invite) return;
    const to = call.invite.headers.to;
    const headers: Record<string, unknown> = {
      to: { ...to, params: { ...to.params, tag: call.callerTag } },
      contact: [{ uri: `sip:pbx@${this.deps.address()}`, params: {} }],
      ...(sdp ? { 'content-type': 'application/sdp' } : {}),
    };
    this.deps
      .stack()
      ?.send(sip.makeResponse(call.invite, status, reason, { headers, content: sdp } as never));
    const sipCallId = call.invite.headers['call-id'];
    if (status >= 200 && status < 300) {
      this.deps.log.info(
        { callId: this.legs.get(sipCallId), side: 'caller', sipCallId },
        'SIP dialog started',
      );
    } else if (status >= 300) this.dialogEnded(sipCallId, 'caller', `answered ${status} ${reason}`);
  }

  /** The ACK of a 2xx to our INVITE of CSeq `seq` (RFC 3261 section 13.2.2.4): built from its dialog. */
  private ackOf(dialog: Dialog, seq: number): SipMessage {
    const ack = this.inDialog(dialog, 'ACK');
    ack.headers.cseq = { method: 'ACK', seq };
    return ack;
  }

  private dialogOf(response: SipMessage, invite: SipMessage, localTag: string): Dialog {
    const contact = Array.isArray(response.headers.contact) ? response.headers.contact[0]?.uri : undefined;
    return {
      callId: response.headers['call-id'],
      localTag,
      remoteTag: String(response.headers.to.params.tag ?? ''),
      remoteUri: contact ?? invite.uri ?? '',
      localUri: invite.headers.from.uri,
      remoteAor: invite.headers.to.uri,
      cseq: invite.headers.cseq.seq,
      routes: routeSet(response.headers['record-route']).reverse(),
    };
  }

  /** Hangs up the caller's side (once), if it was ever answered. */
  private hangUpCaller(call: SipCall): void {
    if (call.callerGone) return;
    const dialog = this.callerDialog(call);
    if (!dialog) return;
    call.callerGone = true;
    this.sendBye(dialog);
  }

  /** The caller's dialog: the first leg we placed, or their INVITE's once answered (we are its UAS). */
  private callerDialog(call: SipCall): Dialog | undefined {
    if (call.caller) return call.caller;
    const invite = call.invite;
    if (!invite || !call.answered) return undefined;
    const contact = Array.isArray(invite.headers.contact) ? invite.headers.contact[0]?.uri : undefined;
    call.caller = {
      callId: invite.headers['call-id'],
      localTag: call.callerTag,
      remoteTag: String(invite.headers.from.params.tag ?? ''),
      remoteUri: contact ?? invite.headers.from.uri,
      localUri: invite.headers.to.uri,
      remoteAor: invite.headers.from.uri,
      cseq: 0,
      routes: routeSet(invite.headers['record-route']),
    };
    return call.caller;
  }

  /**
   * A re-INVITE of a dialog we hold with `sdp` as the new offer: the other side's answer ('' when its 200
   * carried none), or undefined when it refused.
   */
  private sendReinvite(dialog: Dialog, sdp: string): Promise<string | undefined> {
    const stack = this.deps.stack();
    if (!stack) return Promise.resolve(undefined);
    const invite = this.inDialog(dialog, 'INVITE');
    invite.headers.contact = [{ uri: `sip:pbx@${this.deps.address()}`, params: {} }];
    invite.headers['content-type'] = 'application/sdp';
    invite.content = sdp;
    let ack: SipMessage | undefined;
    return new Promise((resolve) => {
      stack.send(invite, (response) => {
        const status = response.status ?? 500;
        if (status < 200) return;
        if (status < 300) {
          // A retransmitted 2xx (our ACK was lost) gets the same ACK again.
          ack ??= this.ackOf(dialog, invite.headers.cseq.seq);
          stack.send(ack);
        }
        resolve(status < 300 ? (response.content ?? '') : undefined);
      });
    });
  }

  private sendBye(dialog: Dialog, outcome = 'BYE from us'): void {
    this.dialogEnded(dialog.callId, undefined, outcome);
    dialog.leg?.move('bye');
    this.deps.stack()?.send(this.inDialog(dialog, 'BYE'));
  }

  /**
   * A request of ours inside `dialog` (RFC 3261 section 12.2.1.1): to its remote target, through its route
   * set, with its next CSeq (an ACK keeps its INVITE's: ackOf) and Max-Forwards; the stack adds the Via.
   */
  private inDialog(dialog: Dialog, method: string): SipMessage {
    if (method !== 'ACK') dialog.cseq += 1;
    return {
      method,
      uri: dialog.remoteUri,
      headers: {
        to: { uri: dialog.remoteAor, params: { tag: dialog.remoteTag } },
        from: { uri: dialog.localUri, params: { tag: dialog.localTag } },
        'call-id': dialog.callId,
        cseq: { method, seq: dialog.cseq },
        via: [],
        'max-forwards': MAX_FORWARDS,
        // The stack consumes the route it sends through: each request gets its own copy.
        ...(dialog.routes.length > 0
          ? { route: dialog.routes.map((route) => ({ ...route, params: { ...route.params } })) }
          : {}),
      },
    };
  }

  /** The info line that ends a dialog's story in the log (its start is 'SIP dialog started'). */
  private dialogEnded(sipCallId: string, side: Side | undefined, outcome: string): void {
    const callId = this.legs.get(sipCallId);
    const call = callId ? this.calls.get(callId) : undefined;
    this.deps.log.info(
      { callId, side: side ?? (call && this.sideOf(call, sipCallId)), sipCallId, outcome },
      'SIP dialog ended',
    );
  }
}

function newCall(): SipCall {
  return {
    callerTag: randomBytes(6).toString('hex'),
    callerGone: false,
    answered: false,
    lastOutcome: 'failed',
    remoteSdp: {},
    localSdp: {},
  };
}

/** A Record-Route header's entries, as the stack parsed them (none: no proxy on the path). */
function routeSet(header: unknown): SipAor[] {
  return Array.isArray(header) ? (header as SipAor[]).map((route) => ({ ...route })) : [];
}

/** The G.711 laws an SDP settled on, in its order; both when it names neither (or there is none). */
function codecsOf(sdp: string | undefined): G711[] {
  const offer = parseOffer(sdp);
  return offer ? [offer.codec] : ['PCMU', 'PCMA'];
}

/** A message with nothing in it: a second of silence. */
function emptyAudio(): CallAudio {
  return rtpAudio(silence(1));
}
