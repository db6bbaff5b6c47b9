// The SSRF guard for URLs we reach on a customer's say (webhooks, hosted MMS media). In production such a URL
// may only reach the public internet: never this host, the private network, link-local (cloud metadata at
// 169.254.169.254), CGNAT, multicast and the like.
// The check is made on the addresses a name resolves to, not on the name, and the connection is then made to
// exactly the addresses that passed (a `lookup` handed to the socket), so a name that resolves to a public
// address when checked and to a private one when connecting (DNS rebinding) cannot get through.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

const FORBIDDEN = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", includes the unspecified 0.0.0.0
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, includes broadcast
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // IPv4-compatible (deprecated) addresses
  ['64:ff9b::', 96], // NAT64: reaches an embedded IPv4 address
  ['::ffff:0:0:0', 96], // IPv4-translated (RFC 2765): carries an IPv4 address too
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments (Teredo and others)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: reaches an embedded IPv4 address
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv6');
}

/**
 * True when `address` (an IP literal) is not a public unicast address. IPv4-mapped IPv6 (`::ffff:127.0.0.1`,
 * `::ffff:7f00:1`) is judged by its IPv4 address. Anything that is not an IP literal is refused.
 */
export function isForbiddenAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return FORBIDDEN.check(bare, 'ipv4');
  if (family === 6) {
    const mapped = mappedIpv4(bare);
    if (mapped) return FORBIDDEN.check(mapped, 'ipv4');
    return FORBIDDEN.check(bare, 'ipv6');
  }
  return true;
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:0:0/96), else undefined. */
function mappedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower);
  if (dotted && isIP(dotted[1]!) === 4) return dotted[1];
  const hex = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return undefined;
  const high = Number.parseInt(hex[1]!, 16);
  const low = Number.parseInt(hex[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

export class ForbiddenAddressError extends Error {
  readonly code = 'WEBHOOK_ADDRESS_FORBIDDEN';
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    );
  });

/** The host of a URL's hostname without IPv6 brackets. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * Resolves `hostname` and refuses it if any of its addresses is forbidden (one bad address is enough: the
 * connection could land on any of them). Returns the addresses, which are the only ones to connect to.
 */
export async function checkHost(
  hostname: string,
  resolver: Resolver = systemResolver,
): Promise<LookupAddress[]> {
  const host = bareHost(hostname);
  const family = isIP(host);
  if (family !== 0) {
    if (isForbiddenAddress(host)) throw new ForbiddenAddressError(`${host} is not a public address`);
    return [{ address: host, family }];
  }
  if (host === 'localhost' || host.endsWith('.localhost')) {
    throw new ForbiddenAddressError(`${host} is this machine`);
  }
  const addresses = await resolver(host);
  if (addresses.length === 0) throw new ForbiddenAddressError(`${host} does not resolve`);
  const bad = addresses.find((entry) => isForbiddenAddress(entry.address));
  if (bad)
    throw new ForbiddenAddressError(`${host} resolves to ${bad.address}, which is not a public address`);
  return addresses;
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for sockets that answers with addresses already checked. Handed to http.request, it replaces
 * the socket's own DNS query, so the connection goes to a checked address and nowhere else.
 */
export function pinnedLookup(addresses: LookupAddress[]) {
  return (
    _hostname: string,
    options: { all?: boolean; family?: number | string },
    callback: LookupCallback,
  ) => {
    const wanted = Number(options.family) || 0;
    const usable = wanted ? addresses.filter((entry) => entry.family === wanted) : addresses;
    if (usable.length === 0) {
      callback(
        Object.assign(new Error('No checked address of the requested family'), { code: 'ENOTFOUND' }),
        '',
      );
      return;
    }
    if (options.all) callback(null, usable);
    else callback(null, usable[0]!.address, usable[0]!.family);
  };
}
