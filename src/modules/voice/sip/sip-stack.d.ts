// The parts of the `sip` package (kirm/sip.js, 0.0.6) this module uses. It ships no types.
declare module 'sip' {
  export interface SipUri {
    schema?: string;
    user?: string;
    host?: string;
    port?: number;
    params?: Record<string, string | null>;
  }
  export interface SipAor {
    name?: string;
    uri: string;
    params: Record<string, string | null | undefined>;
  }
  export interface SipMessage {
    method?: string;
    uri?: string;
    version?: string;
    status?: number;
    reason?: string;
    headers: {
      to: SipAor;
      from: SipAor;
      'call-id': string;
      cseq: { seq: number; method: string };
      via: { params: Record<string, unknown> }[];
      contact?: SipAor[] | '*';
      expires?: string;
      authorization?: Record<string, string>[];
      'www-authenticate'?: Record<string, string>[];
      'user-agent'?: string;
      [name: string]: unknown;
    };
    content?: string;
  }
  export interface SipRemote {
    protocol: string;
    address: string;
    port: number;
  }
  export interface SipStack {
    send(message: SipMessage, callback?: (response: SipMessage) => void): void;
    destroy(): void;
  }
  export function create(
    options: {
      port?: number;
      address?: string;
      udp?: boolean;
      tcp?: boolean;
      publicAddress?: string;
      logger?: { error?: (error: unknown) => void };
    },
    onRequest: (request: SipMessage, remote: SipRemote) => void,
  ): SipStack;
  export function makeResponse(
    request: SipMessage,
    status: number,
    reason: string,
    extension?: { headers?: Record<string, unknown> },
  ): SipMessage;
  export function parseUri(uri: string): SipUri;
}
