// Our SIP stack: the `sip` package (kirm/sip.js 0.0.6, MIT, unmaintained) vendored and owned, so that its
// parser and its answers to malformed requests could be fixed (docs/architecture.md, "The SIP stack"). Every
// message goes parse (parse.ts, with limits) → validate (validate.ts) → transaction layer (transaction.ts) →
// the application. What cannot be parsed is answered 400 when it names a Via to answer to, 505 for another
// SIP version, and otherwise dropped, counted and logged at debug level.
import { createHmac, randomBytes } from 'node:crypto';
import dns from 'node:dns';
import net from 'node:net';
import os from 'node:os';
import { parseUri } from './headers.ts';
import {
  makeResponse,
  type SipAor,
  type SipMessage,
  type SipRemote,
  type SipUri,
  stringifyUri,
} from './message.ts';
import type { ParseResult } from './parse.ts';
import { makeTransactionLayer, type TransactionTimers } from './transaction.ts';
import { type Connection, makeTransport, type TransportOptions } from './transport.ts';
import { usableResponse, validateRequest } from './validate.ts';
import type { SipWebSocket } from './websocket-transport.ts';

export type { SipAor, SipMessage, SipRemote, SipUri, SipVia } from './message.ts';
export { makeResponse, stringify } from './message.ts';
export { RFC_3261_TIMERS, type TransactionTimers } from './transaction.ts';
export type { SipWebSocket } from './websocket-transport.ts';
export { parseUri };

export interface SipStackOptions extends TransportOptions, Partial<TransactionTimers> {
  logger?: TransportOptions['logger'] & {
    error?: (error: unknown) => void;
    /** Each message dropped or refused by the stack, with why. */
    debug?: (what: Record<string, unknown>, message: string) => void;
  };
  /**
   * A 2xx the application sent to an INVITE got no ACK within 64*T1, and the stack has stopped retransmitting it
   * (RFC 3261 section 13.3.1.4): the dialog is confirmed but the session should be ended with a BYE. Called once
   * per 2xx, with that response.
   */
  unacknowledged?: (response: SipMessage) => void;
}

export interface SipStack {
  send(message: SipMessage, callback?: (response: SipMessage) => void): void;
  destroy(): void;
  /** Messages dropped unanswered (not SIP, responses that do not parse) and requests refused by the stack. */
  readonly stats: { dropped: number; refused: number };
  /** A WebSocket the HTTP server accepted at `/sip` (RFC 7118); `remote.protocol` is `WS` or `WSS`. */
  acceptWebSocket(socket: SipWebSocket, remote: SipRemote): void;
  /** A Route through the connection `remote` came over (RFC 5626 style: a flow token of ours, `;lr`). */
  flowRoute(remote: SipRemote): SipAor;
  /** The connection a URI of ours names by its flow token, if it is one. */
  flowOf(uri: string): SipRemote | undefined;
}

type Address = SipRemote & { host?: string };

