// Transfers on the wire (docs/voice.md "Transfers"): the caller of a call in conversation is moved from the
// phone that answered to someone else. Two moves, both ours as the back-to-back user agent in the middle:
//   ring   (Pbx.transfer: the API's transfer, a phone's blind REFER) the target rings as a new callee leg on
//          the call's relay, with the caller's offer; answered, that leg is the call's callee and the one it
//          replaced leaves the call (sent a BYE, or ended by its phone). The caller is not disturbed, unless
//          the target settled on another G.711 law: then the caller is re-INVITEd to it.
//   join   (a phone's REFER with Replaces, RFC 3891: attended) the phone has a second call with the target;
//          the target's dialog of that call is re-INVITEd onto the first call's relay and becomes its callee,
//          and the second call ends (cause `transferred`) without a BYE to the target.
// While either is under way the side being replaced may hang up; the call goes on without it (SipCall.transfer).
// Both replace the callee: a REFER from the phone that placed the call first swaps the call's sides
// (sip-call.ts swapSides), so that the party it called plays the caller's part and the phone the callee's.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../../platform/clock.ts';
import type { Party, PbxCall, RingResult } from '../pbx.ts';
import type { Dialog } from './dialog.ts';
import { codecsOf, type Ringer } from './forks.ts';
import { relaySdp } from './sdp.ts';
import type { CallSignalling } from './signalling.ts';
import {
  partyReplaced,
  remoteMoved,
  type Side,
  type SipCall,
  type SipCallTable,
  startTransfer,
  swapSides,
} from './sip-call.ts';

export class SipTransfers {
  /** Dialogs a phone sent REFER in: once the target answers, refer.ts sends the final NOTIFY, then the BYE. */
  private readonly referring = new WeakSet<Dialog>();

  constructor(
    private readonly deps: {
      table: SipCallTable;
      signalling: CallSignalling;
      ringer: Ringer;
      clock: Clock;
      mediaHosts: () => { bind: string; advertise: string } | undefined;
      log: FastifyBaseLogger;
    },
  ) {}

  /** A phone sent REFER in `dialog`: its end waits for the REFER's final NOTIFY (retire). */
  referredIn(dialog: Dialog): void {
    this.referring.add(dialog);
  }

  /** Pbx.transfer: rings `party` as the call's new callee (see the header). */
  transfer(
    call: PbxCall,
    party: Party,
    ringSeconds: number,
    options: { keepCurrent: boolean },
  ): Promise<RingResult> | undefined {
    const { table, signalling, ringer } = this.deps;
    const sipCall = table.get(call.id);
    if (!sipCall?.talk) return undefined;
    // The API's and a flow's transfers move the caller away from whoever they talk with: on a call whose sides
    // a phone's REFER swapped (and whose transfer then failed), the sides go back first.
    if (sipCall.swapped && !sipCall.transfer) {
      const callerDialog = signalling.callerDialog(sipCall);
      if (callerDialog) swapSides(sipCall, callerDialog);
    }
    const replaced = sipCall.callee;
    if (!replaced) return undefined;
    const state = startTransfer(sipCall, 'ring', replaced);
    if (!state) return undefined;
    if (!options.keepCurrent) {
      signalling.sendBye(replaced, 'let go for a blind transfer');
      table.dropLeg(replaced.callId);
      state.gone = true;
    }
    // The target is shown who they will talk with: on swapped sides, the party the call's caller called.
    const shown = sipCall.swapped ? { ...call, from: call.to, to: call.from } : call;
    return ringer
      .ring(shown, party, ringSeconds, async () => {})
      .then(async (result) => {
        sipCall.transfer = undefined;
        if (result.outcome !== 'answered') {
          if (state.gone || replaced.ended) {
            // Nobody is left for the caller to talk with.
            sipCall.callee = undefined;
            sipCall.talk?.end('transfer_failed');
          }
          return result;
        }
        // The target is the call's callee now (the ringer put its dialog there).
        if (!state.gone && !replaced.ended) {
          sipCall.leaving.push(replaced);
          if (!this.referring.has(replaced)) this.retire(sipCall, replaced);
        }
        await this.followCodec(sipCall);
        return result;
      });
  }

