// The SIP listener (SIP_PORT): a user-agent server on UDP and TCP beside the HTTP server, on our SIP stack
// (stack/: the `sip` package vendored, with our parser with limits; docs/architecture.md says why). Today it
// is the registrar (REGISTER with digest authentication), OPTIONS (phones' keep-alives), and calls between
// extensions' phones, in from the trunk and placed by the API (INVITE, re-INVITE, UPDATE, ACK, CANCEL, BYE:
// sip-pbx.ts). Other methods are answered 501 Not Implemented.
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Registrar } from './registrar.ts';
import type { SipPbx } from './sip-pbx.ts';
import * as sip from './stack/index.ts';

export class SipListener {
  private stack?: sip.SipStack;
  private address?: string;
  private media?: { bind: string; advertise: string };

  constructor(
    private readonly registrar: Registrar,
    /** The PBX that carries the calls this listener receives. */
    readonly pbx: SipPbx,
    private readonly domain: string,
    private readonly log: FastifyBaseLogger,
    /** SIP_MEDIA_ADDRESS, if set. */
    private readonly mediaAddress?: string,
  ) {}

  /** The SIP stack while listening (the SIP PBX sends through it). */
  get sipStack(): sip.SipStack | undefined {
    return this.stack;
  }

  /** Our `host:port` as phones reach it, for Contact headers. */
  get contactAddress(): string {
    return this.address ?? this.domain;
  }

  /** Where the RTP we carry (voicemail, the relay) binds: the listener's address, and the host named in SDP. */
  get mediaHosts(): { bind: string; advertise: string } | undefined {
    return this.media;
  }

  get listening(): boolean {
    return this.stack !== undefined;
  }

  start(options: { port: number; host: string }): void {
    if (this.stack) return;
    const host = options.host === '0.0.0.0' || options.host === '::' ? this.domain : options.host;
    this.address = `${host}:${options.port}`;
    // SDP needs an address, not a name: SIP_MEDIA_ADDRESS, else the bound one, else this machine's own.
    this.media = {
      bind: options.host,
      advertise: this.mediaAddress ?? (isIP(host) ? host : (firstAddress() ?? '127.0.0.1')),
    };
    this.stack = sip.create(
      {
        port: options.port,
        address: options.host,
        // The stack treats a request URI on its own host name as addressed to itself; our host name is the SIP
        // domain, so a phone's contact on the same address as ours (loopback, one machine) is still reached.
        publicAddress: this.domain,
        udp: true,
        tcp: true,
        logger: {
          error: (error) => this.log.warn({ err: error }, 'SIP stack error'),
          // What the stack dropped or refused before we saw it (malformed SIP: docs/voice.md).
          debug: (what, message) => this.log.debug(what, message),
        },
      },
      (request, remote) => void this.answer(request, remote),
    );
    this.log.info({ port: options.port, host: options.host }, 'SIP listener started');
  }

  stop(): void {
    this.pbx.closeAll();
    this.stack?.destroy();
    this.stack = undefined;
  }

  private async answer(request: sip.SipMessage, remote: sip.SipRemote): Promise<void> {
    const stack = this.stack;
    if (!stack) return;
    if (request.method === 'ACK') return this.pbx.ack(request);
    try {
      switch (request.method) {
        case 'REGISTER': {
          const answer = await this.registrar.register(request, remote);
          stack.send(this.respond(request, answer.status, answer.reason, answer.headers));
          return;
        }
        case 'OPTIONS':
          stack.send(
            this.respond(request, 200, 'OK', {
              allow: 'REGISTER, OPTIONS, INVITE, ACK, BYE, CANCEL, UPDATE',
            }),
          );
          return;
        case 'INVITE':
          // Inside a dialog (its To has our tag): a re-INVITE of a call we carry.
          if (request.headers.to.params.tag) {
            this.pbx.answerReinvite(request, (response) => stack.send(response));
            return;
          }
          await this.pbx.invite(request, remote, (response) => stack.send(response));
          return;
        case 'UPDATE':
          this.pbx.answerReinvite(request, (response) => stack.send(response));
          return;
        case 'CANCEL':
          this.pbx.cancel(request, (response) => stack.send(response));
          return;
        case 'BYE':
          this.pbx.bye(request, (response) => stack.send(response));
          return;
        default:
          stack.send(this.respond(request, 501, 'Not Implemented'));
      }
    } catch (error) {
      this.log.error({ err: error, method: request.method }, 'SIP request failed');
      stack.send(this.respond(request, 500, 'Server Internal Error'));
    }
  }

  /** A final response, its To tagged as RFC 3261 section 8.2.6.2 asks of a UAS. */
  private respond(
    request: sip.SipMessage,
    status: number,
    reason: string,
    headers: Record<string, unknown> = {},
  ) {
    const to = request.headers.to;
    const tagged = to.params.tag
      ? to
      : { ...to, params: { ...to.params, tag: randomBytes(6).toString('hex') } };
    return sip.makeResponse(request, status, reason, { headers: { ...headers, to: tagged } });
  }
}

/** This machine's first non-loopback IPv4 address. */
function firstAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry?.family === 'IPv4' && !entry.internal)?.address;
}
