// Where a media stream's WebSocket may go, by the webhooks module's SSRF rules (platform/http/address-guard.ts):
// outside production wss or ws anywhere (a test's app on loopback); in production wss only, to public
// addresses only, checked on what the name resolves to when the flow is saved and again when the call
// connects, and the connection then made to exactly the addresses that passed (a name that resolves to a public
// address when checked and a private one when connecting cannot get through). A URL with a user name or
// password is refused everywhere (it would be sent to the app in the clear of the flow's record).
import type { LookupAddress } from 'node:dns';
import WebSocket from 'ws';
import {
  checkHost,
  ForbiddenAddressError,
  pinnedLookup,
  type Resolver,
} from '../../platform/http/address-guard.ts';
import { MAX_MESSAGE_BYTES } from './media-stream.ts';

/** The longest the WebSocket handshake (DNS, TCP, TLS, upgrade) may take. */
export const CONNECT_TIMEOUT_MS = 5000;

export interface StreamTargetOptions {
  /** Production: wss only, and only public addresses. */
  guarded: boolean;
  resolver?: Resolver;
}

/** A stream URL that may not be used: `message` says why, after the field's path. */
export class StreamTargetRefused extends Error {}

/** The URL's shape: ws or wss (wss only when guarded), no credentials. */
export function streamUrl(url: string, guarded: boolean): URL {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new StreamTargetRefused('must be an absolute ws or wss URL');
  }
  if (target.protocol !== 'wss:' && (guarded || target.protocol !== 'ws:')) {
    throw new StreamTargetRefused(guarded ? 'must be a wss URL' : 'must be a ws or wss URL');
  }
  if (target.username || target.password) {
    throw new StreamTargetRefused('must not contain a user name or password');
  }
  return target;
}

/**
 * The URL checked as the flow is saved: its shape, and when guarded that its host resolves to public addresses
 * only. Resolves with the addresses to connect to (undefined when not guarded).
 */
export async function checkStreamTarget(
  url: string,
  options: StreamTargetOptions,
): Promise<LookupAddress[] | undefined> {
  const target = streamUrl(url, options.guarded);
  if (!options.guarded) return undefined;
  try {
    return await checkHost(target.hostname, options.resolver);
  } catch (error) {
    if (error instanceof ForbiddenAddressError) {
      throw new StreamTargetRefused(`must point to a public address: ${error.message}`);
    }
    throw new StreamTargetRefused(`does not resolve: ${(error as Error).message}`);
  }
}

/**
 * Opens the stream's WebSocket with `headers` on its upgrade request (the signature: FlowApps.streamHeaders),
 * checked as at save time (the rules may have changed, the name moved): resolves once the handshake is done;
 * rejects (StreamTargetRefused, or the connection's error) otherwise. No redirects are followed and no
 * compression is offered.
 */
export async function openStreamSocket(
  url: string,
  options: StreamTargetOptions,
  headers: Record<string, string> = {},
): Promise<WebSocket> {
  const addresses = await checkStreamTarget(url, options);
  const socket = new WebSocket(url, {
    handshakeTimeout: CONNECT_TIMEOUT_MS,
    maxPayload: MAX_MESSAGE_BYTES,
    followRedirects: false,
    perMessageDeflate: false,
    headers: { ...headers, 'user-agent': 'commsplatform-media-streams/1' },
    // ws hands its options to the socket's connect: the checked addresses are the only ones it may reach.
    ...(addresses ? { lookup: pinnedLookup(addresses) } : {}),
  } as WebSocket.ClientOptions);
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => {
      socket.off('open', opened);
      socket.terminate();
      reject(error);
    };
    const opened = () => {
      socket.off('error', failed);
      resolve(socket);
    };
    socket.once('open', opened);
    socket.once('error', failed);
  });
}
