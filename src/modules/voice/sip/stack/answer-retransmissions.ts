// The UAS core's part of a 2xx to an INVITE (RFC 3261 section 13.3.1.4): the INVITE server transaction sends it
// once and ends (RFC 6026), so the core retransmits it, at T1 and doubling up to T2, on every transport (the RFC
// does not spare a reliable one: a proxy on the way may be on UDP), until the ACK for it arrives. That ACK is a
// transaction of its own, matched by Call-ID, CSeq number and the 2xx's To tag; a BYE of the dialog also ends
// the wait (a CANCEL does not: it changes nothing once the INVITE has its 2xx, RFC 3261 section 9.2). Without an ACK after 64*T1 the retransmissions stop and the application is
// told, so that it can end the dialog with a BYE as the section asks.
import type { SipMessage } from './message.ts';
import { machine, type Refused, type State, type TransactionTimers } from './transaction-machine.ts';
import type { Connection } from './transport.ts';

export interface AnswerRetransmissions {
  /** A 2xx the transaction user sent to an INVITE, through `connection`, which is released when done. */
  start(response: SipMessage, connection: Connection): void;
  /** An ACK from the network: the retransmissions of the 2xx it acknowledges stop. */
  acknowledge(ack: SipMessage): void;
  /** A BYE of the dialog, either way: that 2xx is no longer worth retransmitting. */
  end(request: SipMessage): void;
  readonly pending: number;
  destroy(): void;
}

const tagOf = (address: SipMessage['headers']['to'] | undefined) => address?.params?.tag ?? undefined;
const keyOf = (callId: string, seq: number, toTag: string | undefined) => [callId, seq, toTag].join();

export function makeAnswerRetransmissions(
  timers: TransactionTimers,
  unacknowledged: (response: SipMessage) => void,
  refused: Refused,
): AnswerRetransmissions {
  const waiting = new Map<string, { response: SipMessage; stop: () => void }>();

  function start(response: SipMessage, connection: Connection): void {
    const key = keyOf(response.headers['call-id'], response.headers.cseq.seq, tagOf(response.headers.to));
    // The transaction user sending the same 2xx again: one schedule is enough.
    if (waiting.has(key)) {
      connection.release();
      return;
    }
    const sm = machine('2xx retransmission', refused);
    let interval = timers.t1;
    const stopped: State = {
      name: 'Stopped',
      enter: () => {
        waiting.delete(key);
        connection.release();
      },
    };
    const retransmitting: State = {
      name: 'Retransmitting',
      enter: () => {
        sm.start('retransmission', interval);
        sm.start('deadline', 64 * timers.t1);
      },
      timers: {
        retransmission: () => {
          connection.send(response);
          interval = Math.min(2 * interval, timers.t2);
          sm.start('retransmission', interval);
        },
        deadline: () => {
          sm.enter(stopped);
          unacknowledged(response);
        },
      },
    };
    waiting.set(key, { response, stop: () => sm.enter(stopped) });
    sm.enter(retransmitting);
  }

  return {
    start,
    acknowledge(ack) {
      const key = keyOf(ack.headers['call-id'], ack.headers.cseq.seq, tagOf(ack.headers.to));
      waiting.get(key)?.stop();
    },
    end(request) {
      for (const { response, stop } of [...waiting.values()]) {
        if (response.headers['call-id'] !== request.headers['call-id']) continue;
        const ourTag = tagOf(response.headers.to);
        // A BYE from the phone names our tag in its To; one of ours, in its From.
        const sameDialog =
          ourTag !== undefined &&
          (tagOf(request.headers.to) === ourTag || tagOf(request.headers.from) === ourTag);
        if (sameDialog) stop();
      }
    },
    get pending() {
      return waiting.size;
    },
    destroy() {
      for (const { stop } of [...waiting.values()]) stop();
    },
  };
}
