// The requests a phone sends inside a call we carry: CANCEL of its unanswered INVITE, BYE, re-INVITE and UPDATE
// (hold, session refreshes, a phone that moved), INFO (a caller's keys), REFER (a transfer: refer.ts carries
// it out), and the ACK of our 2xx. A BYE in a dialog a transfer took out of the call (a transferring phone's)
// ends that dialog alone. Each must name
// one of our dialogs by its Call-ID and tags, in order (RFC 3261 section 12.2.2); the answers are ours alone,
// the other side of the call is not disturbed (the relay hides a side's move).
import { type Dialog, inDialogRefusal, namesDialog } from './dialog.ts';
import { answeringDirection, withDirection } from './sdp.ts';
import type { CallSignalling } from './signalling.ts';
import { remoteMoved, type Side, type SipCall, type SipCallTable } from './sip-call.ts';
import type { SipMessage } from './stack/index.ts';
import * as sip from './stack/index.ts';

/** The body type of keys sent in SIP INFO (a de facto format: Cisco's, which phones and trunks share). */
const DTMF_RELAY = 'application/dtmf-relay';
/** RFC 4733 events 0-15 as keys: some senders name a key by its event number (`Signal=10` for `*`). */
const EVENT_KEYS = '0123456789*#ABCD';

/** The key of a dtmf-relay body (`Signal=5\r\nDuration=160`), or undefined when it names none. */
export function dtmfRelayKey(body: string): string | undefined {
  for (const line of body.split(/\r?\n/, 16)) {
    const [name, value] = line.split('=', 2).map((part) => part.trim());
    if (name?.toLowerCase() !== 'signal' || !value) continue;
    const key = value.toUpperCase();
    if (key.length === 1 && EVENT_KEYS.includes(key)) return key;
    if (/^[0-9]{1,2}$/.test(key) && Number(key) < 16) return EVENT_KEYS[Number(key)];
    return undefined;
  }
  return undefined;
}

export class DialogRequests {
  constructor(
    private readonly deps: {
      table: SipCallTable;
      signalling: CallSignalling;
      /** A key the caller pressed, sent as SIP INFO (their call's flow line takes it, if one is open). */
      keys: (call: SipCall, key: string) => void;
      /** A REFER inside one of the call's dialogs (refer.ts), its dialog checked. */
      refer: (
        call: SipCall,
        side: Side,
        dialog: Dialog,
        request: SipMessage,
        respond: (message: SipMessage) => void,
      ) => void;
    },
  ) {}

  /** CANCEL of a caller's INVITE that has not been answered. */
  cancel(request: SipMessage, respond: (message: SipMessage) => void): void {
    const call = this.deps.table.byLeg(request.headers['call-id']);
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
    if (this.leavingBye(request, respond)) return;
    const found = this.inDialog(request, respond);
    if (!found) return;
    const { call, side } = found;
    respond(sip.makeResponse(request, 200, 'OK'));
    this.deps.signalling.dialogEnded(request.headers['call-id'], side, 'BYE from the phone');
    const dialog = side === 'caller' ? call.caller : call.callee;
    dialog?.leg?.move('bye');
    if (dialog) dialog.ended = true;
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
    const found = this.inDialog(request, respond);
    if (!found) return;
    const { call, side } = found;
    if (request.content) remoteMoved(call, side, request.content);
    const ours = call.localSdp[side];
    const answer = ours && withDirection(ours, answeringDirection(request.content));
    call.localSdp[side] = answer;
    respond(
      sip.makeResponse(request, 200, 'OK', {
        headers: {
          contact: this.deps.signalling.contact(),
          ...(answer ? { 'content-type': 'application/sdp' } : {}),
        },
        content: answer,
      } as never),
    );
  }

  /** REFER inside one of our dialogs (RFC 3515; checked like a BYE: 481 naming no dialog of ours). */
  refer(request: SipMessage, respond: (message: SipMessage) => void): void {
    const found = this.inDialog(request, respond);
    if (!found) return;
    const { call, side } = found;
    const dialog = side === 'caller' ? this.deps.signalling.callerDialog(call) : call.callee;
    if (!dialog) {
      respond(sip.makeResponse(request, 481, 'Call/Transaction Does Not Exist'));
      return;
    }
    this.deps.refer(call, side, dialog, request, respond);
  }

  /**
   * A BYE in a dialog a transfer took out of its call (the transferring phone's, after the target answered):
   * 200, and that dialog alone ends. False when the BYE names no such dialog.
   */
  private leavingBye(request: SipMessage, respond: (message: SipMessage) => void): boolean {
    const call = this.deps.table.byLeg(request.headers['call-id']);
    const dialog = call?.leaving.find(
      (each) => each.callId === request.headers['call-id'] && namesDialog(each, request),
    );
    if (!call || !dialog) return false;
    call.leaving.splice(call.leaving.indexOf(dialog), 1);
    dialog.ended = true;
    dialog.leg?.move('bye');
    respond(sip.makeResponse(request, 200, 'OK'));
    this.deps.signalling.dialogEnded(dialog.callId, undefined, 'BYE from the phone (transferred)');
    this.deps.table.dropLeg(dialog.callId);
    return true;
  }