export function create(
  options: SipStackOptions,
  onRequest: (request: SipMessage, remote: SipRemote) => void,
): SipStack {
  const errorLog = options.logger?.error ?? (() => {});
  const debugLog = options.logger?.debug ?? (() => {});
  const hostname = options.publicAddress || options.address || options.hostname || os.hostname();
  const stats = { dropped: 0, refused: 0 };

  /** A refusal sent without a transaction: a retransmission of the request is refused again, the same way. */
  function refuseStatelessly(request: SipMessage, remote: SipRemote, status: number, reason: string): void {
    stats.refused++;
    debugLog({ status, reason, remote: remote.address, method: request.method }, 'SIP request refused');
    const response = tagged(makeResponse(request, status, reason));
    const connection = transport.get(remote) ?? transport.open(remote);
    try {
      connection.send(response);
    } finally {
      connection.release();
    }
  }

  function drop(reason: string, remote: SipRemote): void {
    stats.dropped++;
    debugLog({ reason, remote: remote.address, protocol: remote.protocol }, 'SIP message dropped');
  }

  function receive(result: ParseResult, remote: SipRemote) {
    try {
      if (result.kind === 'dropped') return drop(result.reason, remote);
      const message = result.message;
      if (remote.protocol === 'WS' || remote.protocol === 'WSS') message.flow = flowRoute(remote);
      // Nothing can be sent back without a Via (RFC 3261 section 18.2.2).
      if (result.kind === 'refused') {
        if (!message.headers.via?.[0]?.host) return drop(`no Via to answer: ${result.reason}`, remote);
        // An ACK is never answered (RFC 3261 section 17.2.1), not even a broken one.
        if (message.method === 'ACK') return drop(`ACK: ${result.reason}`, remote);
        return refuseStatelessly(message, remote, result.status, result.reason);
      }
      if (message.method === undefined) {
        if (!usableResponse(message)) return drop('response without the headers to match it', remote);
        options.logger?.recv?.(message, remote);
        transaction.getClient(message)?.message(message, remote);
        return;
      }
      if (!message.headers.via?.[0]?.host) return drop('request without a Via', remote);
      const refusal = validateRequest(message);
      if (refusal && message.method === 'ACK') return drop(`ACK: ${refusal.reason}`, remote);
      if (refusal) return refuseStatelessly(message, remote, refusal.status, refusal.reason);
      options.logger?.recv?.(message, remote);
      const via = message.headers.via[0]!;
      via.params.received = remote.address;
      if (remote.protocol === 'UDP' && Object.hasOwn(via.params, 'rport')) via.params.rport = remote.port;
      const existing = transaction.getServer(message);
      if (existing) return existing.message(message, remote);
      // The ACK of a 2xx is a transaction of its own (section 17.2.3): it stops that 2xx's retransmissions.
      if (message.method === 'ACK') return transaction.acknowledge(message, remote);
      const connection = transport.get(remote);
      if (!connection) return drop('no connection to answer on', remote);
      const created = transaction.createServerTransaction(message, connection);
      // A CANCEL matches the INVITE with its branch (section 9.2): without one there is nothing to cancel.
      if (message.method === 'CANCEL' && !transaction.getInviteServer(message)) {
        created.send(tagged(makeResponse(message, 481, 'Call/Transaction Does Not Exist')));
        return;
      }
      try {
        onRequest(message, remote);
      } catch (error) {
        created.send(tagged(makeResponse(message, 500, 'Server Internal Error')));
        throw error;
      }
    } catch (error) {
      errorLog(error);
    }
  }

  const transport = makeTransport(options, receive, hostname);
  const transaction = makeTransactionLayer({
    t1: options.t1,
    t2: options.t2,
    t4: options.t4,
    acknowledged: onRequest,
    unacknowledged: (response) => options.unacknowledged?.(response),
    error: errorLog,
    refused: (what) => debugLog(what, 'SIP transaction: signal its state does not expect'),
  });
  const flowSecret = randomBytes(20);

  function flowRoute(remote: SipRemote): SipAor {
    return { uri: `sip:${encodeFlowToken(remote)}@${hostname};lr`, params: {} };
  }

  function encodeFlowToken(flow: SipRemote): string {
    const text = [flow.protocol, flow.address, flow.port, flow.local?.address, flow.local?.port].join();
    const mac = createHmac('sha1', flowSecret).update(text).digest('base64');
    return Buffer.from(`${mac},${text}`).toString('base64url');
  }

  function decodeFlowToken(token: string | undefined): SipRemote | undefined {
    if (!token) return undefined;
    const parts = Buffer.from(token, 'base64url').toString('ascii').split(',');
    if (parts.length !== 6) return undefined;
    const flow = {
      protocol: parts[1]!,
      address: parts[2]!,
      port: Number(parts[3]),
      local: { address: parts[4]!, port: Number(parts[5]) },
    };
    return encodeFlowToken(flow) === token ? flow : undefined;
  }

  /**
   * The connection a hop names when it is one of our own flow tokens (RFC 5626: its host our name, its user part
   * a token we made), else undefined. Our name alone does not make a hop ours: a phone may sit on our address
   * (one machine) or be reached by the SIP domain we are named by, and its requests must still go out to it.
   */
  function ownFlow(uri: ReturnType<typeof parseUri>): SipRemote | undefined {
    return uri?.host === hostname ? decodeFlowToken(uri.user) : undefined;
  }

  function sendRequest(message: SipMessage, callback: (response: SipMessage) => void) {
    let hop = parseUri(message.uri ?? '');
    if (!hop) return callback(makeResponse(message, 416, 'Unsupported URI Scheme'));
    const route = message.headers.route;
    if (route && route.length > 0) {
      const first = parseUri(route[0]!.uri);
      if (first && ownFlow(first)) {
        // A route through ourselves: its user part is a flow token naming the connection to use.
        route.shift();
        hop = first;
      } else if (first && first.params.lr === undefined) {
        // A strict router (RFC 3261 section 16.12.1.2): it becomes the Request-URI.
        route.shift();
        route.push({ uri: message.uri ?? '', params: {} });
        message.uri = stringifyUri(first);
        hop = first;
      } else if (first) hop = first;
    }
    const target = hop;
    const withAddresses = (addresses: Address[]) => {
      if (message.method === 'ACK') {
        if (!Array.isArray(message.headers.via)) message.headers.via = [];
        if (message.headers.via.length === 0) message.headers.via.unshift({ params: { branch: branch() } });
        if (addresses.length === 0)
          return errorLog(new Error(`ACK: couldn't resolve ${stringifyUri(target)}`));
        const connection = transport.open(addresses[0]!, errorLog);
        try {
          connection.send(message);
        } catch (error) {
          errorLog(error);
        } finally {
          connection.release();
        }
        return;
      }
      sequentialSearch(message, addresses, callback);
    };
    const flow = ownFlow(target);
    if (flow) withAddresses([flow]);
    else resolve(target, withAddresses);
  }

  /** Tries each address in turn while they answer 503 (RFC 3263 section 4.3). */
  function sequentialSearch(
    request: SipMessage,
    addresses: Address[],
    callback: (response: SipMessage) => void,
  ) {
    if (request.method !== 'CANCEL') {
      if (!request.headers.via) request.headers.via = [];
      request.headers.via.unshift({ params: {} });
    }
    let lastStatus: number | undefined;
    let onResponse: (response: SipMessage) => void;
    const searching = (response: SipMessage) => {
      lastStatus = response.status;
      if (response.status === 503) return next();
      if ((response.status ?? 0) > 100) onResponse = callback;
      callback(response);
    };
    function next() {
      onResponse = searching;
      const address = addresses.shift();
      if (!address) {
        onResponse = callback;
        return onResponse(makeResponse(request, lastStatus || 404));
      }
      let connection: Connection;
      try {
        connection = transport.open(address, () => client.message(makeResponse(request, 503)));
      } catch {
        return onResponse(makeResponse(request, address.local ? 430 : 503));
      }
      const client = transaction.createClientTransaction(connection, request, (response) =>
        onResponse(response),
      );
    }
    next();
  }

  return {
    send(message, callback) {
      if (message.method === undefined) transaction.getServer(message)?.send(message);
      else sendRequest(message, callback ?? (() => {}));
    },
    destroy() {
      transaction.destroy();
      transport.destroy();
    },
    acceptWebSocket: (socket, remote) => transport.acceptWebSocket(socket, remote),
    flowRoute,
    flowOf(uri) {
      const parsed = parseUri(uri);
      return parsed ? ownFlow(parsed) : undefined;
    },
    stats,
  };
}

