// What the SIP PBX holds of one platform call: the caller's INVITE or the first leg we placed, the callee's
// dialog, the SDP each side gave and got, the media, and what the step in progress waits for. The table finds a
// call by our call id or by the SIP Call-ID of either of its legs (a BYE, a CANCEL, a re-INVITE names only that).
import { randomBytes } from 'node:crypto';
import type { RingOutcome } from '../pbx.ts';
import type { Dialog } from './dialog.ts';
import type { RtpRelay, RtpSession } from './rtp.ts';
import type { SipMessage } from './stack/index.ts';

export type Side = 'caller' | 'callee';

export interface SipCall {
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
  /** The status of that final response: only a 2xx makes a dialog with the caller (RFC 3261 section 12.1). */
  callerFinal?: number;
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
  /** A side hung up (a BYE), or the platform did (`api`, with its cause: `hangup_requested`, `server_shutdown`). */
  onBye?: (from: 'caller' | 'callee' | 'api', cause?: string) => void;
  /** The conversation in progress (SipPbx.converse): ends it, each side still there sent a BYE, with `cause`. */
  talk?: { end(cause: string): void };
  /** A transfer under way (transfers.ts, refer.ts): its phase, and the side it replaces. */
  transfer?: SipTransferState;
  /**
   * Dialogs that are no longer a side of the call but still open: a transferring phone's, until its BYE (ours
   * or theirs). A BYE in one is answered 200 and ends only that dialog.
   */
  leaving: Dialog[];
  /**
   * The sides traded places (swapSides): the phone that placed the call transfers the one it called, who plays
   * the caller's part from then on. The platform's call still says who called whom.
   */
  swapped?: boolean;
}

/**
 * A transfer's life on a call, one table: `held` from a phone's REFER's 202 (its target is being looked up),
 * then `ringing` (the target rings as a new callee leg) or `joining` (REFER with Replaces: the phone's second
 * call's other party is re-INVITEd); a transfer the API or a flow asks for starts `ringing`. `giving` is the
 * second call of a join, whose other party is being taken. The transfer ends (the call's `transfer` goes) when
 * its ring or join does; a move the table does not allow is refused (a second transfer, a REFER's transfer
 * taken twice).
 */
export type TransferPhase = 'held' | 'ringing' | 'joining' | 'giving';
const TRANSFER_MOVES: Record<TransferPhase, Partial<Record<'ring' | 'join', TransferPhase>>> = {
  held: { ring: 'ringing', join: 'joining' },
  ringing: {},
  joining: {},
  giving: {},
};

export interface SipTransferState {
  phase: TransferPhase;
  /** The side being replaced. */
  side: Side;
  /** That side hung up already: a transferring phone may, before the target answers; the call goes on. */
  gone: boolean;
  /** The dialog of the REFER that holds the transfer (`held`). */
  referredIn?: Dialog;
}

/**
 * Starts a transfer that replaces the callee `replaced` (`ring` or `join`): the REFER's held in that dialog, or
 * a new one when none is under way. Undefined when the table refuses it.
 */
export function startTransfer(
  call: SipCall,
  move: 'ring' | 'join',
  replaced: Dialog,
): SipTransferState | undefined {
  const held = call.transfer;
  if (!held) {
    call.transfer = { phase: move === 'ring' ? 'ringing' : 'joining', side: 'callee', gone: false };
    return call.transfer;
  }
  const next = TRANSFER_MOVES[held.phase][move];
  if (!next || held.referredIn !== replaced) return undefined;
  held.phase = next;
  return held;
}

export function newCall(invite?: SipMessage): SipCall {
  return {
    ...(invite ? { invite } : {}),
    callerTag: randomBytes(6).toString('hex'),
    callerGone: false,
    answered: false,
    lastOutcome: 'failed',
    remoteSdp: invite?.content ? { caller: invite.content } : {},
    localSdp: {},
    leaving: [],
  };
}

