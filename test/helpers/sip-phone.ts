// A SIP phone on a raw UDP socket, for tests that need what SIPp's scenarios make awkward: registering and calling
// with digest (MD5, qop=auth), answering calls (180, 200 with PCMU on a port of its own), sending requests in a
// dialog (REFER, BYE) and taking ours (NOTIFY, BYE, re-INVITE: each answered 200 and kept, in order, for the
// test to read). Every message it sends is plain RFC 3261; what it receives is parsed just enough to answer.
import { createHash, randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';

const token = () => randomBytes(6).toString('hex');
const md5 = (...parts: string[]) => createHash('md5').update(parts.join(':')).digest('hex');

export interface SipText {
  /** The request's method, or undefined for a response. */
  method?: string;
  uri?: string;
  status?: number;
  /** Header values by lower-cased name, in order. */
  headers: Record<string, string[]>;
  body: string;
  text: string;
}

export function parseSip(text: string): SipText {
  const end = text.indexOf('\r\n\r\n');
  const [start = '', ...lines] = (end < 0 ? text : text.slice(0, end)).split('\r\n');
  const headers: Record<string, string[]> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers[name] = [...(headers[name] ?? []), line.slice(colon + 1).trim()];
  }
  const body = end < 0 ? '' : text.slice(end + 4);
  if (start.startsWith('SIP/2.0 ')) return { status: Number(start.split(' ')[1]), headers, body, text };
  const [method, uri] = start.split(' ');
  return { method, uri, headers, body, text };
}

const first = (message: SipText, name: string) => message.headers[name]?.[0] ?? '';
const tagOf = (value: string) => /;tag=([^;>\s]+)/.exec(value)?.[1] ?? '';

/** A dialog as the phone holds it. */
export interface PhoneDialog {
  callId: string;
  localTag: string;
  remoteTag: string;
  /** Our From (or To) header value in it, tag included; theirs. */
  local: string;
  remote: string;
  cseq: number;
}

export class SipPhone {
  /** Requests received in order (INVITE, ACK, NOTIFY, BYE, …). */
  readonly received: SipText[] = [];
  private readonly pending = new Map<string, (response: SipText) => void>();
  private readonly waiters: { match: (message: SipText) => boolean; resolve: (message: SipText) => void }[] =
    [];
  private nc = 0;
  /** When false, an INVITE is answered 180 and then waits for answer(). */
  autoAnswer = true;
  /** A status line to refuse INVITEs with (`486 Busy Here`), instead of answering. */
  refuse?: string;
  private ringing?: SipText;

  private constructor(
    private readonly socket: Socket,
    readonly port: number,
    /** The PBX's SIP port on loopback. */
    private readonly server: number,
    readonly username: string,
    private readonly password: string,
    readonly extension: string,
    /** Where the SDP of this phone says its audio goes. */
    readonly mediaPort: number,
    private readonly media: Socket,
  ) {
    socket.on('message', (data) => this.onMessage(parseSip(data.toString('latin1'))));
    media.on('message', (packet) => {
      this.mediaReceived.push(performance.now());
      this.readKey(packet);
    });
  }

  /** When each RTP packet reached our media port (performance.now()). */
  readonly mediaReceived: number[] = [];
  /**
   * Set before a call to offer RFC 4733 telephone-events (payload type 101) beside PCMU: the keys received so
   * are in `keysReceived`, one per event (its first packet; an event's timestamp stays the same throughout).
   */
  telephoneEvents = false;
  keysReceived = '';
  /** The telephone-event payload type of the call: ours (101) when we offer, the offer's when we answer. */
  private eventType = 101;
  private lastKeyTimestamp?: number;

  private readKey(packet: Buffer): void {
    if (!this.telephoneEvents || packet.length < 16 || (packet[1]! & 0x7f) !== this.eventType) return;
    const timestamp = packet.readUInt32BE(4);
    if (timestamp === this.lastKeyTimestamp) return;
    this.lastKeyTimestamp = timestamp;
    this.keysReceived += '0123456789*#ABCD'[packet[12]!] ?? '?';
  }

