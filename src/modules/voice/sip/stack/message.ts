// The shape of a SIP message in memory, and how one is written to the wire. The shape is the one the `sip`
// package (kirm/sip.js 0.0.6) gave, which this stack was vendored from (docs/architecture.md says why), so that
// the registrar and the PBX read the same fields: lower-case header names, To/From/Contact/Route as
// name-addr objects, Via as a list, CSeq as {seq, method}.

export interface SipUri {
  schema: string;
  user?: string;
  password?: string;
  host: string;
  port?: number;
  params: Record<string, string | null>;
  headers: Record<string, string>;
}

/** A name-addr or addr-spec with its header parameters; `name` keeps its quotes, as written. */
export interface SipAor {
  name?: string;
  uri: string;
  params: Record<string, string | null | undefined>;
}

export interface SipVia {
  version?: string;
  protocol?: string;
  host?: string;
  port?: number;
  params: Record<string, unknown>;
}

export interface SipCSeq {
  seq: number;
  method: string;
}

/** An authentication header's scheme and its parameters, quoted values still quoted. */
export type SipAuth = Record<string, string>;

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
    cseq: SipCSeq;
    via: SipVia[];
    contact?: SipAor[] | '*';
    route?: SipAor[];
    'record-route'?: SipAor[];
    'content-length'?: number;
    expires?: string;
    authorization?: SipAuth[];
    'www-authenticate'?: SipAuth[];
    'user-agent'?: string;
    [name: string]: unknown;
  };
  content?: string;
  /**
   * Set by the stack on a message that came over a WebSocket: the Route back through that connection, the only
   * way to reach a browser again (RFC 7118 section 5). A dialog it begins keeps it first in its route set.
   */
  flow?: SipAor;
}

/** Where a message came from: the transport and the peer's address. */
export interface SipRemote {
  protocol: string;
  address: string;
  port: number;
  local?: { address: string; port: number };
}

export function stringifyParams(params: Record<string, unknown> | undefined): string {
  let text = '';
  for (const name in params) {
    const value = params[name];
    text += `;${name}${value !== null && value !== undefined && value !== '' ? `=${value}` : ''}`;
  }
  return text;
}

export function stringifyUri(uri: string | SipUri): string {
  if (typeof uri === 'string') return uri;
  let text = `${uri.schema || 'sip'}:`;
  if (uri.user) text += uri.password ? `${uri.user}:${uri.password}@` : `${uri.user}@`;
  text += uri.host;
  if (uri.port) text += `:${uri.port}`;
  text += stringifyParams(uri.params);
  const headers = Object.entries(uri.headers ?? {}).map(([name, value]) => `${name}=${value}`);
  if (headers.length) text += `?${headers.join('&')}`;
  return text;
}

function stringifyAor(aor: SipAor): string {
  return `${aor.name || ''} <${stringifyUri(aor.uri)}>${stringifyParams(aor.params)}`;
}

export function stringifyAuth(auth: SipAuth): string {
  const params = Object.keys(auth)
    .filter((name) => name !== 'scheme' && auth[name] !== undefined)
    .map((name) => `${name}=${auth[name]}`);
  return auth.scheme ? `${auth.scheme} ${params.join(',')}` : params.join(',');
}

type Stringifier = (value: never) => string;
const addressList = (name: string) => (list: SipAor[]) =>
  list.length ? `${name}: ${list.map(stringifyAor).join(', ')}\r\n` : '';
const authList = (name: string) => (list: SipAuth[]) =>
  list.map((auth) => `${name}: ${stringifyAuth(auth)}\r\n`).join('');

const stringifiers: Record<string, Stringifier> = {
  via: (list: SipVia[]) =>
    list
      .map((via) =>
        via.host
          ? `Via: SIP/${via.version || '2.0'}/${String(via.protocol).toUpperCase()} ${via.host}${via.port ? `:${via.port}` : ''}${stringifyParams(via.params)}\r\n`
          : '',
      )
      .join(''),
  to: (aor: SipAor) => `To: ${stringifyAor(aor)}\r\n`,
  from: (aor: SipAor) => `From: ${stringifyAor(aor)}\r\n`,
  contact: (list: SipAor[] | '*') =>
    `Contact: ${list !== '*' && list.length ? list.map(stringifyAor).join(', ') : '*'}\r\n`,
  route: addressList('Route'),
  'record-route': addressList('Record-Route'),
  path: addressList('Path'),
  cseq: (cseq: SipCSeq) => `CSeq: ${cseq.seq} ${cseq.method}\r\n`,
  'www-authenticate': authList('WWW-Authenticate'),
  'proxy-authenticate': authList('Proxy-Authenticate'),
  authorization: authList('Authorization'),
  'proxy-authorization': authList('Proxy-Authorization'),
  'authentication-info': (auth: SipAuth) => `Authentication-Info: ${stringifyAuth(auth)}\r\n`,
  'refer-to': (aor: SipAor) => `Refer-To: ${stringifyAor(aor)}\r\n`,
};

function prettifyHeaderName(name: string): string {
  if (name === 'call-id') return 'Call-ID';
  if (name === 'cseq') return 'CSeq';
  return name.replace(/\b[a-z]/g, (letter) => letter.toUpperCase());
}

/** The message as wire text (one byte per character: the stack reads and writes 'binary' strings). */
export function stringify(message: SipMessage): string {
  let text = message.status
    ? `SIP/${message.version || '2.0'} ${message.status} ${message.reason}\r\n`
    : `${message.method} ${stringifyUri(message.uri ?? '')} SIP/${message.version || '2.0'}\r\n`;
  message.headers['content-length'] = (message.content || '').length;
  for (const name in message.headers) {
    const value = message.headers[name];
    if (value === undefined) continue;
    const stringifier = stringifiers[name];
    text +=
      typeof value === 'string' || !stringifier
        ? `${prettifyHeaderName(name)}: ${value}\r\n`
        : stringifier(value as never);
  }
  return `${text}\r\n${message.content || ''}`;
}

export function makeResponse(
  request: SipMessage,
  status: number,
  reason?: string,
  extension?: { headers?: Record<string, unknown>; content?: string },
): SipMessage {
  const response: SipMessage = {
    status,
    reason: reason || '',
    // Always ours: the package copied the request's, and answered a SIP/3.0 request `SIP/3.0 200 OK`.
    version: '2.0',
    headers: {
      via: request.headers.via,
      to: request.headers.to,
      from: request.headers.from,
      'call-id': request.headers['call-id'],
      cseq: request.headers.cseq,
    },
  };
  if (extension) {
    if (extension.headers) Object.assign(response.headers, extension.headers);
    response.content = extension.content;
  }
  return response;
}
