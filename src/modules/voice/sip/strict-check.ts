// A strict phone's eye on what we send: every SIP message leaving the listener is checked against the rules a
// standards-strict user agent enforces (and answers 400 for), and each breach is kept. The listener runs it in
// test mode (APP_ENV=test), and the test helper fails a test file that leaves any: a message a strict phone
// would refuse fails the tests even when SIPp, which is lenient, plays along. Issue 32: our ACK, BYE and CANCEL
// had no Max-Forwards, and every softphone that checks it refused them.
import type { SipMessage, SipRemote } from './stack/index.ts';

/** RFC 3261 section 8.1.1.7: the branch of a Via this RFC's user agents add starts with the magic cookie. */
const MAGIC_COOKIE = 'z9hG4bK';

/**
 * RFC 3261 section 25.1, Retry-After: delta-seconds, an optional comment, then parameters (`duration` in
 * delta-seconds, or any other token with an optional value).
 */
const RETRY_AFTER =
  /^[0-9]{1,10}[ \t]*(\([^()]*\))?([ \t]*;[ \t]*(duration[ \t]*=[ \t]*[0-9]{1,10}|(?!duration\b)[A-Za-z0-9.!%*_+`'~-]+([ \t]*=[ \t]*[^;\s]+)?))*$/i;

interface Seen {
  via: string;
  from: string;
  callId: string;
  cseq: string;
}

export class StrictSipCheck {
  readonly violations: string[] = [];
  /** Requests received, by transaction (Call-ID, CSeq, top Via branch): what their responses must copy. */
  private readonly received = new Map<string, Seen>();
  /** INVITEs we sent, by Call-ID: their CSeq number and branch (ACK and CANCEL must match them). */
  private readonly invites = new Map<string, { seq: number; branch: string }[]>();
  /** The last CSeq of our requests in each dialog (Call-ID and From tag), with its branch. */
  private readonly lastSeq = new Map<string, { seq: number; branch: string }>();

  /** A request that reached us (its responses are checked against it). */
  onReceived(message: SipMessage): void {
    if (!message.method || message.method === 'ACK') return;
    const key = transactionKey(message);
    if (key) this.received.set(key, seen(message));
    if (this.received.size > 10_000) this.received.delete(this.received.keys().next().value!);
  }

  /** A message we put on the wire (to `target`): each rule it breaks becomes one violation. */
  onSent(message: SipMessage, target?: Partial<SipRemote>): void {
    const problems = message.method
      ? this.request(message)
      : [...retryAfterProblems(message), ...this.response(message)];
    if (target?.protocol === 'WS' || target?.protocol === 'WSS')
      problems.push(...this.overWebSocket(message, target));
    const where = target ? ` to ${target.protocol ?? ''} ${target.address ?? ''}:${target.port ?? ''}` : '';
    const what = message.method ?? `${message.status} ${message.reason ?? ''}`.trim();
    for (const problem of problems) {
      this.violations.push(`${what} (Call-ID ${String(message.headers?.['call-id'])})${where}: ${problem}`);
    }
  }

  /**
   * RFC 7118 section 5 (a browser): our requests name the WebSocket transport in their Via, and our Contact says
   * `transport=ws`, so that the browser's requests come back over its connection (a REGISTER's 200 lists the
   * browser's own bindings, not ours).
   */
  private overWebSocket(message: SipMessage, target: Partial<SipRemote>): string[] {
    const problems: string[] = [];
    const via = message.headers?.via?.[0];
    if (message.method && via?.protocol !== target.protocol) {
      problems.push(`Via transport ${String(via?.protocol)} over ${target.protocol} (RFC 7118 section 5)`);
    }
    const contacts = message.headers?.contact;
    if (Array.isArray(contacts) && message.headers.cseq?.method !== 'REGISTER') {
      for (const contact of contacts) {
        if (!/;transport=wss?\b/i.test(contact.uri))
          problems.push(`Contact ${contact.uri} without transport=ws`);
      }
    }
    return problems;
  }

  private common(message: SipMessage): string[] {
    const problems: string[] = [];
    const headers = message.headers ?? {};
    if (!headers.to?.uri) problems.push('no To');
    if (!headers.from?.uri) problems.push('no From');
    if (!headers['call-id']) problems.push('no Call-ID');
    const cseq = headers.cseq;
    if (!cseq || !Number.isInteger(Number(cseq.seq)) || !cseq.method) problems.push('no valid CSeq');
    if (!Array.isArray(headers.via) || headers.via.length === 0) problems.push('no Via');
    return problems;
  }

  /** RFC 3261 section 8.1.1: the headers every request must have, and the CSeq and branch rules. */
  private request(message: SipMessage): string[] {
    const problems = this.common(message);
    const headers = message.headers;
    const method = message.method!;
    if (!message.uri) problems.push('no Request-URI');
    const maxForwards = headers['max-forwards'];
    if (maxForwards === undefined || !/^[0-9]{1,3}$/.test(String(maxForwards))) {
      problems.push('no valid Max-Forwards (RFC 3261 section 8.1.1.6)');
    }
    if (!headers.from?.params?.tag) problems.push('From without a tag (section 8.1.1.3)');
    if (problems.length > 0) return problems;
    if (method === 'NOTIFY') problems.push(...notifyProblems(message));
    if (headers.cseq.method !== method) {
      problems.push(`CSeq method ${headers.cseq.method} is not the request's ${method}`);
    }
    const branch = String(headers.via[0]?.params?.branch ?? '');
    if (!branch.startsWith(MAGIC_COOKIE)) problems.push(`Via branch "${branch}" lacks ${MAGIC_COOKIE}`);
    const callId = headers['call-id'];
    const seq = Number(headers.cseq.seq);
    const invites = this.invites.get(callId) ?? [];
    if (method === 'CANCEL') {
      // Section 9.1: a CANCEL has its INVITE's CSeq number and top Via branch.
      if (!invites.some((invite) => invite.seq === seq && invite.branch === branch)) {
        problems.push('CANCEL matches no INVITE of ours (CSeq number and Via branch)');
      }
    } else if (method === 'ACK') {
      // Section 13.2.2.4 and 17.1.1.3: an ACK has its INVITE's CSeq number.
      if (!invites.some((invite) => invite.seq === seq))
        problems.push('ACK matches no INVITE of ours by CSeq');
    } else {
      if (method === 'INVITE') {
        invites.push({ seq, branch });
        this.invites.set(callId, invites.slice(-20));
      }
      // Section 12.2.1.1: CSeq numbers of our requests in a dialog only go up (a retransmission repeats one).
      const dialog = `${callId};${String(headers.from.params.tag)}`;
      const last = this.lastSeq.get(dialog);
      if (last && seq < last.seq) problems.push(`CSeq ${seq} after ${last.seq} in the same dialog`);
      else if (last && seq === last.seq && branch !== last.branch) problems.push(`CSeq ${seq} used twice`);
      this.lastSeq.set(dialog, { seq, branch });
    }
    return problems;
  }

  /** RFC 3261 section 8.2.6: a response copies its request's Via, From, Call-ID and CSeq; To tagged past 100. */
  private response(message: SipMessage): string[] {
    const key = transactionKey(message);
    const request = key ? this.received.get(key) : undefined;
    // A refusal of what the stack could not take for a request (malformed, no Via branch, another version)
    // goes back to its sender as best it can: no phone of ours sent it, and it cannot copy what was not there.
    if (!request && Number(message.status) >= 400) return [];
    const problems = this.common(message);
    const status = Number(message.status);
    if (!Number.isInteger(status) || status < 100 || status > 699) problems.push(`status ${message.status}`);
    if (problems.length > 0) return problems;
    if (status > 100 && !message.headers.to.params?.tag) {
      problems.push('To without a tag (section 8.2.6.2)');
    }
    if (!request) return problems;
    const response = seen(message);
    if (response.via !== request.via) problems.push("Via not copied from the request's");
    if (response.from !== request.from) problems.push("From not copied from the request's");
    if (response.callId !== request.callId) problems.push("Call-ID not copied from the request's");
    if (response.cseq !== request.cseq) problems.push("CSeq not copied from the request's");
    return problems;
  }
}

