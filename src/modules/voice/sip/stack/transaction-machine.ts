// The shape every SIP transaction (and a UAS's retransmission of its 2xx) is written in: a table of states, each
// saying what it does on entering, on a message from the network, on a response from the transaction user and on
// each of its timers. A timer belongs to the state that starts it and is cleared when the machine leaves that
// state, unless the next state names it in `keeps` (RFC 3261's Timer F runs on from Trying into Proceeding). A
// signal a state has no entry for is refused and reported, not guessed at.
import type { SipMessage, SipRemote } from './message.ts';
import type { Connection } from './transport.ts';

/** RFC 3261's timer values (section 17.1.1.1, table 4), in milliseconds. */
export interface TransactionTimers {
  /** The round-trip estimate every retransmission interval starts from (500 ms). */
  t1: number;
  /** The longest interval between retransmissions of a non-INVITE request or an INVITE's response (4 s). */
  t2: number;
  /** How long a message may stay in the network (5 s): timers I and K on an unreliable transport. */
  t4: number;
}
export const RFC_3261_TIMERS: TransactionTimers = { t1: 500, t2: 4000, t4: 5000 };

/** What a transaction sends through: a connection, and whether its transport retransmits for us (TCP does). */
export interface Wire {
  send(message: SipMessage): void;
  readonly reliable: boolean;
}

export const isReliable = (connection: Connection) => connection.protocol.toUpperCase() !== 'UDP';

/** A signal a state has no entry for: which machine, in which state. */
export type Refused = (what: { machine: string; state: string; signal: string }) => void;

export interface State {
  name: string;
  /** Timers of the previous state that keep running in this one. */
  keeps?: readonly string[];
  enter?(): void;
  /** A message from the network that matched the transaction (a retransmission, an ACK, a response). */
  receive?(message: SipMessage, remote?: SipRemote): void;
  /** A response from the transaction user. */
  send?(response: SipMessage): void;
  /** Each timer this state starts or keeps, by name, and what its expiry does. */
  timers?: Record<string, () => void>;
}

export interface Machine {
  readonly state: string | undefined;
  enter(next: State): void;
  start(timer: string, milliseconds: number): void;
  stop(timer: string): void;
  receive(message: SipMessage, remote?: SipRemote): void;
  send(response: SipMessage): void;
}

export function machine(kind: string, refused: Refused): Machine {
  let current: State | undefined;
  const timers = new Map<string, NodeJS.Timeout>();
  const stop = (timer: string) => {
    clearTimeout(timers.get(timer));
    timers.delete(timer);
  };
  const refuse = (signal: string) => refused({ machine: kind, state: current?.name ?? 'none', signal });
  return {
    get state() {
      return current?.name;
    },
    enter(next) {
      for (const timer of [...timers.keys()]) if (!next.keeps?.includes(timer)) stop(timer);
      current = next;
      next.enter?.();
    },
    start(timer, milliseconds) {
      stop(timer);
      const handle = setTimeout(() => {
        timers.delete(timer);
        const expire = current?.timers?.[timer];
        if (expire) expire();
        else refuse(`timer ${timer}`);
      }, milliseconds);
      timers.set(timer, handle);
    },
    stop,
    receive(message, remote) {
      if (current?.receive) current.receive(message, remote);
      else refuse(message.method ?? `${message.status} response`);
    },
    send(response) {
      if (current?.send) current.send(response);
      else refuse(`${response.status} from the transaction user`);
    },
  };
}

export const isProvisional = (message: SipMessage) => (message.status ?? 0) < 200;
export const isSuccess = (message: SipMessage) => (message.status ?? 0) >= 200 && (message.status ?? 0) < 300;
