// A SIP dialog as the PBX holds it (RFC 3261 section 12), and the requests built from one. Every request we
// send inside a dialog comes from here, so that each carries what a strict phone checks (section 12.2.1.1):
// the remote target as Request-URI, the route set, the dialog's tags, the next CSeq and Max-Forwards.
import type { Leg } from './leg-states.ts';
import type { SipAor, SipMessage } from './stack/index.ts';

/** RFC 3261 section 8.1.1.6: every request we send carries Max-Forwards (a strict phone answers 400 without). */
export const MAX_FORWARDS = 70;

export interface Dialog {
  callId: string;
  localTag: string;
  remoteTag: string;
  /** Where in-dialog requests go: the other side's Contact. */
  remoteUri: string;
  localUri: string;
  remoteAor: string;
  cseq: number;
  /** The CSeq of the last request the other side sent in it (RFC 3261 section 12.2.2; none yet: undefined). */
  remoteCseq?: number;
  /** Our re-INVITE in it awaits its final answer: an offer of theirs now is glare, 491 (section 14.2). */
  offering?: boolean;
  /** The route set (RFC 3261 section 12.1): the Record-Route of the INVITE (we are its UAS) or, reversed, of
   * the 2xx (we are its UAC). Empty when no proxy asked to stay on the path. */
  routes: SipAor[];
  /** The life of a leg we placed (none for a caller's INVITE, which we answered). */
  leg?: Leg;
  /** A BYE ended it (ours or theirs). */
  ended?: boolean;
}

/** The dialog a 2xx to our INVITE creates (we are its UAC: section 12.1.2). */
export function uacDialog(response: SipMessage, invite: SipMessage, localTag: string): Dialog {
  const contact = Array.isArray(response.headers.contact) ? response.headers.contact[0]?.uri : undefined;
  return {
    callId: response.headers['call-id'],
    localTag,
    remoteTag: String(response.headers.to.params.tag ?? ''),
    remoteUri: contact ?? invite.uri ?? '',
    localUri: invite.headers.from.uri,
    remoteAor: invite.headers.to.uri,
    cseq: invite.headers.cseq.seq,
    // A browser is reached only through its WebSocket (RFC 7118 section 5): that flow comes first.
    routes: withFlow(response.flow, routeSet(response.headers['record-route']).reverse()),
  };
}

/** The dialog our 2xx to a caller's INVITE creates (we are its UAS: section 12.1.1). */
export function uasDialog(invite: SipMessage, localTag: string): Dialog {
  const contact = Array.isArray(invite.headers.contact) ? invite.headers.contact[0]?.uri : undefined;
  return {
    callId: invite.headers['call-id'],
    localTag,
    remoteTag: String(invite.headers.from.params.tag ?? ''),
    remoteUri: contact ?? invite.headers.from.uri,
    localUri: invite.headers.to.uri,
    remoteAor: invite.headers.from.uri,
    cseq: 0,
    remoteCseq: invite.headers.cseq.seq,
    routes: withFlow(invite.flow, routeSet(invite.headers['record-route'])),
  };
}

/**
 * A request of ours inside `dialog` (RFC 3261 section 12.2.1.1): to its remote target, through its route set,
 * with its next CSeq (an ACK keeps its INVITE's: ackOf) and Max-Forwards; the stack adds the Via.
 */
export function inDialogRequest(dialog: Dialog, method: string): SipMessage {
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

/** The ACK of a 2xx to our INVITE of CSeq `seq` (RFC 3261 section 13.2.2.4): built from its dialog. */
export function ackOf(dialog: Dialog, seq: number): SipMessage {
  const ack = inDialogRequest(dialog, 'ACK');
  ack.headers.cseq = { method: 'ACK', seq };
  return ack;
}

/**
 * CANCEL of an INVITE of ours that has no final answer yet (RFC 3261 section 9.1: its Via, CSeq number, and
 * its Route: `route`, a copy taken before the stack consumed the INVITE's).
 */
export function cancelOf(invite: SipMessage, route?: SipAor[]): SipMessage {
  return {
    method: 'CANCEL',
    uri: invite.uri,
    headers: {
      to: invite.headers.to,
      from: invite.headers.from,
      'call-id': invite.headers['call-id'],
      cseq: { method: 'CANCEL', seq: invite.headers.cseq.seq },
      via: invite.headers.via,
      'max-forwards': MAX_FORWARDS,
      ...(route && route.length > 0
        ? { route: route.map((hop) => ({ ...hop, params: { ...hop.params } })) }
        : {}),
    },
  };
}

/**
 * Why a request from the other side cannot be taken in `dialog` (RFC 3261 section 12.2.2), or undefined: a CSeq
 * below the last one it sent is out of order (500); an offer while our own re-INVITE is unanswered is glare
 * (491, section 14.2; the phone retries after a random wait). Taking it moves the dialog's remote CSeq.
 */
export function inDialogRefusal(dialog: Dialog, request: SipMessage): [number, string] | undefined {
  const seq = request.headers.cseq.seq;
  if (dialog.remoteCseq !== undefined && seq < dialog.remoteCseq) return [500, 'CSeq Out of Order'];
  if (dialog.offering && (request.method === 'INVITE' || request.method === 'UPDATE'))
    return [491, 'Request Pending'];
  dialog.remoteCseq = seq;
  return undefined;
}

/** Whether a request from the other side names `dialog` by its tags (its From tag theirs, its To tag ours). */
export function namesDialog(dialog: Dialog, request: SipMessage): boolean {
  return (
    String(request.headers.from.params.tag ?? '') === dialog.remoteTag &&
    String(request.headers.to.params.tag ?? '') === dialog.localTag
  );
}

function withFlow(flow: SipAor | undefined, routes: SipAor[]): SipAor[] {
  return flow ? [{ ...flow, params: { ...flow.params } }, ...routes] : routes;
}

/** A Record-Route header's entries, as the stack parsed them (none: no proxy on the path). */
function routeSet(header: unknown): SipAor[] {
  return Array.isArray(header) ? (header as SipAor[]).map((route) => ({ ...route })) : [];
}
