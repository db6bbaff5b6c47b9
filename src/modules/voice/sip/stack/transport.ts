// The SIP transports: UDP and TCP sockets, each message through the parser with limits (parse.ts). Vendored
// from the `sip` package (kirm/sip.js 0.0.6) with its TLS and WebSocket transports left out (we listen on
// neither) and its regular-expression framing replaced. A connection is an object to send through; a stream
// connection is shared and counted, and closed when idle.
import dgram from 'node:dgram';
import net from 'node:net';
import { type SipMessage, type SipRemote, stringify } from './message.ts';
import { type ParseResult, parseMessage, SipStreamFramer } from './parse.ts';
import { type SipWebSocket, webSocketFlows } from './websocket-transport.ts';

export interface Connection {
  send(message: SipMessage): void;
  release(): void;
  protocol: string;
}

export interface TransportOptions {
  port?: number;
  address?: string;
  udp?: boolean;
  tcp?: boolean;
  publicAddress?: string;
  hostname?: string;
  rport?: boolean;
  /** A WebSocket flow closed (RFC 7118): what was registered through it can no longer be reached. */
  onFlowClosed?: (remote: SipRemote) => void;
  logger?: {
    /** Each message as it leaves (retransmissions too), with where it goes. */
    send?: (message: SipMessage, target: SipRemote) => void;
    /** Each message that parsed and passed the checks, before the transaction layer. */
    recv?: (message: SipMessage, remote: SipRemote) => void;
  };
}

/** Every parsed datagram or framed stream message, with where it came from. */
export type Receive = (result: ParseResult, remote: SipRemote) => void;

interface ProtocolTransport {
  open(remote: SipRemote, onError?: (error: Error) => void): Connection;
  get(remote: SipRemote, onError?: (error: Error) => void): Connection | undefined;
  destroy(): void;
}

function udpTransport(options: TransportOptions, receive: Receive): ProtocolTransport {
  const address = options.address || '0.0.0.0';
  const port = options.port || 5060;
  const socket = dgram.createSocket(net.isIPv6(address) ? 'udp6' : 'udp4', (data, info) =>
    receive(parseMessage(data), {
      protocol: 'UDP',
      address: info.address,
      port: info.port,
      local: { address, port },
    }),
  );
  socket.bind(port, address);
  const open = (remote: SipRemote): Connection => ({
    send(message) {
      const text = stringify(message);
      socket.send(Buffer.from(text, 'latin1'), remote.port, remote.address);
    },
    protocol: 'UDP',
    release() {},
  });
  return { open, get: open, destroy: () => socket.close() };
}

function tcpTransport(options: TransportOptions, receive: Receive): ProtocolTransport {
  type Opener = (onError?: (error: Error) => void) => Connection;
  const remotes: Record<string, Opener> = Object.create(null);
  const flows: Record<string, Opener> = Object.create(null);

  function init(stream: net.Socket, remote: { address: string; port: number }): Opener {
    const remoteId = `${remote.address},${remote.port}`;
    let flowId: string | undefined;
    let references = 0;
    const registerFlow = () => {
      flowId = [remoteId, stream.localAddress, stream.localPort].join();
      flows[flowId] = remotes[remoteId]!;
    };
    const framer = new SipStreamFramer((result) =>
      receive(result, {
        protocol: 'TCP',
        address: stream.remoteAddress ?? remote.address,
        port: stream.remotePort ?? remote.port,
        local: { address: stream.localAddress ?? '', port: stream.localPort ?? 0 },
      }),
    );
    stream.setEncoding('latin1');
    stream.on('data', (chunk: string) => {
      // Over the limits or unframeable: nothing more on this stream can be trusted to start a message.
      if (!framer.push(chunk)) stream.destroy();
    });
    stream.on('close', () => {
      if (flowId) delete flows[flowId];
      delete remotes[remoteId];
    });
    stream.on('connect', registerFlow);
    stream.on('error', () => {});
    stream.on('end', () => {
      if (references !== 0) stream.emit('error', new Error('remote peer disconnected'));
      stream.end();
    });
    stream.on('timeout', () => {
      if (references === 0) stream.destroy();
    });
    stream.setTimeout(120_000);
    stream.setMaxListeners(10_000);
    remotes[remoteId] = (onError) => {
      references++;
      if (onError) stream.on('error', onError);
      return {
        release() {
          if (onError) stream.removeListener('error', onError);
          if (--references === 0) stream.emit('no_reference');
        },
        send(message) {
          stream.write(stringify(message), 'latin1');
        },
        protocol: 'TCP',
      };
    };
    if (stream.localPort) registerFlow();
    return remotes[remoteId]!;
  }

  const server = net.createServer((stream) =>
    init(stream, { address: stream.remoteAddress ?? '', port: stream.remotePort ?? 0 }),
  );
  server.listen(options.port || 5060, options.address);
  return {
    open(remote, onError) {
      const remoteId = `${remote.address},${remote.port}`;
      const existing = remotes[remoteId];
      if (existing) return existing(onError);
      return init(net.connect(remote.port, remote.address), remote)(onError);
    },
    get(remote, onError) {
      const opener = remote.local
        ? flows[[remote.address, remote.port, remote.local.address, remote.local.port].join()]
        : remotes[`${remote.address},${remote.port}`];
      return opener?.(onError);
    },
    destroy: () => server.close(),
  };
}

