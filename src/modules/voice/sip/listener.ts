// The SIP listener (SIP_PORT): a user-agent server on UDP and TCP beside the HTTP server, on the `sip` package
// (kirm/sip.js: message parsing, transports and the transaction layer; docs/architecture.md says why). Today it
// is the registrar: REGISTER with digest authentication, OPTIONS (phones' keep-alives) answered; calls over SIP
// (INVITE) are the next part of the real-SIP issue and are answered 501 Not Implemented until then.
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import * as sip from 'sip';
import type { Registrar } from './registrar.ts';

export class SipListener {
  private stack?: sip.SipStack;

  constructor(
    private readonly registrar: Registrar,
    private readonly log: FastifyBaseLogger,
  ) {}

  get listening(): boolean {
    return this.stack !== undefined;
  }

  start(options: { port: number; host: string }): void {
    if (this.stack) return;
    this.stack = sip.create(
      {
        port: options.port,
        address: options.host,
        udp: true,
        tcp: true,
        logger: { error: (error) => this.log.warn({ err: error }, 'SIP stack error') },
      },
      (request, remote) => void this.answer(request, remote),
    );
    this.log.info({ port: options.port, host: options.host }, 'SIP listener started');
  }

  stop(): void {
    this.stack?.destroy();
    this.stack = undefined;
  }

  private async answer(request: sip.SipMessage, remote: sip.SipRemote): Promise<void> {
    const stack = this.stack;
    if (!stack || request.method === 'ACK') return;
    try {
      switch (request.method) {
        case 'REGISTER': {
          const answer = await this.registrar.register(request, remote);
          stack.send(this.respond(request, answer.status, answer.reason, answer.headers));
          return;
        }
        case 'OPTIONS':
          stack.send(this.respond(request, 200, 'OK', { allow: 'REGISTER, OPTIONS' }));
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
