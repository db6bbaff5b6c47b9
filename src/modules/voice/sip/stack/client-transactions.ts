// The client transactions of RFC 3261 section 17.1, with RFC 6026's Accepted state for an INVITE: what keeps
// a request we sent alive until it is answered (retransmitting it on UDP, timers A and E), gives up with a 408 to
// the transaction user when no answer comes (timers B and F), and absorbs the retransmissions of the answer for
// as long as the server may send them (timers D, K and M). Each machine is one table of states (transaction-
// machine.ts); all intervals derive from T1, T2 and T4, and the reliable transport's are zero (section 17.1).
import { makeResponse, type SipMessage, type SipRemote } from './message.ts';
import {
  isProvisional,
  isSuccess,
  machine,
  type Refused,
  type State,
  type TransactionTimers,
  type Wire,
} from './transaction-machine.ts';

export interface ClientTransaction {
  /** A response from the network (with where it came from), or one the stack made up (a transport error). */
  message(message: SipMessage, remote?: SipRemote): void;
  shutdown(): void;
}

export interface ClientContext {
  request: SipMessage;
  wire: Wire;
  /** Passes a response up to the transaction user. */
  deliver: (response: SipMessage) => void;
  /** The transaction is over: forget it and release its connection. */
  cleanup: () => void;
  timers: TransactionTimers;
  refused: Refused;
  maxForwards?: number;
}

/** Timer D (section 17.1.1.2): at least 32 s on an unreliable transport, whatever T1 is. */
export const TIMER_D = 32_000;

/** The transaction starts on the next tick, once its caller has it in hand (a transport error may name it). */
function startSoon(sm: ReturnType<typeof machine>, first: State): void {
  process.nextTick(() => {
    // Shut down before it started (the stack destroyed at once): no timer may outlive that.
    if (sm.state === undefined) sm.enter(first);
  });
}

/** The ACK of a 3xx–6xx final response (section 17.1.1.3): the request's Request-URI, top Via and Route. */
function makeAck(request: SipMessage, response: SipMessage, maxForwards?: number): SipMessage {
  const ack: SipMessage = {
    method: 'ACK',
    uri: request.uri,
    headers: {
      // The response's To: it carries the server's tag.
      to: response.headers.to,
      from: request.headers.from,
      cseq: { method: 'ACK', seq: request.headers.cseq.seq },
      'call-id': request.headers['call-id'],
      via: [request.headers.via[0]!],
      'max-forwards': maxForwards || 70,
    },
  };
  if (request.headers.route?.length) ack.headers.route = request.headers.route;
  return ack;
}

export function inviteClientTransaction(context: ClientContext): ClientTransaction {
  const { request, wire, deliver, timers } = context;
  const sm = machine('INVITE client transaction', context.refused);
  let timerA = timers.t1;
  let ack: SipMessage | undefined;

  const terminated: State = { name: 'Terminated', enter: context.cleanup };
  const timeout = () => {
    deliver(makeResponse(request, 408, 'Request Timeout'));
    sm.enter(terminated);
  };
  /** Any state before a final response: where each kind of response leads. */
  const answered = (response: SipMessage, remote?: SipRemote) => {
    deliver(response);
    // Made up by the stack, not received: a transport error ends the transaction (section 17.1.1.2).
    if (!remote) return sm.enter(terminated);
    if (isProvisional(response)) {
      if (sm.state !== proceeding.name) sm.enter(proceeding);
    } else if (isSuccess(response)) sm.enter(accepted);
    else {
      ack = makeAck(request, response, context.maxForwards);
      sm.enter(completed);
    }
  };

  const calling: State = {
    name: 'Calling',
    enter: () => {
      wire.send(request);
      // Timer A: only an unreliable transport loses the request.
      if (!wire.reliable) sm.start('A', timerA);
      sm.start('B', 64 * timers.t1);
    },
    receive: answered,
    timers: {
      A: () => {
        wire.send(request);
        timerA *= 2;
        sm.start('A', timerA);
      },
      B: timeout,
    },
  };
  // A provisional response stops the retransmissions and timer B: the server has the request (section 17.1.1.2).
  const proceeding: State = { name: 'Proceeding', receive: answered };
  const completed: State = {
    name: 'Completed',
    enter: () => {
      wire.send(ack!);
      // Timer D: room for the server's retransmissions of its final response; a reliable transport sends none.
      if (wire.reliable) sm.enter(terminated);
      else sm.start('D', TIMER_D);
    },
    // A retransmission of the final response is ACKed again and not passed up; what the stack made up is not.
    receive: (response, remote) => {
      if (remote && (response.status ?? 0) >= 300) wire.send(ack!);
    },
    timers: { D: () => sm.enter(terminated) },
  };
  // RFC 6026: each 2xx (a retransmission, or another fork's) goes to the transaction user, which ACKs it.
  const accepted: State = {
    name: 'Accepted',
    enter: () => sm.start('M', 64 * timers.t1),
    receive: (response, remote) => {
      if (remote && isSuccess(response)) deliver(response);
    },
    timers: { M: () => sm.enter(terminated) },
  };

  startSoon(sm, calling);
  return {
    message: (message, remote) => sm.receive(message, remote),
    shutdown: () => {
      if (sm.state !== terminated.name) sm.enter(terminated);
    },
  };
}

export function nonInviteClientTransaction(context: ClientContext): ClientTransaction {
  const { request, wire, deliver, timers } = context;
  const sm = machine('non-INVITE client transaction', context.refused);
  let timerE = timers.t1;

  const terminated: State = { name: 'Terminated', enter: context.cleanup };
  const timeout = () => {
    deliver(makeResponse(request, 408, 'Request Timeout'));
    sm.enter(terminated);
  };
  const answered = (response: SipMessage, remote?: SipRemote) => {
    if (!remote) sm.enter(terminated);
    else if (!isProvisional(response)) sm.enter(completed);
    else if (sm.state !== proceeding.name) sm.enter(proceeding);
    deliver(response);
  };

  const trying: State = {
    name: 'Trying',
    enter: () => {
      wire.send(request);
      if (!wire.reliable) sm.start('E', timerE);
      sm.start('F', 64 * timers.t1);
    },
    receive: answered,
    timers: {
      // Section 17.1.2.2: the interval doubles, but never past T2.
      E: () => {
        wire.send(request);
        timerE = Math.min(2 * timerE, timers.t2);
        sm.start('E', timerE);
      },
      F: timeout,
    },
  };
  const proceeding: State = {
    name: 'Proceeding',
    keeps: ['E', 'F'],
    receive: answered,
    timers: {
      // The server has the request and is working on it: retransmit every T2 only, so that it knows we wait.
      E: () => {
        wire.send(request);
        sm.start('E', timers.t2);
      },
      F: timeout,
    },
  };
  const completed: State = {
    name: 'Completed',
    enter: () => {
      // Timer K: room for retransmissions of the final response, absorbed; a reliable transport sends none.
      if (wire.reliable) sm.enter(terminated);
      else sm.start('K', timers.t4);
    },
    receive: () => {},
    timers: { K: () => sm.enter(terminated) },
  };

  startSoon(sm, trying);
  return {
    message: (message, remote) => sm.receive(message, remote),
    shutdown: () => {
      if (sm.state !== terminated.name) sm.enter(terminated);
    },
  };
}
