// SIP over WebSocket (RFC 7118): the transport of phones in browsers. The HTTP server accepts the upgrade at
// `/sip` (sip/websocket-endpoint.ts) and hands each open WebSocket here; every WebSocket message is one whole
// SIP message (section 5: no framing, Content-Length optional), parsed as a datagram is, with the same limits.
// A browser cannot be dialled: its connection is the only way to reach it (section 5, RFC 5626's flows), so
// `open` of a flow that is gone fails, and what it registered goes with it (the listener's `onFlowClosed`).
import { isUtf8 } from 'node:buffer';
import type { SipMessage, SipRemote } from './message.ts';
import { stringify } from './message.ts';
import { type ParseResult, parseMessage, SIP_LIMITS } from './parse.ts';

/** What the transport needs of a WebSocket (the `ws` package's WebSocket has it). */
export interface SipWebSocket {
  send(data: Buffer, options: { binary: boolean }): void;
  close(code?: number, reason?: string): void;
  on(event: 'message', listener: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** WebSocket close codes (RFC 6455 section 7.4.1) the transport closes with. */
export const CLOSE_MESSAGE_TOO_BIG = 1009;

export interface WebSocketFlows {
  accept(socket: SipWebSocket, remote: SipRemote): void;
  get(remote: SipRemote): { send(message: SipMessage): void } | undefined;
  /** Flows open now. */
  readonly size: number;
  destroy(): void;
}

const flowKey = (remote: { address: string; port: number }) => `${remote.address},${remote.port}`;

export function webSocketFlows(
  receive: (result: ParseResult, remote: SipRemote) => void,
  closed: (remote: SipRemote) => void,
): WebSocketFlows {
  const flows = new Map<string, { socket: SipWebSocket; remote: SipRemote }>();
  return {
    accept(socket, remote) {
      const key = flowKey(remote);
      flows.set(key, { socket, remote });
      socket.on('message', (data) => {
        const bytes = Buffer.isBuffer(data)
          ? data
          : Array.isArray(data)
            ? Buffer.concat(data)
            : Buffer.from(data);
        // A text frame is UTF-8 (RFC 6455): the stack reads bytes one per character, as it does a datagram.
        if (bytes.length > SIP_LIMITS.maxMessageBytes) {
          socket.close(CLOSE_MESSAGE_TOO_BIG, 'SIP message too large');
          return;
        }
        receive(parseMessage(bytes), remote);
      });
      socket.on('error', () => {});
      socket.on('close', () => {
        if (flows.get(key)?.socket !== socket) return;
        flows.delete(key);
        closed(remote);
      });
    },
    get(remote) {
      const flow = flows.get(flowKey(remote));
      if (!flow) return undefined;
      return {
        send(message) {
          const bytes = Buffer.from(stringify(message), 'latin1');
          // Text frames must be UTF-8 (RFC 6455 section 5.6); a message that is not goes as a binary frame,
          // which RFC 7118 section 5 allows.
          flow.socket.send(bytes, { binary: !isUtf8(bytes) });
        },
      };
    },
    get size() {
      return flows.size;
    },
    destroy() {
      for (const { socket } of flows.values()) socket.close(1001, 'SIP listener stopped');
      flows.clear();
    },
  };
}