  /**
   * REFER with Replaces: joins the caller of `into` (whose callee sent the REFER) with the other side of the
   * second call `from` (its `otherSide`, the target). False when the target refused the re-INVITE (both calls go
   * on as they were).
   */
  async join(into: SipCall, from: SipCall, otherSide: Side): Promise<boolean> {
    const { signalling, table, mediaHosts } = this.deps;
    const target = otherSide === 'callee' ? from.callee : signalling.callerDialog(from);
    const relay = into.relay;
    const hosts = mediaHosts();
    const callerSdp = into.remoteSdp.caller;
    const replaced = into.callee;
    if (!target || !relay || !hosts || !callerSdp || !replaced || !into.talk || !from.talk) return false;
    if (from.transfer || !startTransfer(into, 'join', replaced)) return false;
    const referrerSide: Side = otherSide === 'callee' ? 'caller' : 'callee';
    from.transfer = { phase: 'giving', side: referrerSide, gone: false };
    // The target gets the caller's session, on our relay's callee port of the first call.
    const sdp = relaySdp(callerSdp, hosts.advertise, relay.port('callee'));
    const answer = await signalling.sendReinvite(target, sdp);
    into.transfer = undefined;
    from.transfer = undefined;
    if (answer === undefined || !into.talk || !from.talk) return false;
    const intoId = table.callIdOf(replaced.callId);
    // The target's dialog is the first call's callee; the second call lets go of it without a BYE.
    into.callee = target;
    into.localSdp.callee = sdp;
    partyReplaced(into, 'callee', answer || from.remoteSdp[otherSide] || '');
    if (intoId) table.addLeg(target.callId, intoId);
    if (otherSide === 'callee') from.callee = undefined;
    else from.callerGone = true;
    if (!replaced.ended) into.leaving.push(replaced);
    from.talk.end('transferred');
    await this.followCodec(into);
    return true;
  }

  /** The REFER in `dialog` failed: the phone stays in the call, its dialog ends as any call's would. */
  referEnded(dialog: Dialog): void {
    this.referring.delete(dialog);
  }

  /** A dialog that left its call by a transfer is ended with a BYE, unless it ended already. */
  retire(sipCall: SipCall, dialog: Dialog): void {
    const index = sipCall.leaving.indexOf(dialog);
    if (index >= 0) sipCall.leaving.splice(index, 1);
    this.referring.delete(dialog);
    if (dialog.ended) return;
    this.deps.signalling.sendBye(dialog, 'transferred');
    this.deps.table.dropLeg(dialog.callId);
  }

  /**
   * The caller was answered in the law the first callee chose; a target that settled on the other one gets the
   * caller re-INVITEd to it (our relay passes packets, it does not transcode).
   */
  private async followCodec(sipCall: SipCall): Promise<void> {
    const hosts = this.deps.mediaHosts();
    const calleeSdp = sipCall.remoteSdp.callee;
    const relay = sipCall.relay;
    if (!hosts || !calleeSdp || !relay) return;
    if (codecsOf(calleeSdp)[0] === codecsOf(sipCall.localSdp.caller)[0]) return;
    const dialog = this.deps.signalling.callerDialog(sipCall);
    if (!dialog || sipCall.callerGone) return;
    const sdp = relaySdp(calleeSdp, hosts.advertise, relay.port('caller'));
    sipCall.localSdp.caller = sdp;
    const answer = await this.deps.signalling.sendReinvite(dialog, sdp);
    if (answer) remoteMoved(sipCall, 'caller', answer);
    else if (answer === undefined)
      this.deps.log.warn({ sipCallId: dialog.callId }, 'the caller refused the transfer target’s codec');
  }
}
