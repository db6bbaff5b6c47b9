// The PBX on the wire: calls placed by SIP phones and by the trunk, carried as a back-to-back user agent. The
// caller's INVITE is one dialog (we answer it), the leg to the callee's registered phone another (we place it),
// and the platform's dial plan (calls.ts) drives them through the same steps as the simulated PBX, so a SIP call
// makes the same records and events. Between phones, media flows as their SDP says (we pass each side's SDP to
// the other; no RTP relay yet, so those calls are not recorded). Voicemail we answer ourselves: our SDP, the
// greeting spoken into RTP, the caller's RTP recorded to WAV (rtp.ts). The trunk (SIP_TRUNK_URI) is trusted by
// its address: its INVITEs to our numbers follow their voice routes, anything else is refused (no open relay).
// Out through the trunk go the legs to phone numbers: a phone dialling one, a forward, only ever for a call the
// platform admitted for an authenticated extension or one of our numbers.
import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { SipMessage, SipRemote, SipStack } from 'sip';
import * as sip from 'sip';
import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/index.ts';
import { ApiError } from '../../../platform/errors.ts';
import type { Organization, OrganizationService } from '../../organizations/index.ts';
import { encodeWav, MAX_SECONDS, SAMPLE_RATE, silence, synthesise, tone } from '../audio.ts';
import type { CallService } from '../calls.ts';
import type { ExtensionService } from '../extensions.ts';
import type { CallAudio, CallEnd, Party, Pbx, PbxCall, RingOutcome, RingResult } from '../pbx.ts';
import type { Registrar } from './registrar.ts';
import { answerSdp, parseOffer, RtpSession } from './rtp.ts';

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
}

