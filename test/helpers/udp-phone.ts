// A phone made of a bare UDP socket, computing its digest answers with node:crypto as a phone does: it sends
// REGISTER and INVITE and waits for each one's final response (by its Via branch). Its digest username may
// differ from its address of record (`aor`), as with the console's phone credentials (CONTRACT section 16).
import { createHash, randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';

const md5 = (...parts: string[]) => createHash('md5').update(parts.join(':')).digest('hex');
const token = () => randomBytes(6).toString('hex');

export interface Response {
  status: number;
  text: string;
  header(name: string): string | undefined;
  /** A parameter of the WWW-Authenticate challenge (unquoted). */
  challenge(name: string): string | undefined;
}

function parseResponse(text: string): Response {
  const [statusLine = '', ...lines] = text.split('\r\n\r\n')[0]!.split('\r\n');
  const header = (name: string) =>
    lines.find((line) => line.toLowerCase().startsWith(`${name.toLowerCase()}:`))?.replace(/^[^:]*:\s*/, '');
  return {
    status: Number(statusLine.split(' ')[1]),
    text,
    header,
    challenge: (name) => {
      const match = new RegExp(`[\\s,]${name}=("([^"]*)"|[^\\s,]+)`, 'i').exec(
        header('www-authenticate') ?? '',
      );
      return match ? (match[2] ?? match[1]) : undefined;
    },
  };
}

/** A phone: a UDP socket that sends requests and waits for the final response of each (by its Via branch). */
export class UdpPhone {
  private readonly waiting = new Map<string, (response: Response) => void>();
  private cseq = 0;
  readonly callId = `${token()}@127.0.0.1`;
  readonly fromTag = token();

  private constructor(
    private readonly socket: Socket,
    readonly port: number,
    private readonly server: number,
    readonly username: string,
    readonly password: string,
    /** The address of record's user part (REGISTER's To and From); the username unless given. */
    readonly aorUser: string = username,
  ) {
    socket.on('message', (message) => {
      const text = message.toString();
      const response = parseResponse(text);
      const branch = /branch=([^;\s,]+)/.exec(response.header('via') ?? '')?.[1];
      if (!branch || response.status < 200) return; // 100 Trying and the like.
      const resolve = this.waiting.get(branch);
      this.waiting.delete(branch);
      resolve?.(response);
    });
  }

  static async open(server: number, username: string, password: string, aorUser?: string): Promise<UdpPhone> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new UdpPhone(socket, socket.address().port, server, username, password, aorUser);
  }

  close() {
    this.socket.close();
  }

  /** The Authorization header of an answer to `challenge` with nonce count `nc`, qop=auth. */
  authorization(method: string, uri: string, challenge: Response, nc: number): string {
    const realm = challenge.challenge('realm')!;
    const nonce = challenge.challenge('nonce')!;
    const count = nc.toString(16).padStart(8, '0');
    const cnonce = token();
    const ha1 = md5(this.username, realm, this.password);
    const response = md5(ha1, nonce, count, cnonce, 'auth', md5(method, uri));
    return (
      `Digest username="${this.username}", realm="${realm}", nonce="${nonce}", uri="${uri}", ` +
      `response="${response}", algorithm=MD5, qop=auth, nc=${count}, cnonce="${cnonce}"`
    );
  }

  /** RFC 2069's answer: no qop, no nc, no cnonce (right password). */
  authorizationWithoutQop(method: string, uri: string, challenge: Response): string {
    const realm = challenge.challenge('realm')!;
    const nonce = challenge.challenge('nonce')!;
    const response = md5(md5(this.username, realm, this.password), nonce, md5(method, uri));
    return `Digest username="${this.username}", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=MD5`;
  }

  register(authorization?: string, server = this.server): Promise<Response> {
    return this.send('REGISTER', 'sip:localhost', authorization, server);
  }

  invite(target: string, authorization?: string): Promise<Response> {
    return this.send('INVITE', `sip:${target}@localhost`, authorization, this.server);
  }

  /** A new transaction (new branch, next CSeq) carrying `authorization` as it is: a replay when it was used. */
  private send(method: string, uri: string, authorization: string | undefined, server: number) {
    const branch = `z9hG4bK${token()}`;
    const cseq = ++this.cseq;
    const aor = `sip:${this.aorUser}@localhost`;
    const to = method === 'REGISTER' ? `<${aor}>` : `<${uri}>`;
    const via = `SIP/2.0/UDP 127.0.0.1:${this.port};branch=${branch};rport`;
    const request = [
      `${method} ${uri} SIP/2.0`,
      `Via: ${via}`,
      'Max-Forwards: 70',
      `From: <${aor}>;tag=${this.fromTag}`,
      `To: ${to}`,
      `Call-ID: ${this.callId}`,
      `CSeq: ${cseq} ${method}`,
      `Contact: <sip:${this.aorUser}@127.0.0.1:${this.port}>`,
      ...(method === 'REGISTER' ? ['Expires: 120'] : []),
      ...(authorization ? [`Authorization: ${authorization}`] : []),
      'User-Agent: digest-test',
      'Content-Length: 0',
      '',
      '',
    ].join('\r\n');
    const answered = new Promise<Response>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${method} ${cseq}`)), 10_000);
      this.waiting.set(branch, (response) => {
        clearTimeout(timer);
        resolve(response);
      });
    });
    this.socket.send(request, server, '127.0.0.1');
    return answered.then((response) => {
      // A final response to an INVITE is acknowledged (RFC 3261 section 17.1.1.3), or it is retransmitted.
      if (method === 'INVITE' && response.status >= 300) {
        const ack = [
          `ACK ${uri} SIP/2.0`,
          `Via: ${via}`,
          'Max-Forwards: 70',
          `From: <${aor}>;tag=${this.fromTag}`,
          `To: ${response.header('to')}`,
          `Call-ID: ${this.callId}`,
          `CSeq: ${cseq} ACK`,
          'Content-Length: 0',
          '',
          '',
        ].join('\r\n');
        this.socket.send(ack, server, '127.0.0.1');
      }
      return response;
    });
  }
}
