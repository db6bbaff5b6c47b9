// The SIP transaction layer (RFC 3261 section 17, with RFC 6026's Accepted state): it finds the transaction a
// message belongs to and creates one for each request sent or received. The machines themselves are in
// client-transactions.ts and server-transactions.ts, each a table of states whose timers derive from T1, T2
// and T4 (options of the stack, RFC values by default); the UAS core's retransmission of a 2xx to an INVITE
// until its ACK is in answer-retransmissions.ts, and is started and stopped from here.
import { randomBytes } from 'node:crypto';
import { makeAnswerRetransmissions } from './answer-retransmissions.ts';
import {
  type ClientContext,
  type ClientTransaction,
  inviteClientTransaction,
  nonInviteClientTransaction,
} from './client-transactions.ts';
import type { SipMessage, SipRemote } from './message.ts';
import {
  inviteServerTransaction,
  nonInviteServerTransaction,
  type ServerTransaction,
} from './server-transactions.ts';
import { isReliable, type Refused, RFC_3261_TIMERS, type TransactionTimers } from './transaction-machine.ts';
import type { Connection } from './transport.ts';

export type { ClientTransaction } from './client-transactions.ts';
export type { ServerTransaction } from './server-transactions.ts';
export { RFC_3261_TIMERS, type TransactionTimers } from './transaction-machine.ts';

export interface TransactionLayerOptions extends Partial<TransactionTimers> {
  'max-forwards'?: number;
  /** An ACK for a 2xx of ours (a transaction of its own, section 17): the application's to see. */
  acknowledged?: (ack: SipMessage, remote: SipRemote) => void;
  /** A 2xx to an INVITE never ACKed within 64*T1 (section 13.3.1.4): the dialog should be ended with a BYE. */
  unacknowledged?: (response: SipMessage) => void;
  /** What went wrong without anyone to answer: a 3xx–6xx never ACKed (timer H). */
  error?: (error: Error) => void;
  /** A signal a state did not expect (a second final response from the application, say). */
  refused?: Refused;
}

export function transactionId(message: SipMessage): string {
  const branch = message.headers.via[0]?.params.branch;
  const method = message.method === 'ACK' ? 'INVITE' : message.headers.cseq.method;
  return [method, message.headers['call-id'], branch].join();
}

/** RFC 3261's magic cookie and random bits (the package's Math.random() below a million could repeat). */
export function generateBranch(): string {
  return `z9hG4bK${randomBytes(8).toString('hex')}`;
}

/**
 * One connection held by several (a server transaction, and the retransmissions of its 2xx that outlive it):
 * each holder gets its own handle, and the connection is released once every handle is.
 */
function shareConnection(connection: Connection): () => Connection {
  let holders = 0;
  return () => {
    holders++;
    let released = false;
    return {
      protocol: connection.protocol,
      send: (message) => connection.send(message),
      release() {
        if (released) return;
        released = true;
        if (--holders === 0) connection.release();
      },
    };
  };
}

export function makeTransactionLayer(options: TransactionLayerOptions) {
  const timers: TransactionTimers = {
    t1: options.t1 ?? RFC_3261_TIMERS.t1,
    t2: options.t2 ?? RFC_3261_TIMERS.t2,
    t4: options.t4 ?? RFC_3261_TIMERS.t4,
  };
  const refused: Refused = options.refused ?? (() => {});
  const servers: Record<string, ServerTransaction> = Object.create(null);
  const clients: Record<string, ClientTransaction> = Object.create(null);
  const answers = makeAnswerRetransmissions(
    timers,
    (response) => options.unacknowledged?.(response),
    refused,
  );

  /** An ACK of a 2xx: it stops that 2xx's retransmissions and goes to the application. */
  function acknowledge(ack: SipMessage, remote: SipRemote): void {
    answers.acknowledge(ack);
    options.acknowledged?.(ack, remote);
  }

  return {
    timers,
    createServerTransaction(request: SipMessage, connection: Connection): ServerTransaction {
      const id = transactionId(request);
      const handle = shareConnection(connection);
      const own = handle();
      const context = {
        request,
        wire: { send: (message: SipMessage) => own.send(message), reliable: isReliable(connection) },
        cleanup: () => {
          delete servers[id];
          own.release();
        },
        timers,
        refused,
      };
      // A BYE ends the wait for the ACK; a CANCEL does not: once the INVITE has its 2xx the CANCEL changes
      // nothing (section 9.2), and the caller still needs the 2xx to ACK it and then send its BYE.
      if (request.method === 'BYE') answers.end(request);
      servers[id] =
        request.method === 'INVITE'
          ? inviteServerTransaction({
              ...context,
              accepted: (response) => answers.start(response, handle()),
              acknowledged: (ack, remote) => {
                if (remote) acknowledge(ack, remote);
              },
              unacknowledged: (response) =>
                options.error?.(
                  new Error(
                    `no ACK within 64*T1 for ${response.status} to INVITE ${request.headers['call-id']} (timer H)`,
                  ),
                ),
            })
          : nonInviteServerTransaction(context);
      return servers[id];
    },
    createClientTransaction(
      connection: Connection,
      request: SipMessage,
      deliver: (response: SipMessage) => void,
    ): ClientTransaction {
      if (request.method !== 'CANCEL') request.headers.via[0]!.params.branch = generateBranch();
      // Our BYE of a dialog whose 2xx is still unacknowledged: there is nothing left to deliver it for.
      if (request.method === 'BYE') answers.end(request);
      const id = transactionId(request);
      const context: ClientContext = {
        request,
        wire: { send: (message) => connection.send(message), reliable: isReliable(connection) },
        deliver,
        cleanup: () => {
          delete clients[id];
          connection.release();
        },
        timers,
        refused,
        maxForwards: options['max-forwards'],
      };
      clients[id] =
        request.method === 'INVITE' ? inviteClientTransaction(context) : nonInviteClientTransaction(context);
      return clients[id];
    },
    /** An ACK that matched no transaction: the ACK of a 2xx (section 17.2.3). */
    acknowledge,
    getServer: (message: SipMessage): ServerTransaction | undefined => servers[transactionId(message)],
    /** The INVITE server transaction a CANCEL names: same Call-ID and top Via branch (RFC 3261 section 9.2). */
    getInviteServer: (cancel: SipMessage): ServerTransaction | undefined =>
      servers[['INVITE', cancel.headers['call-id'], cancel.headers.via[0]?.params.branch].join()],
    getClient: (message: SipMessage): ClientTransaction | undefined => clients[transactionId(message)],
    /** 2xx responses still retransmitted, waiting for their ACK. */
    get unacknowledgedAnswers() {
      return answers.pending;
    },
    /** Ends every transaction and retransmission, clearing every timer. */
    destroy() {
      for (const id of Object.keys(clients)) clients[id]?.shutdown();
      for (const id of Object.keys(servers)) servers[id]?.shutdown();
      answers.destroy();
    },
  };
}
export type TransactionLayer = ReturnType<typeof makeTransactionLayer>;
