// The requests a phone sends inside a call we carry: CANCEL of its unanswered INVITE, BYE, re-INVITE and UPDATE
// (hold, session refreshes, a phone that moved), and the ACK of our 2xx. Each must name one of our dialogs by
// its Call-ID and tags, in order (RFC 3261 section 12.2.2); the answers are ours alone, the other side of the
// call is not disturbed (the relay hides a side's move).
import { inDialogRefusal, namesDialog } from './dialog.ts';
import { answeringDirection, withDirection } from './sdp.ts';
import type { CallSignalling } from './signalling.ts';
import { remoteMoved, type Side, type SipCall, type SipCallTable } from './sip-call.ts';
import type { SipMessage } from './stack/index.ts';
import * as sip from './stack/index.ts';

export class DialogRequests {
  constructor(private readonly deps: { table: SipCallTable; signalling: CallSignalling }) {}

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
    const found = this.inDialog(request, respond);
    if (!found) return;
    const { call, side } = found;
    respond(sip.makeResponse(request, 200, 'OK'));
    this.deps.signalling.dialogEnded(request.headers['call-id'], side, 'BYE from the phone');
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
