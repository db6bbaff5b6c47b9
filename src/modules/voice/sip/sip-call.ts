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
  onBye?: (from: 'caller' | 'callee' | 'api') => void;
  /** The conversation in progress (SipPbx.converse): ends it, each side still there sent a BYE, with `cause`. */
  talk?: { end(cause: string): void };
  /**
   * A transfer under way (transfers.ts): the side being replaced, and whether that side hung up already (a
   * transferring phone may hang up before the target answers; the call goes on without it). A phone's REFER
   * holds it from its 202 (`referredIn`, its dialog), before the platform has looked its target up, and the
   * transfer it asked for takes it over (`claimed`).
   */
  transfer?: SipTransferState;
  /**
   * Dialogs that are no longer a side of the call but still open: a transferring phone's, until its BYE (ours
   * or theirs). A BYE in one is answered 200 and ends only that dialog.
   */
  leaving: Dialog[];
}

export interface SipTransferState {
  side: Side;
  gone: boolean;
  referredIn?: Dialog;
  claimed?: boolean;
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

/** A side's new SDP: kept, and the relay sends that side's media where it now says. */
export function remoteMoved(call: SipCall, side: Side, sdp: string): void {
  call.remoteSdp[side] = sdp;
  call.relay?.setRemote(side, sdp);
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
