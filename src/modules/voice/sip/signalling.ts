// The SIP the PBX sends on a call's dialogs: responses to the caller's INVITE, BYEs, re-INVITEs, and the log
// lines that tell each dialog's story (debug lines per message come from the listener).
import type { FastifyBaseLogger } from 'fastify';
import { ackOf, type Dialog, inDialogRequest, uasDialog } from './dialog.ts';
import type { Side, SipCall, SipCallTable } from './sip-call.ts';
import type { SipAor, SipMessage, SipStack } from './stack/index.ts';
import * as sip from './stack/index.ts';

export class CallSignalling {
  /** Our BYEs still waiting for their final response: a stopping listener waits for them (byesAnswered). */
  private readonly byes = new Set<Promise<void>>();

  constructor(
    private readonly deps: {
      stack: () => SipStack | undefined;
      /** Our address as phones reach it (`host:port`), for Contact headers. */
      address: () => string;
      table: SipCallTable;
      log: FastifyBaseLogger;
    },
  ) {}

  /** Our Contact: where the other side sends its requests in our dialogs. */
  contact(): SipAor[] {
    return [{ uri: `sip:pbx@${this.deps.address()}`, params: {} }];
  }

  /** A response to the caller's INVITE, our tag on its To. The stack resends a 2xx until its ACK comes. */
  respondToCaller(call: SipCall, status: number, reason: string, sdp?: string): void {
    if (!call.invite) return;
    if (status >= 200) call.callerFinal ??= status;
    const to = call.invite.headers.to;
    const headers: Record<string, unknown> = {
      to: { ...to, params: { ...to.params, tag: call.callerTag } },
      contact: this.contact(),
      ...(sdp ? { 'content-type': 'application/sdp' } : {}),
    };
    this.deps
      .stack()
      ?.send(sip.makeResponse(call.invite, status, reason, { headers, content: sdp } as never));
    const sipCallId = call.invite.headers['call-id'];
    if (status >= 200 && status < 300) {
      this.deps.log.info(
        { callId: this.deps.table.callIdOf(sipCallId), side: 'caller', sipCallId },
        'SIP dialog started',
      );
    } else if (status >= 300) this.dialogEnded(sipCallId, 'caller', `answered ${status} ${reason}`);
  }

  /** The caller's dialog: the first leg we placed, or their INVITE's once answered (we are its UAS). */
  callerDialog(call: SipCall): Dialog | undefined {
    if (call.caller) return call.caller;
    if (!call.invite || !call.answered || (call.callerFinal ?? 0) >= 300) return undefined;
    call.caller = uasDialog(call.invite, call.callerTag);
    return call.caller;
  }

  /** Hangs up the caller's side (once), if it was ever answered. */
  hangUpCaller(call: SipCall, outcome?: string): void {
    if (call.callerGone) return;
    const dialog = this.callerDialog(call);
    if (!dialog) return;
    call.callerGone = true;
    this.sendBye(dialog, outcome);
  }

  /** A BYE in `dialog`, once: a dialog that has ended (a BYE either way) gets none. */
  sendBye(dialog: Dialog, outcome = 'BYE from us'): void {
    if (dialog.ended) return;
    dialog.ended = true;
    this.dialogEnded(dialog.callId, undefined, outcome);
    dialog.leg?.move('bye');
    const stack = this.deps.stack();
    if (!stack) return;
    let answered!: () => void;
    const pending = new Promise<void>((resolve) => {
      answered = resolve;
    });
    this.byes.add(pending);
    // The stack answers a BYE nobody answered with a 408 of its own (timer F): every BYE settles.
    stack.send(inDialogRequest(dialog, 'BYE'), (response) => {
      if ((response.status ?? 0) < 200) return;
      this.byes.delete(pending);
      answered();
    });
  }

  /**
   * Resolves when every BYE sent so far has its final response (on UDP the stack resends a BYE until then, so
   * closing the socket earlier could leave a phone that lost our BYE in a call that no longer exists).
   */
  async byesAnswered(): Promise<void> {
    await Promise.all([...this.byes]);
  }

  /**
   * A re-INVITE of a dialog we hold with `sdp` as the new offer: the other side's answer ('' when its 200
   * carried none), or undefined when it refused.
   */
  sendReinvite(dialog: Dialog, sdp: string): Promise<string | undefined> {
    const stack = this.deps.stack();
    if (!stack) return Promise.resolve(undefined);
    const invite = inDialogRequest(dialog, 'INVITE');
    invite.headers.contact = this.contact();
    invite.headers['content-type'] = 'application/sdp';
    invite.content = sdp;
    let ack: SipMessage | undefined;
    dialog.offering = true;
    return new Promise((resolve) => {
      stack.send(invite, (response) => {
        const status = response.status ?? 500;
        if (status < 200) return;
        dialog.offering = false;
        if (status < 300) {
          // A retransmitted 2xx (our ACK was lost) gets the same ACK again.
          ack ??= ackOf(dialog, invite.headers.cseq.seq);
          stack.send(ack);
        }
        resolve(status < 300 ? (response.content ?? '') : undefined);
      });
    });
  }

  /** The info line that ends a dialog's story in the log (its start is 'SIP dialog started'). */
  dialogEnded(sipCallId: string, side: Side | undefined, outcome: string): void {
    const table = this.deps.table;
    const callId = table.callIdOf(sipCallId);
    const call = callId ? table.get(callId) : undefined;
    this.deps.log.info(
      { callId, side: side ?? (call && table.sideOf(call, sipCallId)), sipCallId, outcome },
      'SIP dialog ended',
    );
  }
}