  static async open(
    server: number,
    who: { extension: string; sip: { username: string; password: string } },
  ): Promise<SipPhone> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    const media = createSocket('udp4');
    await new Promise<void>((resolve) => media.bind(0, '127.0.0.1', resolve));
    const mediaPort = media.address().port;
    socket.on('close', () => media.close());
    return new SipPhone(
      socket,
      socket.address().port,
      server,
      who.sip.username,
      who.sip.password,
      who.extension,
      mediaPort,
      media,
    );
  }

  close(): void {
    this.socket.close();
  }

  get contact(): string {
    return `<sip:${this.username}@127.0.0.1:${this.port}>`;
  }

  sdp(version = 1): string {
    const type = this.eventType;
    const events = this.telephoneEvents
      ? { formats: ` ${type}`, lines: `a=rtpmap:${type} telephone-event/8000\r\na=fmtp:${type} 0-15\r\n` }
      : { formats: '', lines: '' };
    return `v=0\r\no=phone 1 ${version} IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio ${this.mediaPort} RTP/AVP 0${events.formats}\r\na=rtpmap:0 PCMU/8000\r\n${events.lines}`;
  }

  /**
   * Sends `packets` RTP packets of PCMU silence, 20 ms apart, from our media port to `port` on loopback (fewer
   * when `stop` says so first).
   */
  async sendRtp(port: number, packets = 10, stop?: () => boolean): Promise<void> {
    for (let sequence = 0; sequence < packets && !stop?.(); sequence++) {
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header.writeUInt16BE(sequence, 2);
      header.writeUInt32BE(sequence * 160, 4);
      header.writeUInt32BE(0x5eed, 8);
      this.media.send(Buffer.concat([header, Buffer.alloc(160, 0xff)]), port, '127.0.0.1');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** The next request of `method` received from now on (or already received and not yet taken). */
  next(method: string, timeoutMs = 15_000): Promise<SipText> {
    const index = this.received.findIndex((message) => message.method === method);
    if (index >= 0) return Promise.resolve(this.received.splice(index, 1)[0]!);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.extension}: no ${method} came`)), timeoutMs);
      this.waiters.push({
        match: (message) => message.method === method,
        resolve: (message) => {
          clearTimeout(timer);
          this.received.splice(this.received.indexOf(message), 1);
          resolve(message);
        },
      });
    });
  }

  /** REGISTER, answering the digest challenge; the final status. */
  async register(): Promise<number> {
    const dialog = this.newDialog(`<sip:${this.username}@localhost>`);
    const headers = { Expires: '120' };
    let answer = await this.request('REGISTER', 'sip:localhost', dialog, headers);
    if (answer.status === 401) {
      answer = await this.request('REGISTER', 'sip:localhost', dialog, {
        ...headers,
        Authorization: this.authorization(answer, 'REGISTER', 'sip:localhost'),
      });
    }
    return answer.status!;
  }

  /** Calls `target` (an extension number), answering the challenge; the dialog once answered and ACKed. */
  async call(target: string, headers: Record<string, string> = {}): Promise<PhoneDialog> {
    const { answer, dialog } = await this.offer(target, headers);
    if (answer.status !== 200) throw new Error(`${this.extension}: call answered ${answer.status}`);
    this.lastAnswer = answer;
    dialog.remoteTag = tagOf(first(answer, 'to'));
    dialog.remote = first(answer, 'to');
    this.send(this.inDialog('ACK', dialog, dialog.cseq));
    return dialog;
  }

  /**
   * An INVITE to `target`, answering a digest challenge: its final response, whatever it is (a refusal is
   * ACKed, RFC 3261 section 17.1.1.3; a 200 is left for the caller to ACK), and the dialog it began.
   */
  async offer(
    target: string,
    headers: Record<string, string> = {},
  ): Promise<{ answer: SipText; dialog: PhoneDialog }> {
    const uri = `sip:${target}@localhost`;
    const dialog = this.newDialog(`<${uri}>`);
    const offer = { 'Content-Type': 'application/sdp', ...headers };
    let answer = await this.request('INVITE', uri, dialog, offer, this.sdp());
    if (answer.status === 401) {
      this.ackFailure(uri, dialog, answer);
      answer = await this.request(
        'INVITE',
        uri,
        dialog,
        { ...offer, Authorization: this.authorization(answer, 'INVITE', uri) },
        this.sdp(),
      );
    }
    if (answer.status !== 200) this.ackFailure(uri, dialog, answer);
    return { answer, dialog };
  }

  /** Answers the INVITE that rings (autoAnswer off): 200 with our SDP; the dialog. */
  answer(): PhoneDialog {
    const invite = this.ringing;
    if (!invite) throw new Error(`${this.extension}: nothing rings`);
    this.ringing = undefined;
    return this.answerInvite(invite);
  }

  /** The dialog of the last INVITE we answered. */
  answered?: PhoneDialog;
  /** The 200 to the last call we placed (its SDP says where the relay listens for us). */
  lastAnswer?: SipText;

  /** A request in `dialog` (REFER, BYE, …) with `headers`; its final response. */
  inDialogRequest(
    method: string,
    dialog: PhoneDialog,
    headers: Record<string, string> = {},
    body = '',
  ): Promise<SipText> {
    dialog.cseq += 1;
    return this.exchange(this.inDialog(method, dialog, dialog.cseq, headers, body));
  }

  /** A request outside any dialog (OPTIONS, say) to `target`; its final response. */
  outOfDialogRequest(method: string, target: string): Promise<SipText> {
    const uri = `sip:${target}@localhost`;
    return this.request(method, uri, this.newDialog(`<${uri}>`), {});
  }

  private newDialog(remote: string): PhoneDialog {
    const localTag = token();
    return {
      callId: `${token()}@127.0.0.1`,
      localTag,
      remoteTag: '',
      local: `<sip:${this.username}@localhost>;tag=${localTag}`,
      remote,
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
    const ha1 = md5(this.username, realm, this.password);
    const response = md5(ha1, nonce, count, cnonce, 'auth', md5(method, uri));
    return `Digest username="${this.username}", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=MD5, qop=auth, nc=${count}, cnonce="${cnonce}"`;
  }

  private request(
    method: string,
    uri: string,
    dialog: PhoneDialog,
    headers: Record<string, string>,
    body = '',
  ): Promise<SipText> {
    dialog.cseq += 1;
    const lines = [
      `${method} ${uri} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${this.port};branch=z9hG4bK${token()};rport`,
      'Max-Forwards: 70',
      `From: ${dialog.local}`,
      `To: ${dialog.remote}`,
      `Call-ID: ${dialog.callId}`,
      `CSeq: ${dialog.cseq} ${method}`,
      `Contact: ${this.contact}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ];
    return this.exchange(finish(lines, body));
  }

  private inDialog(
    method: string,
    dialog: PhoneDialog,
    seq: number,
    headers: Record<string, string> = {},
    body = '',
  ): string {
    return finish(
      [
        `${method} sip:pbx@127.0.0.1:${this.server} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${this.port};branch=z9hG4bK${token()};rport`,
        'Max-Forwards: 70',
        `From: ${dialog.local}`,
        `To: ${dialog.remote}`,
        `Call-ID: ${dialog.callId}`,
        `CSeq: ${seq} ${method}`,
        `Contact: ${this.contact}`,
        ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      ],
      body,
    );
  }

  /** Sends a request and resolves with its final response (matched by the Via branch). */
  private exchange(text: string): Promise<SipText> {
    const branch = /branch=([^;\s]+)/.exec(text)![1]!;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.extension}: no answer to ${text.split('\r\n')[0]}`)),
        10_000,
      );
      this.pending.set(branch, (response) => {
        clearTimeout(timer);
        resolve(response);
      });
      this.send(text);
    });
  }

  /** The ACK of a non-2xx final response (RFC 3261 section 17.1.1.3): the INVITE's branch and CSeq. */
  private ackFailure(uri: string, dialog: PhoneDialog, response: SipText): void {
    this.send(finish(failureAckLines(uri, dialog, response), ''));
  }

  private send(text: string): void {
    this.socket.send(Buffer.from(text, 'latin1'), this.server, '127.0.0.1');
  }

  private respond(request: SipText, status: string, extra: string[] = [], body = '', tag?: string): void {
    const to = first(request, 'to');
    this.send(
      finish(
        [
          `SIP/2.0 ${status}`,
          ...request.headers.via!.map((via) => `Via: ${via}`),
          `From: ${first(request, 'from')}`,
          `To: ${tag && !tagOf(to) ? `${to};tag=${tag}` : to}`,
          `Call-ID: ${first(request, 'call-id')}`,
          `CSeq: ${first(request, 'cseq')}`,
          ...extra,
        ],
        body,
      ),
    );
  }

  private answerInvite(invite: SipText): PhoneDialog {
    const localTag = this.tags.get(first(invite, 'call-id'))!;
    // An answer keeps the offer's dynamic payload type (RFC 3264 section 6.1).
    const offered = /a=rtpmap:(\d+) telephone-event\/8000/i.exec(invite.body ?? '');
    this.eventType = offered ? Number(offered[1]) : 101;
    this.respond(
      invite,
      '200 OK',
      [`Contact: ${this.contact}`, 'Content-Type: application/sdp'],
      this.sdp(),
      localTag,
    );
    const dialog: PhoneDialog = {
      callId: first(invite, 'call-id'),
      localTag,
      remoteTag: tagOf(first(invite, 'from')),
      local: `${first(invite, 'to')};tag=${localTag}`,
      remote: first(invite, 'from'),
      cseq: 0,
    };
    this.answered = dialog;
    return dialog;
  }

  /** Our tag in each dialog a received INVITE began. */
  private readonly tags = new Map<string, string>();

  private onMessage(message: SipText): void {
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
      if (this.tags.has(callId)) return; // A retransmission.
      const tag = token();
      this.tags.set(callId, tag);
      if (this.refuse) this.respond(message, this.refuse, [], '', tag);
      else this.respond(message, '180 Ringing', [`Contact: ${this.contact}`], '', tag);
      if (this.refuse) {
        // Its ACK comes; nothing more.
      } else if (this.autoAnswer) this.answerInvite(message);
      else this.ringing = message;
    } else if (message.method === 'INVITE') {
      this.respond(
        message,
        '200 OK',
        [`Contact: ${this.contact}`, 'Content-Type: application/sdp'],
        this.sdp(2),
      );
    } else if (message.method === 'CANCEL') {
      this.respond(message, '200 OK');
    } else if (message.method !== 'ACK') {
      this.respond(message, '200 OK');
    }
    this.received.push(message);
    const waiter = this.waiters.find((each) => each.match(message));
    if (waiter) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve(message);
    }
  }
}

/**
 * The lines of the ACK of a non-2xx final response to an INVITE (RFC 3261 section 17.1.1.3): the INVITE's Via
 * (its branch), the response's To (its tag) and the INVITE's CSeq number.
 */
export function failureAckLines(
  target: string,
  dialog: { local: string; callId: string; cseq: number },
  response: SipText,
): string[] {
  return [
    `ACK ${target} SIP/2.0`,
    `Via: ${first(response, 'via')}`,
    'Max-Forwards: 70',
    `From: ${dialog.local}`,
    `To: ${first(response, 'to')}`,
    `Call-ID: ${dialog.callId}`,
    `CSeq: ${dialog.cseq} ACK`,
  ];
}

function finish(lines: string[], body: string): string {
  return `${lines.join('\r\n')}\r\nContent-Length: ${Buffer.byteLength(body, 'latin1')}\r\n\r\n${body}`;
}