/**
 * A NOTIFY's own rules: RFC 6665 (an Event header, section 8.2.1; a Subscription-State of active,
 * pending or terminated, section 8.2.3; a Contact, as NOTIFY refreshes the target), and for Event `refer` RFC 3515 sections 2.4.4
 * to 2.4.7 (a `message/sipfrag` body whose first line is a SIP status line; `id` the REFER's CSeq number, when
 * present; a final status only with the subscription terminated, and terminated only with a final status).
 */
function notifyProblems(message: SipMessage): string[] {
  const problems: string[] = [];
  const headers = message.headers;
  const event = typeof headers.event === 'string' ? headers.event.trim() : '';
  const state = typeof headers['subscription-state'] === 'string' ? headers['subscription-state'].trim() : '';
  if (!event) problems.push('NOTIFY without Event (RFC 6665 section 8.2.1)');
  const stateName = state.split(';')[0]!.trim().toLowerCase();
  if (!['active', 'pending', 'terminated'].includes(stateName))
    problems.push(`NOTIFY Subscription-State "${state}" (RFC 6665 section 8.2.3)`);
  if (!Array.isArray(headers.contact) || headers.contact.length !== 1)
    problems.push('NOTIFY without one Contact (RFC 6665: NOTIFY refreshes the target)');
  const [package_, ...params] = event.split(';').map((part) => part.trim());
  if (package_?.toLowerCase() !== 'refer') return problems;
  const id = params.find((param) => param.toLowerCase().startsWith('id='));
  if (id !== undefined && !/^id=[0-9]{1,10}$/i.test(id))
    problems.push(`Event refer ${id} is not a CSeq number`);
  const type = String(headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  if (type !== 'message/sipfrag')
    problems.push(`refer NOTIFY body of type "${type}", not message/sipfrag (RFC 3515 section 2.4.4)`);
  const statusLine = /^SIP\/2\.0 ([1-6][0-9]{2}) [^\r\n]+(\r\n|$)/.exec(message.content ?? '');
  if (!statusLine) {
    problems.push('refer NOTIFY sipfrag does not start with a SIP status line (RFC 3515 section 2.4.5)');
    return problems;
  }
  const final = Number(statusLine[1]) >= 200;
  if (final !== (stateName === 'terminated'))
    problems.push(
      `refer NOTIFY with status ${statusLine[1]} and Subscription-State ${stateName} (RFC 3515 section 2.4.7)`,
    );
  return problems;
}

/** A Retry-After we send (with a 503 of overload or shutdown, say) in the RFC's own syntax. */
function retryAfterProblems(message: SipMessage): string[] {
  const retryAfter = message.headers?.['retry-after'];
  if (retryAfter === undefined || RETRY_AFTER.test(String(retryAfter).trim())) return [];
  return [`Retry-After "${String(retryAfter)}" is not delta-seconds (RFC 3261 section 20.33)`];
}

function transactionKey(message: SipMessage): string | undefined {
  const headers = message.headers;
  const branch = headers?.via?.[0]?.params?.branch;
  if (!headers?.cseq || !branch) return undefined;
  return `${headers['call-id']};${headers.cseq.seq};${headers.cseq.method};${String(branch)}`;
}

function seen(message: SipMessage): Seen {
  const headers = message.headers;
  // The top Via gains `received` and `rport` on the way in (RFC 3261 section 18.2.1, RFC 3581): not a change.
  const via = (headers.via ?? []).map((entry, index) => {
    if (index > 0) return entry;
    const { received: _received, rport: _rport, ...params } = entry.params ?? {};
    return { ...entry, params };
  });
  return {
    via: JSON.stringify(via),
    from: JSON.stringify({ uri: headers.from?.uri, tag: headers.from?.params?.tag }),
    callId: headers['call-id'],
    cseq: `${headers.cseq?.seq} ${headers.cseq?.method}`,
  };
}