export interface Transport {
  open(target: SipRemote, onError?: (error: Error) => void): Connection;
  get(target: SipRemote, onError?: (error: Error) => void): Connection | undefined;
  /** A WebSocket the HTTP server accepted at `/sip` (protocol `WS` or `WSS` in `remote`). */
  acceptWebSocket(socket: SipWebSocket, remote: SipRemote): void;
  destroy(): void;
}

/** WebSocket flows as a transport: reached only through a connection the browser opened. */
function webSocketTransport(options: TransportOptions, receive: Receive) {
  const flows = webSocketFlows(receive, (remote) => options.onFlowClosed?.(remote));
  const get = (remote: SipRemote): Connection | undefined => {
    const flow = flows.get(remote);
    return (
      flow && { send: (message) => flow.send(message), protocol: remote.protocol.toUpperCase(), release() {} }
    );
  };
  const transport: ProtocolTransport = {
    get,
    open(remote) {
      const connection = get(remote);
      // A browser is never dialled (RFC 7118 section 5): its flow is gone, so is the way to it.
      if (!connection) throw new Error('WebSocket flow closed');
      return connection;
    },
    destroy: () => flows.destroy(),
  };
  return { transport, accept: (socket: SipWebSocket, remote: SipRemote) => flows.accept(socket, remote) };
}

/** Our Contact on a message to a browser says how to reach us again: over its WebSocket (RFC 7118 section 5). */
function contactOverWebSocket(message: SipMessage): void {
  // A REGISTER's 200 lists the browser's own bindings, which are not ours to change.
  if (message.headers.cseq?.method === 'REGISTER' || !Array.isArray(message.headers.contact)) return;
  message.headers.contact = message.headers.contact.map((contact) =>
    /;transport=/i.test(contact.uri) ? contact : { ...contact, uri: `${contact.uri};transport=ws` },
  );
}

/**
 * UDP and TCP as asked; a request sent through either gets our Via (host, port, transport, rport). The options
 * are read at each send, as the package did: the listener names our address in them after creating the stack.
 */
export function makeTransport(options: TransportOptions, receive: Receive, hostname: string): Transport {
  let protocols: Record<string, ProtocolTransport> = {};
  if (options.udp === undefined || options.udp) protocols.UDP = udpTransport(options, receive);
  if (options.tcp === undefined || options.tcp) protocols.TCP = tcpTransport(options, receive);
  const webSockets = webSocketTransport(options, receive);
  protocols.WS = webSockets.transport;
  protocols.WSS = webSockets.transport;

  const wrap = (connection: Connection, target: SipRemote): Connection => ({
    protocol: connection.protocol,
    release: () => connection.release(),
    send(message) {
      if (message.method) {
        const via = message.headers.via[0]!;
        via.host = options.publicAddress || options.address || options.hostname || hostname;
        via.port = options.port || 5060;
        via.protocol = connection.protocol;
        if (connection.protocol === 'UDP' && options.rport !== false) via.params.rport = null;
      }
      if (connection.protocol === 'WS' || connection.protocol === 'WSS') contactOverWebSocket(message);
      options.logger?.send?.(message, target);
      connection.send(message);
    },
  });
  const transportOf = (target: SipRemote) => {
    const transport = protocols[target.protocol.toUpperCase()];
    if (!transport) throw new Error(`no ${target.protocol} transport`);
    return transport;
  };

  return {
    open: (target, onError) => wrap(transportOf(target).open(target, onError), target),
    get(target, onError) {
      const flow = transportOf(target).get(target, onError);
      return flow && wrap(flow, target);
    },
    acceptWebSocket: (socket, remote) => webSockets.accept(socket, remote),
    destroy() {
      const open = protocols;
      protocols = {};
      for (const transport of new Set(Object.values(open))) transport.destroy();
    },
  };
}