/**
 * The caller's side and the callee's trade places, so that the phone that placed a call can transfer the party
 * it called the way an answering phone transfers its caller (transfers.ts replaces the callee): `callerDialog`
 * is the caller's confirmed dialog (of their INVITE, or the first leg we placed). From here the callee's dialog
 * plays the caller's (we are its UAC, as on a call the API placed) and the caller's INVITE is done with.
 */
export function swapSides(call: SipCall, callerDialog: Dialog): void {
  const { callee } = call;
  if (!callee) return;
  call.caller = callee;
  call.callee = callerDialog;
  call.invite = undefined;
  call.callerGone = callee.ended === true;
  call.remoteSdp = { caller: call.remoteSdp.callee, callee: call.remoteSdp.caller };
  call.localSdp = { caller: call.localSdp.callee, callee: call.localSdp.caller };
  call.relay?.swapSides();
  call.swapped = !call.swapped;
}

/** A side's new SDP: kept, and the relay sends that side's media where it now says. */
export function remoteMoved(call: SipCall, side: Side, sdp: string): void {
  call.remoteSdp[side] = sdp;
  call.relay?.setRemote(side, sdp);
}

/** Another party took a side (a transfer): as remoteMoved, and the party that left is not heard for it. */
export function partyReplaced(call: SipCall, side: Side, sdp: string): void {
  call.remoteSdp[side] = sdp;
  call.relay?.replaceParty(side, sdp);
}

export class SipCallTable {
  private readonly calls = new Map<string, SipCall>();
  /** SIP Call-ID of either leg → our call id. */
  private readonly legs = new Map<string, string>();

  get(callId: string): SipCall | undefined {
    return this.calls.get(callId);
  }

  /** The call `callId`, begun when it is not held yet (a call the API placed has no caller's INVITE). */
  open(callId: string, invite?: SipMessage): SipCall {
    let call = this.calls.get(callId);
    if (!call) {
      call = newCall(invite);
      this.calls.set(callId, call);
    }
    if (invite) this.legs.set(invite.headers['call-id'], callId);
    return call;
  }

  addLeg(sipCallId: string, callId: string): void {
    this.legs.set(sipCallId, callId);
  }

  /** A leg's Call-ID forgotten: a late request on it gets 481. */
  dropLeg(sipCallId: string): void {
    this.legs.delete(sipCallId);
  }

  /**
   * The call and side holding a dialog named by its Call-ID and our and their tags (RFC 3891's Replaces names
   * a dialog so: its Call-ID, our tag as to-tag, theirs as from-tag), or undefined.
   */
  byDialog(
    sipCallId: string,
    ourTag: string,
    theirTag: string,
    dialogOf: (call: SipCall, side: Side) => Dialog | undefined,
  ): { callId: string; call: SipCall; side: Side; dialog: Dialog } | undefined {
    const callId = this.legs.get(sipCallId);
    const call = callId ? this.calls.get(callId) : undefined;
    if (!callId || !call) return undefined;
    for (const side of ['caller', 'callee'] as const) {
      const dialog = dialogOf(call, side);
      if (dialog?.callId === sipCallId && dialog.localTag === ourTag && dialog.remoteTag === theirTag)
        return { callId, call, side, dialog };
    }
    return undefined;
  }

  callIdOf(sipCallId: string): string | undefined {
    return this.legs.get(sipCallId);
  }

  byLeg(sipCallId: string): SipCall | undefined {
    const callId = this.legs.get(sipCallId);
    return callId ? this.calls.get(callId) : undefined;
  }

  /** Which side of the call a SIP Call-ID is. */
  sideOf(call: SipCall, sipCallId: string): Side {
    const callerCallId = call.invite?.headers['call-id'] ?? call.caller?.callId;
    return sipCallId === callerCallId ? 'caller' : 'callee';
  }

  /** The call and every leg of it forgotten. */
  forget(callId: string): void {
    this.calls.delete(callId);
    for (const [leg, id] of this.legs) if (id === callId) this.legs.delete(leg);
  }

  all(): IterableIterator<SipCall> {
    return this.calls.values();
  }

  clear(): void {
    this.calls.clear();
    this.legs.clear();
  }
}
