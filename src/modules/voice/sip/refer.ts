// A phone's transfer: REFER (RFC 3515) inside the dialog of a call it is in. Refer-To names the target: an
// extension number or a phone number (blind), or, with `?Replaces=` (RFC 3891), the phone's own second call
// with the target (attended). We answer 202 Accepted and report on the implicit subscription with NOTIFYs in the
// same dialog (RFC 3515 section 2.4.4 to 2.4.7): Event `refer;id=<the REFER's CSeq>`, a `message/sipfrag` body
// of one status line, `SIP/2.0 100 Trying` (Subscription-State active) and then the outcome's final status line
// (Subscription-State terminated), one NOTIFY outstanding at a time (RFC 6665 section 4.2.2). A transfer that
// reached its target ends the phone's dialog with a BYE after that last NOTIFY. Either phone of a call
// transfers: the one that answered moves its caller, the one that placed the call moves the party it called
// (the call's sides are swapped first: sip-call.ts swapSides). Refusals of the REFER itself: 400 without a
// Refer-To, 416 for a Refer-To that is not a SIP URI, 403 when the call is not a conversation, 491 while a
// transfer of it is under way. A Replaces naming no dialog of ours is 202 then NOTIFY `481`, as the INVITE with Replaces would
// have been answered (RFC 3891 section 3).
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../../platform/clock.ts';
import type { CallService } from '../calls.ts';
import type { RingOutcome } from '../pbx.ts';
import { SUPPORTED } from './capabilities.ts';
import { type Dialog, inDialogRequest } from './dialog.ts';
import type { CallSignalling } from './signalling.ts';
import { type Side, type SipCall, type SipCallTable, type SipTransferState, swapSides } from './sip-call.ts';
import type { SipMessage, SipStack } from './stack/index.ts';
import * as sip from './stack/index.ts';
import type { SipTransfers } from './transfers.ts';

/** The longest Refer-To URI or Replaces value we read (a phone's is well under 300 characters). */
const MAX_REFER_TO = 1024;
/** How long the implicit subscription lasts if nothing ends it first (RFC 3515 section 2.4.6 leaves it to us). */
const SUBSCRIPTION_SECONDS = 60;

/** A Replaces header value (RFC 3891 section 6.1): a Call-ID, the recipient's tag and the sender's. */
export interface Replaces {
  callId: string;
  toTag: string;
  fromTag: string;
}

/** The sipfrag status line a transfer's end reports (the status its INVITE would have had). */
const FINAL_FRAG: Record<RingOutcome | 'unknown_target' | 'not_talking' | 'no_dialog', string> = {
  answered: '200 OK',
  busy: '486 Busy Here',
  no_answer: '480 Temporarily Unavailable',
  failed: '503 Service Unavailable',
  canceled: '487 Request Terminated',
  unknown_target: '404 Not Found',
  not_talking: '503 Service Unavailable',
  no_dialog: '481 Call/Transaction Does Not Exist',
};

/**
 * What Refer-To asks for: the dialled user part (an extension or a phone number) and, attended, the dialog
 * its Replaces names; undefined when it is not a SIP URI we read.
 */
export function referTarget(uri: string): { dialled: string; replaces?: Replaces } | undefined {
  if (uri.length > MAX_REFER_TO || !/^sips?:/i.test(uri)) return undefined;
  const question = uri.indexOf('?');
  const address = question < 0 ? uri : uri.slice(0, question);
  const dialled = sip.parseUri(address)?.user ?? '';
  if (!dialled) return undefined;
  if (question < 0) return { dialled };
  let replaces: Replaces | undefined;
  for (const pair of uri.slice(question + 1).split('&', 16)) {
    const equals = pair.indexOf('=');
    if (equals < 0 || pair.slice(0, equals).toLowerCase() !== 'replaces') continue;
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(equals + 1));
    } catch {
      return undefined;
    }
    replaces = parseReplaces(value);
    if (!replaces) return undefined;
  }
  return { dialled, ...(replaces ? { replaces } : {}) };
}

/** A Replaces value: `call-id;to-tag=…;from-tag=…` (early-only and other parameters ignored). */
export function parseReplaces(value: string): Replaces | undefined {
  if (value.length > MAX_REFER_TO) return undefined;
  const [callId, ...params] = value.split(';', 16).map((part) => part.trim());
  const tags: Record<string, string> = {};
  for (const param of params) {
    const equals = param.indexOf('=');
    if (equals > 0) tags[param.slice(0, equals).trim().toLowerCase()] = param.slice(equals + 1).trim();
  }
  if (!callId || /\s/.test(callId) || !tags['to-tag'] || !tags['from-tag']) return undefined;
  return { callId, toTag: tags['to-tag'], fromTag: tags['from-tag'] };
}

export class ReferHandler {
  constructor(
    private readonly deps: {
      table: SipCallTable;
      signalling: CallSignalling;
      transfers: SipTransfers;
      stack: () => SipStack | undefined;
      calls: () => CallService;
      clock: Clock;
      log: FastifyBaseLogger;
    },
  ) {}