  /**
   * INFO inside one of our dialogs (RFC 6086; checked like a BYE: 481 naming no dialog of ours). A key as
   * `application/dtmf-relay` (`Signal=5`, `Duration=160`: what phones and trunks send when keys go out of
   * band) is 200 and goes to the caller's line; an INFO without a body is 200 (a keep-alive); any other body
   * is 415 naming the one we read, and a dtmf-relay body without a key is 400.
   */
  info(request: SipMessage, respond: (message: SipMessage) => void): void {
    const found = this.inDialog(request, respond);
    if (!found) return;
    if (!request.content) {
      respond(sip.makeResponse(request, 200, 'OK'));
      return;
    }
    const type = String(request.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (type !== DTMF_RELAY) {
      respond(sip.makeResponse(request, 415, 'Unsupported Media Type', { headers: { accept: DTMF_RELAY } }));
      return;
    }
    const key = dtmfRelayKey(request.content);
    if (!key) {
      respond(sip.makeResponse(request, 400, 'Bad Request: no Signal'));
      return;
    }
    respond(sip.makeResponse(request, 200, 'OK'));
    if (found.side === 'caller') this.deps.keys(found.call, key);
  }

  /**
   * The call and side of a request inside one of our dialogs, or undefined once it has been refused: 481 when
   * its Call-ID and tags name no dialog of ours (section 12.2.2), 500 or 491 as inDialogRefusal says. A caller
   * may also end the early dialog of our 180 with a BYE (section 15), named by our tag towards them.
   */
  private inDialog(
    request: SipMessage,
    respond: (message: SipMessage) => void,
  ): { call: SipCall; side: Side } | undefined {
    const call = this.deps.table.byLeg(request.headers['call-id']);
    const side = call && this.deps.table.sideOf(call, request.headers['call-id']);
    const dialog = call && (side === 'caller' ? this.deps.signalling.callerDialog(call) : call.callee);
    const early =
      call?.invite &&
      !call.answered &&
      side === 'caller' &&
      request.method === 'BYE' &&
      request.headers.to.params.tag === call.callerTag;
    if (!call || !side || (!early && !(dialog && namesDialog(dialog, request)))) {
      respond(sip.makeResponse(request, 481, 'Call/Transaction Does Not Exist'));
      return undefined;
    }
    const refusal = dialog && inDialogRefusal(dialog, request);
    if (refusal) {
      const [status, reason] = refusal;
      respond(sip.makeResponse(request, status, reason));
      return undefined;
    }
    return { call, side };
  }

  /** An ACK carrying the caller's answer (they sent their INVITE without an offer, so ours was in the 200). */
  ack(request: SipMessage): void {
    if (!request.content) return;
    const call = this.deps.table.byLeg(request.headers['call-id']);
    if (!call) return;
    remoteMoved(call, this.deps.table.sideOf(call, request.headers['call-id']), request.content);
  }

  /**
   * Our 2xx to a caller's INVITE was never ACKed (the stack resent it for 64*T1: RFC 3261 section 13.3.1.4):
   * the caller's dialog is ended with a BYE, and the call with it, as if they had hung up.
   */
  /**
   * The phone of a leg can no longer be reached (a browser's WebSocket closed: RFC 7118 section 5, nothing else
   * leads to it): its answered dialog ends as if it had sent a BYE, since ours could not reach it, and the call
   * with it. A leg still ringing is left to its INVITE's own end (no answer comes; it times out).
   */
  connectionLost(sipCallId: string): void {
    const call = this.deps.table.byLeg(sipCallId);
    if (!call) return;
    const side = this.deps.table.sideOf(call, sipCallId);
    const dialog = side === 'caller' ? this.deps.signalling.callerDialog(call) : call.callee;
    if (!dialog || dialog.ended || dialog.callId !== sipCallId) return;
    this.deps.signalling.dialogEnded(sipCallId, side, 'connection closed');
    dialog.leg?.move('bye');
    dialog.ended = true;
    if (side === 'caller') call.callerGone = true;
    if (call.onBye) call.onBye(side);
    else if (side === 'caller') call.onCancel?.('caller_hangup');
  }

  unacknowledged(response: SipMessage): void {
    const sipCallId = response.headers['call-id'];
    const call = this.deps.table.byLeg(sipCallId);
    if (!call || response.headers.cseq.method !== 'INVITE') return;
    if (this.deps.table.sideOf(call, sipCallId) !== 'caller' || !call.invite) return;
    this.deps.signalling.hangUpCaller(call, 'our 200 was never acknowledged');
    if (call.onBye) call.onBye('caller');
    else call.onCancel?.('caller_hangup');
  }
}
