// The server transactions of RFC 3261 section 17.2, with RFC 6026's Accepted state for an INVITE: what answers
// a request's retransmissions with the last response the transaction user gave (absorbing them while it has
// given none), sends 100 Trying for an INVITE the transaction user leaves unanswered for 200 ms, retransmits a
// 3xx–6xx to an INVITE on UDP until its ACK (timer G, capped at T2; timer H gives up), and stays long enough to
// absorb what is still in the network (timers I, J and L; zero on a reliable transport where the RFC says so).
// The 2xx to an INVITE is retransmitted by the UAS core, not here (answer-retransmissions.ts).
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

export interface ServerTransaction {
  /** A response from the transaction user. */
  send(message: SipMessage): void;
  /** A request from the network that matched the transaction: a retransmission, or the ACK of its response. */
  message(message: SipMessage, remote?: SipRemote): void;
  shutdown(): void;
}

export interface ServerContext {
  request: SipMessage;
  wire: Wire;
  cleanup: () => void;
  timers: TransactionTimers;
  refused: Refused;
}

export interface InviteServerContext extends ServerContext {
  /** The transaction user's 2xx, sent once: from here on the UAS core retransmits it (section 13.3.1.4). */
  accepted: (response: SipMessage) => void;
  /** An ACK that matched the transaction in Accepted: it acknowledges the 2xx and goes to the TU (RFC 6026). */
  acknowledged: (ack: SipMessage, remote?: SipRemote) => void;
  /** Timer H fired: the 3xx–6xx was never ACKed (section 17.2.1 asks that the TU be told). */
  unacknowledged: (response: SipMessage) => void;
}

/** The delay after which an INVITE server transaction says 100 Trying itself (section 17.2.1). */
export const TRYING_DELAY = 200;

export function inviteServerTransaction(context: InviteServerContext): ServerTransaction {
  const { request, wire, timers } = context;
  const sm = machine('INVITE server transaction', context.refused);
  let provisional: SipMessage | undefined;
  let final: SipMessage | undefined;
  let timerG = timers.t1;

  const terminated: State = { name: 'Terminated', enter: context.cleanup };
  const proceeding: State = {
    name: 'Proceeding',
    enter: () => sm.start('Trying', TRYING_DELAY),
    // A retransmitted INVITE gets the last provisional response again (section 17.2.1); an ACK here is stray.
    receive: (message) => {
      if (message.method === 'INVITE' && provisional) wire.send(provisional);
    },
    send: (response) => {
      wire.send(response);
      sm.stop('Trying');
      if (isProvisional(response)) provisional = response;
      else if (isSuccess(response)) {
        context.accepted(response);
        sm.enter(accepted);
      } else {
        final = response;
        sm.enter(completed);
      }
    },
    timers: {
      Trying: () => {
        provisional = makeResponse(request, 100, 'Trying');
        wire.send(provisional);
      },
    },
  };
  const completed: State = {
    name: 'Completed',
    enter: () => {
      // Timer G: only an unreliable transport loses the response (section 17.2.1).
      if (!wire.reliable) sm.start('G', timerG);
      sm.start('H', 64 * timers.t1);
    },
    receive: (message) => {
      if (message.method === 'ACK') sm.enter(confirmed);
      else wire.send(final!);
    },
    timers: {
      G: () => {
        wire.send(final!);
        timerG = Math.min(2 * timerG, timers.t2);
        sm.start('G', timerG);
      },
      H: () => {
        sm.enter(terminated);
        context.unacknowledged(final!);
      },
    },
  };
  const confirmed: State = {
    name: 'Confirmed',
    enter: () => {
      // Timer I: ACK retransmissions still in the network are absorbed; a reliable transport sends none.
      if (wire.reliable) sm.enter(terminated);
      else sm.start('I', timers.t4);
    },
    receive: () => {},
    timers: { I: () => sm.enter(terminated) },
  };
  // RFC 6026 section 7.1: INVITE retransmissions are absorbed (the core is retransmitting the 2xx), an ACK that
  // matches goes up to the TU, and a 2xx the TU sends again is passed to the transport.
  const accepted: State = {
    name: 'Accepted',
    enter: () => sm.start('L', 64 * timers.t1),
    receive: (message, remote) => {
      if (message.method === 'ACK') context.acknowledged(message, remote);
    },
    send: (response) => {
      if (isSuccess(response)) wire.send(response);
    },
    timers: { L: () => sm.enter(terminated) },
  };

  sm.enter(proceeding);
  return {
    send: (message) => sm.send(message),
    message: (message, remote) => sm.receive(message, remote),
    shutdown: () => {
      if (sm.state !== terminated.name) sm.enter(terminated);
    },
  };
}

export function nonInviteServerTransaction(context: ServerContext): ServerTransaction {
  const { wire, timers } = context;
  const sm = machine('non-INVITE server transaction', context.refused);
  let provisional: SipMessage | undefined;
  let final: SipMessage | undefined;

  const terminated: State = { name: 'Terminated', enter: context.cleanup };
  const respond = (response: SipMessage) => {
    wire.send(response);
    if (!isProvisional(response)) {
      final = response;
      sm.enter(completed);
    } else {
      provisional = response;
      if (sm.state !== proceeding.name) sm.enter(proceeding);
    }
  };
  // Section 17.2.2: with nothing said yet, a retransmission of the request is absorbed.
  const trying: State = { name: 'Trying', receive: () => {}, send: respond };
  const proceeding: State = { name: 'Proceeding', receive: () => wire.send(provisional!), send: respond };
  const completed: State = {
    name: 'Completed',
    enter: () => {
      // Timer J: retransmissions of the request still in the network get the final response again.
      if (wire.reliable) sm.enter(terminated);
      else sm.start('J', 64 * timers.t1);
    },
    receive: () => wire.send(final!),
    timers: { J: () => sm.enter(terminated) },
  };

  sm.enter(trying);
  return {
    send: (message) => sm.send(message),
    message: (message, remote) => sm.receive(message, remote),
    shutdown: () => {
      if (sm.state !== terminated.name) sm.enter(terminated);
    },
  };
}
