// SIP over WebSocket at `/sip` on the HTTP server's port (RFC 7118): browsers' SIP stacks (SIP.js, JsSIP)
// register extensions and place and take calls through it exactly as desk phones do over UDP. This file is the
// HTTP edge: which upgrades are taken, with which limits; the SIP listener's stack carries the messages.
//
// - The subprotocol `sip` is required (RFC 7118 section 4): an upgrade without it is refused 400 and no
//   WebSocket opens.
// - One SIP message per WebSocket message, at most 65,535 bytes like a UDP datagram (a bigger frame closes the
//   connection 1009, RFC 6455 section 7.4.1); each goes through the stack's parser with its limits.
// - Origin is not checked: nothing ambient authenticates a WebSocket here (no cookie, no session is read), every
//   REGISTER and INVITE carries its own digest credentials, so a page on another site gains nothing a SIP client
//   anywhere else would not have (docs/voice.md, "Phones in the browser").
// - The server pings every 30 seconds and closes a connection whose pong has not come by the next ping, so a
//   browser gone without a close frees its registrations, and idle timers of load balancers see traffic.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { App } from '../../../platform/http/app-type.ts';
import type { SipListener } from './listener.ts';
import { SIP_LIMITS } from './stack/parse.ts';

export const SIP_WEBSOCKET_PATH = '/sip';
/** WebSocket connections one process keeps open at most (each may hold a registered browser). */
export const MAX_SIP_WEBSOCKETS = 10_000;
const PING_INTERVAL_MS = 30_000;

/** Takes upgrades to `/sip` on the app's HTTP server and hands each WebSocket to the SIP listener. */
export function acceptSipWebSockets(app: App, listener: SipListener, options: { trustProxy: boolean }): void {
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: SIP_LIMITS.maxMessageBytes,
    // Only `sip` is spoken; an upgrade that does not offer it was refused before this runs.
    handleProtocols: () => 'sip',
    perMessageDeflate: false,
  });
  const alive = new WeakMap<WebSocket, boolean>();
  const pings = setInterval(() => {
    for (const socket of server.clients) {
      if (alive.get(socket) === false) {
        socket.terminate();
        continue;
      }
      alive.set(socket, false);
      socket.ping();
    }
  }, PING_INTERVAL_MS);
  pings.unref();

  const refuse = (socket: Duplex, status: number, reason: string) => {
    socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== SIP_WEBSOCKET_PATH) return;
    socket.on('error', () => {});
    const protocols = (request.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((protocol) => protocol.trim().toLowerCase());
    // RFC 7118 section 4: without `sip` among the offered subprotocols the handshake must not complete.
    if (!protocols.includes('sip')) return refuse(socket, 400, 'Bad Request');
    if (!listener.listening) return refuse(socket, 503, 'Service Unavailable');
    if (server.clients.size >= MAX_SIP_WEBSOCKETS) return refuse(socket, 503, 'Service Unavailable');
    server.handleUpgrade(request, socket, head, (webSocket) => {
      alive.set(webSocket, true);
      webSocket.on('pong', () => alive.set(webSocket, true));
      const remote = request.socket;
      listener.acceptWebSocket(webSocket, {
        // Behind TLS (directly or at a proxy we trust) the browser speaks `wss`: its Via says WSS.
        protocol: secure(request, options.trustProxy) ? 'WSS' : 'WS',
        address: remote.remoteAddress ?? '',
        port: remote.remotePort ?? 0,
        local: { address: remote.localAddress ?? '', port: remote.localPort ?? 0 },
      });
    });
  };
  app.server.on('upgrade', onUpgrade);
  app.addHook('onClose', async () => {
    clearInterval(pings);
    app.server.off('upgrade', onUpgrade);
    for (const socket of server.clients) socket.terminate();
    server.close();
  });
}

function secure(request: IncomingMessage, trustProxy: boolean): boolean {
  if ('encrypted' in request.socket && request.socket.encrypted) return true;
  // Only a proxy we trust (TRUST_PROXY) may say the browser's side was TLS.
  return trustProxy && request.headers['x-forwarded-proto'] === 'https';
}