  /** A REFER in `dialog`, the `side` of `call` (its dialog checked by dialog-requests.ts). */
  refer(
    call: SipCall,
    side: Side,
    dialog: Dialog,
    request: SipMessage,
    respond: (message: SipMessage) => void,
  ): void {
    const referTo = request.headers['refer-to'] as { uri?: string } | undefined;
    const wanted = referTo?.uri ? referTarget(referTo.uri) : undefined;
    const callId = this.deps.table.callIdOf(dialog.callId);
    const refusal: [number, string] | undefined = !referTo?.uri
      ? [400, 'Bad Request: no Refer-To']
      : !wanted
        ? [416, 'Unsupported URI Scheme']
        : !call.talk
          ? [403, 'Not In A Conversation']
          : call.transfer
            ? [491, 'Request Pending']
            : !callId
              ? [481, 'Call/Transaction Does Not Exist']
              : undefined;
    if (refusal || !wanted || !callId) {
      const [status, reason] = refusal ?? [500, 'Server Internal Error'];
      respond(sip.makeResponse(request, status, reason));
      return;
    }
    respond(
      sip.makeResponse(request, 202, 'Accepted', {
        headers: { contact: this.deps.signalling.contact(), supported: SUPPORTED },
      } as never),
    );
    // The phone that placed the call transfers the party it called: that party plays the caller's part now.
    if (side === 'caller') swapSides(call, dialog);
    // The transfer is the call's from now on: a phone that hangs up before the target answers (some do so
    // right after this 202) leaves the call to go on without it.
    const held: SipTransferState = { phase: 'held', side: 'callee', gone: false, referredIn: dialog };
    call.transfer = held;
    const event = `refer;id=${request.headers.cseq.seq}`;
    const notices = this.notify(dialog, event, '100 Trying', false);
    this.deps.transfers.referredIn(dialog);
    void (async () => {
      const outcome = wanted.replaces
        ? await this.attended(call, callId, wanted.replaces)
        : await this.blind(callId, wanted.dialled);
      if (call.transfer === held) call.transfer = undefined;
      // It never reached anyone, and the phone has gone: nobody is left for the caller.
      if (outcome !== 'answered' && held.gone) call.talk?.end('transfer_failed');
      await notices;
      await this.notify(dialog, event, FINAL_FRAG[outcome], true);
      // Reached: the phone's dialog has left the call and ends now. Not: the phone still talks with the caller.
      if (outcome === 'answered') this.deps.transfers.retire(call, dialog);
      else this.deps.transfers.referEnded(dialog);
    })().catch((error) => this.deps.log.error({ err: error, callId }, 'transfer by REFER failed'));
  }

  /** A blind transfer: the platform rings what the phone dialled for the other party. */
  private async blind(callId: string, dialled: string): Promise<keyof typeof FINAL_FRAG> {
    const result = await this.deps.calls().transferFromPhone(callId, dialled);
    return typeof result === 'string' ? result : result.outcome;
  }

  /** An attended transfer: the other party is joined to the target of the phone's second call. */
  private async attended(
    call: SipCall,
    callId: string,
    replaces: Replaces,
  ): Promise<keyof typeof FINAL_FRAG> {
    const { table, signalling, transfers } = this.deps;
    const found = table.byDialog(replaces.callId, replaces.toTag, replaces.fromTag, (each, side) =>
      side === 'caller' ? signalling.callerDialog(each) : each.callee,
    );
    if (!found || found.call === call) return 'no_dialog';
    const platform = this.deps.calls().transfers;
    if (!platform.sameOrganization(callId, found.callId)) return 'no_dialog';
    const otherSide: Side = found.side === 'caller' ? 'callee' : 'caller';
    if (!(await transfers.join(call, found.call, otherSide))) return 'failed';
    await platform.joinedByPhone(callId, found.callId, otherSide, this.deps.clock.now());
    return 'answered';
  }

  /**
   * A NOTIFY of the REFER's subscription in `dialog`, its sipfrag `status`; resolves when it is answered (or
   * at once when the dialog has ended: a phone that hung up is told nothing more).
   */
  private notify(dialog: Dialog, event: string, status: string, final: boolean): Promise<void> {
    const stack = this.deps.stack();
    if (!stack || dialog.ended) return Promise.resolve();
    const request = inDialogRequest(dialog, 'NOTIFY');
    request.headers.event = event;
    request.headers['subscription-state'] = final
      ? 'terminated;reason=noresource'
      : `active;expires=${SUBSCRIPTION_SECONDS}`;
    request.headers.contact = this.deps.signalling.contact();
    request.headers['content-type'] = 'message/sipfrag;version=2.0';
    request.content = `SIP/2.0 ${status}\r\n`;
    return new Promise((resolve) => {
      stack.send(request, (response) => {
        if ((response.status ?? 500) >= 200) resolve();
      });
    });
  }
}