interface SipCall {
  /** The caller's INVITE (its server transaction answers through it). */
  invite: SipMessage;
  /** Our tag towards the caller. */
  callerTag: string;
  answered: boolean;
  lastOutcome: RingOutcome;
  /** The callee leg's INVITE while it rings (for CANCEL), then its dialog. */
  calleeInvite?: SipMessage;
  callee?: Dialog;
  calleeSdp?: string;
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
      invite,
      callerTag: randomBytes(6).toString('hex'),
      answered: false,
      lastOutcome: 'failed',
    });
    this.legs.set(invite.headers['call-id'], callId);
  }

  /** CANCEL of a caller's INVITE that has not been answered. */
  cancel(request: SipMessage, respond: (message: SipMessage) => void): void {
    respond(sip.makeResponse(request, 200, 'OK'));
    const call = this.byLeg(request.headers['call-id']);
    call?.onCancel?.('caller_hangup');
  }

  /** BYE from either leg. */
  bye(request: SipMessage, respond: (message: SipMessage) => void): void {
    const callId = this.legs.get(request.headers['call-id']);
    const call = callId ? this.calls.get(callId) : undefined;
    if (!call) {
      respond(sip.makeResponse(request, 481, 'Call/Transaction Does Not Exist'));
      return;
    }
    respond(sip.makeResponse(request, 200, 'OK'));
    call.onBye?.(request.headers['call-id'] === call.invite.headers['call-id'] ? 'caller' : 'callee');
  }

  // The platform's steps

  ring(
    call: PbxCall,
    party: Party,
    ringSeconds: number,
    onRinging: (at: Date) => Promise<void>,
  ): Promise<RingResult> {
    const sipCall = this.calls.get(call.id);
    const now = () => this.deps.clock.now();
    const trunk = this.deps.trunk;
    if (!sipCall || (party.kind === 'phone' && !trunk)) {
      return Promise.resolve(this.outcome(sipCall, { outcome: 'failed', at: now(), cause: 'no_trunk' }));
    }
    return (async () => {
      const stack = this.deps.stack();
      // An extension: its first registered phone, the caller as they dialled. A phone number: the trunk, with
      // the call's caller id (one of our numbers) as the From the network shows.
      let uri: string;
      let to: string;
      let fromUser: string;
      if (party.kind === 'extension') {
        const contacts = await this.deps.registrar.contacts(party.extensionId);
        if (contacts.length === 0 || !stack) {
          return this.outcome(sipCall, { outcome: 'no_answer', at: now(), cause: 'not_registered' });
        }
        uri = contacts[0]!.contact;
        to = `sip:${party.extension}@${this.deps.domain}`;
        fromUser = sip.parseUri(sipCall.invite.headers.from.uri)?.user ?? 'anonymous';
      } else {
        if (!stack) return this.outcome(sipCall, { outcome: 'failed', at: now(), cause: 'no_trunk' });
        const host = trunk!.host.includes(':') ? `[${trunk!.host}]` : trunk!.host;
        uri = `sip:${party.number}@${host}${trunk!.port ? `:${trunk!.port}` : ''}`;
        to = uri;
        fromUser = call.from;
      }
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
          'max-forwards': '70',
          ...(sipCall.invite.content ? { 'content-type': 'application/sdp' } : {}),
        },
        content: sipCall.invite.content ?? '',
      };
      this.legs.set(invite.headers['call-id'], call.id);
      sipCall.calleeInvite = invite;
      return new Promise<RingResult>((resolve) => {
        let done = false;
        const settle = (result: RingResult) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          sipCall.onCancel = undefined;
          resolve(this.outcome(sipCall, result));
        };
        const cancelCallee = () => {
          const cancel: SipMessage = {
            method: 'CANCEL',
            uri: invite.uri,
            headers: {
              to: invite.headers.to,
              from: invite.headers.from,
              'call-id': invite.headers['call-id'],
              cseq: { method: 'CANCEL', seq: invite.headers.cseq.seq },
              via: invite.headers.via,
            },
          };
          stack.send(cancel);
        };
        const timer = setTimeout(() => {
          cancelCallee();
          settle({ outcome: 'no_answer', at: now(), cause: 'ring_timeout' });
        }, ringSeconds * 1000);
        timer.unref();
        sipCall.onCancel = (cause) => {
          cancelCallee();
          settle({ outcome: 'canceled', at: now(), cause });
        };
        stack.send(invite, (response) => {
          const status = response.status ?? 500;
          if (done && status >= 200 && status < 300) {
            // Answered after we gave up on it: acknowledge and end that leg.
            this.acknowledge(response, invite);
            this.sendBye(this.dialogOf(response, invite, localTag));
            return;
          }
          if (status === 180 || status === 183) {
            void onRinging(now()).catch((error) =>
              this.deps.log.warn({ err: error }, 'ringing not recorded'),
            );
            this.respondToCaller(sipCall, 180, 'Ringing');
          } else if (status >= 200 && status < 300) {
            this.acknowledge(response, invite);
            sipCall.callee = this.dialogOf(response, invite, localTag);
            sipCall.calleeSdp = response.content;
            sipCall.calleeInvite = undefined;
            settle({ outcome: 'answered', at: now(), cause: 'answered' });
          } else if (status >= 300) {
            const outcome: RingOutcome =
              status === 486 || status === 600 || status === 603
                ? 'busy'
                : status === 408 || status === 480 || status === 487
                  ? 'no_answer'
                  : 'failed';
            settle({ outcome, at: now(), cause: outcome === 'no_answer' ? 'ring_timeout' : outcome });
          }
        });
      });
    })();
  }

  converse(call: PbxCall, _options: { record: boolean }): Promise<CallEnd & { recording?: CallAudio }> {
    const sipCall = this.calls.get(call.id);
    if (!sipCall) return Promise.resolve({ at: this.deps.clock.now(), cause: 'normal_clearing' });
    // The caller is answered with the callee's SDP: the phones send their media to each other.
    sipCall.answered = true;
    this.respondToCaller(sipCall, 200, 'OK', sipCall.calleeSdp);
    return new Promise((resolve) => {
      sipCall.onBye = (from) => {
        sipCall.onBye = undefined;
        if (from !== 'callee' && sipCall.callee) this.sendBye(sipCall.callee);
        if (from !== 'caller') this.sendBye(this.callerDialog(sipCall));
        resolve({
          at: this.deps.clock.now(),
          cause: from === 'api' ? 'hangup_requested' : 'normal_clearing',
        });
      };
    });
  }

  /**
   * The voicemail box answers the caller itself: 200 with our SDP, the greeting spoken (espeak-ng, else a tone)
   * and a beep into RTP, then the caller's RTP recorded until a side hangs up or ten minutes pass. A caller
   * whose offer has neither PCMU nor PCMA cannot leave a message: the step fails (the call ends `failed`,
   * `platform_error`) and the caller gets 488.
   */
  async takeVoicemail(call: PbxCall, greeting: string): Promise<CallEnd & { audio: CallAudio }> {
    const sipCall = this.calls.get(call.id);
    if (!sipCall) return { at: this.deps.clock.now(), cause: 'normal_clearing', audio: emptyAudio() };
    const offer = parseOffer(sipCall.invite.content);
    const hosts = this.deps.mediaHosts();
    if (!offer || !hosts) {
      this.respondToCaller(sipCall, 488, 'Not Acceptable Here');
      sipCall.answered = true; // Answered with the 488: release must not answer again.
      throw new Error('The caller offered no G.711 audio stream: no voicemail can be recorded');
    }
    const media = await RtpSession.open(hosts.bind, offer, MAX_SECONDS);
    sipCall.answered = true;
    this.respondToCaller(sipCall, 200, 'OK', answerSdp(hosts.advertise, media.port, offer));
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
          audio: {
            wav: encodeWav(samples),
            durationSeconds: Math.max(1, Math.ceil(samples.length / SAMPLE_RATE)),
            voice: 'rtp',
          },
        });
      };
      sipCall.onBye = (from) => {
        if (from !== 'caller') this.sendBye(this.callerDialog(sipCall));
        end(from === 'api' ? 'hangup_requested' : 'normal_clearing');
      };
      // The greeting takes its own time; the message may then last MAX_SECONDS.
      let limit: NodeJS.Timeout | undefined;
      void (async () => {
        const speech = (await synthesise(greeting).catch(() => undefined)) ?? tone(1);
        await media.play(concatenate(speech, silence(0.3), tone(0.4, 1000)));
        if (ended) return;
        media.startRecording();
        limit = setTimeout(() => {
          this.sendBye(this.callerDialog(sipCall));
          end('normal_clearing');
        }, MAX_SECONDS * 1000);
        limit.unref();
      })().catch((error) => this.deps.log.warn({ err: error, callId: call.id }, 'voicemail greeting failed'));
    });
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
    if (!call.answered) {
      const [status, reason] = FINAL_RESPONSE[call.lastOutcome === 'answered' ? 'failed' : call.lastOutcome];
      this.respondToCaller(call, status, reason);
    }
    this.calls.delete(callId);
    for (const [leg, id] of this.legs) if (id === callId) this.legs.delete(leg);
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

  /** A response to the caller's INVITE, our tag on its To. */
  private respondToCaller(call: SipCall, status: number, reason: string, sdp?: string): void {
    const to = call.invite.headers.to;
    const headers: Record<string, unknown> = {
      to: { ...to, params: { ...to.params, tag: call.callerTag } },
      contact: [{ uri: `sip:pbx@${this.deps.address()}`, params: {} }],
      ...(sdp ? { 'content-type': 'application/sdp' } : {}),
    };
    this.deps
      .stack()
      ?.send(sip.makeResponse(call.invite, status, reason, { headers, content: sdp } as never));
  }

  private acknowledge(response: SipMessage, invite: SipMessage): void {
    const contact = Array.isArray(response.headers.contact) ? response.headers.contact[0]?.uri : undefined;
    this.deps.stack()?.send({
      method: 'ACK',
      uri: contact ?? invite.uri ?? '',
      headers: {
        to: response.headers.to,
        from: response.headers.from,
        'call-id': response.headers['call-id'],
        cseq: { method: 'ACK', seq: response.headers.cseq.seq },
        via: [],
      },
    });
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
    };
  }

  /** The caller's dialog seen from our side (we are its UAS). */
  private callerDialog(call: SipCall): Dialog {
    const invite = call.invite;
    const contact = Array.isArray(invite.headers.contact) ? invite.headers.contact[0]?.uri : undefined;
    return {
      callId: invite.headers['call-id'],
      localTag: call.callerTag,
      remoteTag: String(invite.headers.from.params.tag ?? ''),
      remoteUri: contact ?? invite.headers.from.uri,
      localUri: invite.headers.to.uri,
      remoteAor: invite.headers.from.uri,
      cseq: 0,
    };
  }

  private sendBye(dialog: Dialog): void {
    dialog.cseq += 1;
    this.deps.stack()?.send({
      method: 'BYE',
      uri: dialog.remoteUri,
      headers: {
        to: { uri: dialog.remoteAor, params: { tag: dialog.remoteTag } },
        from: { uri: dialog.localUri, params: { tag: dialog.localTag } },
        'call-id': dialog.callId,
        cseq: { method: 'BYE', seq: dialog.cseq },
        via: [],
      },
    });
  }
}

function concatenate(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** A message with nothing in it: a second of silence. */
function emptyAudio(): CallAudio {
  return { wav: encodeWav(silence(1)), durationSeconds: 1, voice: 'rtp' };
}
