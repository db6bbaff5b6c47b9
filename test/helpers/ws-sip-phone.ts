// A browser's SIP over WebSocket (RFC 7118), for tests: a `ws` client offering the `sip` subprotocol that
// registers an extension with digest (MD5, qop=auth), calls, answers, and sends and takes requests in a dialog,
// the way JsSIP and SIP.js do (Via `SIP/2.0/WS <random>.invalid`, Contact on a `.invalid` host with
// `;transport=ws`: RFC 7118 section 5). The session descriptions it sends come from the test (a werift
// RTCPeerConnection playing the browser's media: test/helpers/webrtc-peer.ts). Every message received is kept.
import { createHash, randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { failureAckLines, parseSip, type SipText } from './sip-phone.ts';

const token = () => randomBytes(6).toString('hex');
const md5 = (...parts: string[]) => createHash('md5').update(parts.join(':')).digest('hex');
const first = (message: SipText, name: string) => message.headers[name]?.[0] ?? '';
export const tagOf = (value: string) => /;tag=([^;>\s]+)/.exec(value)?.[1] ?? '';

export interface WsDialog {
  callId: string;
  local: string;
  remote: string;
  /** Where requests in it go (the other side's Contact). */
  target: string;
  cseq: number;
}

export class WsSipPhone {
  /** Every message received, in order (requests and responses). */
  readonly log: SipText[] = [];
  /** Requests received and not yet taken by next(). */
  private readonly inbox: SipText[] = [];
  private readonly waiters: { method: string; resolve: (message: SipText) => void }[] = [];
  private readonly pending = new Map<string, (response: SipText) => void>();
  private readonly host = `${token()}.invalid`;
  private readonly user = token();
  private nc = 0;
  /** The answer to an INVITE we receive: the SDP to answer with (from the test's peer), or a refusal. */
  onInvite: (invite: SipText) => Promise<string> = async () => '';
  /** The answer to a re-INVITE's offer. */
  onReinvite: (invite: SipText) => Promise<string> = async () => '';

  private constructor(
    private readonly socket: WebSocket,
    readonly username: string,
    private readonly password: string,
  ) {
    socket.on('message', (data) => void this.onMessage(parseSip(data.toString())));
  }

  static async open(
    url: string,
    who: { sip: { username: string; password: string } },
    protocols: string[] = ['sip'],
  ): Promise<WsSipPhone> {
    const socket = new WebSocket(url, protocols);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
      socket.once('unexpected-response', (_request, response) =>
        reject(new Error(`upgrade refused ${response.statusCode}`)),
      );
    });
    return new WsSipPhone(socket, who.sip.username, who.sip.password);
  }

  /** The subprotocol the server chose. */
  get protocol(): string {
    return this.socket.protocol;
  }

  get contact(): string {
    return `<sip:${this.user}@${this.host};transport=ws>`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.readyState === WebSocket.CLOSED) return resolve();
      this.socket.once('close', () => resolve());
      this.socket.close();
    });
  }

  /** Sends raw text as one WebSocket message (tests of malformed input). */
  sendRaw(data: string | Buffer): void {
    this.socket.send(data);
  }

  /** The next request of `method` received (or already received and not yet taken). */
  next(method: string, timeoutMs = 15_000): Promise<SipText> {
    const index = this.inbox.findIndex((message) => message.method === method);
    if (index >= 0) return Promise.resolve(this.inbox.splice(index, 1)[0]!);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.username}: no ${method} came`)), timeoutMs);
      this.waiters.push({
        method,
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
      });
    });
  }

  /** REGISTER (digest answered); the final response. */
  async register(expires = 600): Promise<SipText> {
    const dialog = this.newDialog(`<sip:${this.username}@localhost>`, 'sip:localhost');
    const headers = { Expires: String(expires) };
    let answer = await this.request('REGISTER', dialog, headers);
    if (answer.status === 401) {
      answer = await this.request('REGISTER', dialog, {
        ...headers,
        Authorization: this.authorization(answer, 'REGISTER', 'sip:localhost'),
      });
    }
    return answer;
  }

  /** INVITE `target` with `sdp` (digest answered); the final response and the dialog (ACKed when 2xx). */
  async call(target: string, sdp: string): Promise<{ answer: SipText; dialog: WsDialog }> {
    const uri = `sip:${target}@localhost`;
    const dialog = this.newDialog(`<${uri}>`, uri);
    const headers = { 'Content-Type': 'application/sdp' };
    let answer = await this.request('INVITE', dialog, headers, sdp);
    if (answer.status === 401) {
      this.ackFailure(dialog, answer);
      answer = await this.request(
        'INVITE',
        dialog,
        { ...headers, Authorization: this.authorization(answer, 'INVITE', uri) },
        sdp,
      );
    }
    if (answer.status === 200) {
      dialog.remote = first(answer, 'to');
      dialog.target = /<([^>]+)>/.exec(first(answer, 'contact'))?.[1] ?? uri;
      this.send(this.inDialog('ACK', dialog, dialog.cseq));
    } else this.ackFailure(dialog, answer);
    return { answer, dialog };
  }

  /** A request in `dialog` (BYE, a re-INVITE with `sdp`); its final response (a 2xx to INVITE is ACKed). */
  async inDialogRequest(method: string, dialog: WsDialog, sdp = ''): Promise<SipText> {
    dialog.cseq += 1;
    const headers: Record<string, string> = sdp ? { 'Content-Type': 'application/sdp' } : {};
    const answer = await this.exchange(this.inDialog(method, dialog, dialog.cseq, headers, sdp));
    if (method === 'INVITE' && answer.status === 200) this.send(this.inDialog('ACK', dialog, dialog.cseq));
    return answer;
  }

  /** The dialog of the last INVITE we answered. */
  answered?: WsDialog;

  private newDialog(remote: string, target: string): WsDialog {
    return {
      callId: token(),
      local: `<sip:${this.username}@localhost>;tag=${token()}`,
      remote,
      target,
      cseq: 0,
    };
  }

  private authorization(challenge: SipText, method: string, uri: string): string {
    const header = first(challenge, 'www-authenticate');
    const param = (name: string) => new RegExp(`${name}="?([^",]+)"?`, 'i').exec(header)?.[1] ?? '';
    const realm = param('realm');
    const nonce = param('nonce');
    const count = (++this.nc).toString(16).padStart(8, '0');
    const cnonce = token();
    const response = md5(
      md5(this.username, realm, this.password),
      nonce,
      count,
      cnonce,
      'auth',
      md5(method, uri),
    );
    return `Digest username="${this.username}", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=MD5, qop=auth, nc=${count}, cnonce="${cnonce}"`;
  }

  private headLines(method: string, uri: string, dialog: WsDialog, seq: number): string[] {
    return [
      `${method} ${uri} SIP/2.0`,
      `Via: SIP/2.0/WS ${this.host};branch=z9hG4bK${token()}`,
      'Max-Forwards: 70',
      `From: ${dialog.local}`,
      `To: ${dialog.remote}`,
      `Call-ID: ${dialog.callId}`,
      `CSeq: ${seq} ${method}`,
      `Contact: ${this.contact}`,
    ];
  }

  private request(
    method: string,
    dialog: WsDialog,
    headers: Record<string, string>,
    body = '',
  ): Promise<SipText> {
    dialog.cseq += 1;
    const lines = this.headLines(method, dialog.target, dialog, dialog.cseq);
    return this.exchange(finish([...lines, ...headerLines(headers)], body));
  }

  private inDialog(
    method: string,
    dialog: WsDialog,
    seq: number,
    headers: Record<string, string> = {},
    body = '',
  ) {
    return finish([...this.headLines(method, dialog.target, dialog, seq), ...headerLines(headers)], body);
  }

  private exchange(text: string): Promise<SipText> {
    const branch = /branch=([^;\s]+)/.exec(text)![1]!;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${text.split('\r\n')[0]}`)), 10_000);
      this.pending.set(branch, (response) => {
        clearTimeout(timer);
        resolve(response);
      });
      this.send(text);
    });
  }

  private ackFailure(dialog: WsDialog, response: SipText): void {
    this.send(finish(failureAckLines(dialog.target, dialog, response), ''));
  }

  private send(text: string): void {
    this.socket.send(text);
  }

  private respond(request: SipText, status: string, extra: string[] = [], body = ''): void {
    this.send(
      finish(
        [
          `SIP/2.0 ${status}`,
          ...request.headers.via!.map((via) => `Via: ${via}`),
          `From: ${first(request, 'from')}`,
          `To: ${first(request, 'to')}`,
          `Call-ID: ${first(request, 'call-id')}`,
          `CSeq: ${first(request, 'cseq')}`,
          ...extra,
        ],
        body,
      ),
    );
  }

  private readonly tags = new Map<string, string>();

  private async onMessage(message: SipText): Promise<void> {
    this.log.push(message);
    if (message.status !== undefined) {
      if (message.status < 200) return;
      const branch = /branch=([^;\s]+)/.exec(first(message, 'via'))?.[1] ?? '';
      const resolve = this.pending.get(branch);
      this.pending.delete(branch);
      resolve?.(message);
      return;
    }
    const callId = first(message, 'call-id');
    const inDialog = tagOf(first(message, 'to')) !== '';
    if (message.method === 'INVITE' && !inDialog) {
      if (this.tags.has(callId)) return;
      const tag = token();
      this.tags.set(callId, tag);
      const to = `${first(message, 'to')};tag=${tag}`;
      const withTag = { ...message, headers: { ...message.headers, to: [to] } };
      this.respond(withTag, '180 Ringing', [`Contact: ${this.contact}`]);
      const sdp = await this.onInvite(message);
      this.respond(withTag, '200 OK', [`Contact: ${this.contact}`, 'Content-Type: application/sdp'], sdp);
      this.answered = {
        callId,
        local: to,
        remote: first(message, 'from'),
        target: /<([^>]+)>/.exec(first(message, 'contact'))?.[1] ?? '',
        cseq: 0,
      };
    } else if (message.method === 'INVITE') {
      const sdp = await this.onReinvite(message);
      this.respond(message, '200 OK', [`Contact: ${this.contact}`, 'Content-Type: application/sdp'], sdp);
    } else if (message.method !== 'ACK') {
      this.respond(message, '200 OK');
    }
    this.inbox.push(message);
    const waiter = this.waiters.find((each) => each.method === message.method);
    if (waiter) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      this.inbox.splice(this.inbox.indexOf(message), 1);
      waiter.resolve(message);
    }
  }
}

const headerLines = (headers: Record<string, string>) =>
  Object.entries(headers).map(([name, value]) => `${name}: ${value}`);

function finish(lines: string[], body: string): string {
  return `${lines.join('\r\n')}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