/** The stack's own final responses get a To tag, as a UAS's must (RFC 3261 section 8.2.6.2). */
function tagged(response: SipMessage): SipMessage {
  const to = response.headers.to;
  if (to && !to.params?.tag) {
    response.headers.to = { ...to, params: { ...to.params, tag: randomBytes(6).toString('hex') } };
  }
  return response;
}
const branch = () => `z9hG4bK${randomBytes(8).toString('hex')}`;

const defaultPort = (protocol: string) => (protocol.toUpperCase() === 'TLS' ? 5061 : 5060);

/** The addresses a URI's host names (RFC 3263 in short: SRV, then A and AAAA), for each transport to try. */
function resolve(uri: SipUri, action: (addresses: Address[]) => void) {
  const transportParam = uri.params.transport ?? undefined;
  if (net.isIP(uri.host.replace(/^\[|\]$/g, ''))) {
    const protocol = transportParam || 'UDP';
    const address = uri.host.replace(/^\[|\]$/g, '');
    return action([{ protocol, address, port: uri.port || defaultPort(protocol) }]);
  }
  const resolve46 = (host: string, done: (addresses: string[]) => void) =>
    dns.resolve4(host, (_error4, v4) =>
      dns.resolve6(host, (_error6, v6) => done([...(v4 ?? []), ...(v6 ?? [])])),
    );
  const everyProtocol = (protocols: string[], port?: number) => (addresses: string[]) =>
    action(
      addresses.flatMap((address) =>
        protocols.map((protocol) => ({ protocol, address, port: port || defaultPort(protocol) })),
      ),
    );
  if (uri.port) return resolve46(uri.host, everyProtocol(transportParam ? [transportParam] : ['UDP', 'TCP']));
  const protocols = transportParam ? [transportParam] : ['tcp', 'udp'];
  let outstanding = protocols.length;
  let found: Address[] = [];
  for (const protocol of protocols) {
    dns.resolveSrv(`_sip._${protocol}.${uri.host}`, (_error, records) => {
      outstanding--;
      if (Array.isArray(records) && records.length) {
        outstanding += records.length;
        for (const record of records) {
          resolve46(record.name, (addresses) => {
            found = found.concat(addresses.map((address) => ({ protocol, address, port: record.port })));
            if (--outstanding === 0) action(found);
          });
        }
      } else if (outstanding === 0) {
        if (found.length) action(found);
        else resolve46(uri.host, everyProtocol(protocols, uri.port));
      }
    });
  }
}
