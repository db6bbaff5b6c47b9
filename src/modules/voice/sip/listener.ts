// The SIP listener (SIP_PORT): a user-agent server on UDP and TCP beside the HTTP server, and on the WebSockets
// browsers open at the HTTP server's `/sip` (RFC 7118; their WebRTC media through webrtc/), on our SIP stack
// (stack/: the `sip` package vendored, with our parser with limits; docs/architecture.md says why). Today it
// is the registrar (REGISTER with digest authentication), OPTIONS (phones' keep-alives), and calls between
// extensions' phones, in from the trunk and placed by the API (INVITE, re-INVITE, UPDATE, ACK, CANCEL, BYE,
// INFO carrying a caller's keys, and REFER, a phone's transfer: sip-pbx.ts). Other methods are answered 501 Not
// Implemented. A new call whose admission would wait too long is refused 503 at once (admission-load.ts). Every
// message in and out is one debug line (method or status, Call-ID, CSeq, peer, transport: never a header that
// could carry a credential), and in test mode every message out is checked by a strict phone's rules
// (strict-check.ts).
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { AdmissionLoad } from './admission-load.ts';
import { ALLOW, capabilityRefusal, SUPPORTED } from './capabilities.ts';
import type { Registrar } from './registrar.ts';
import type { SipPbx } from './sip-pbx.ts';
import * as sip from './stack/index.ts';
import { StrictSipCheck } from './strict-check.ts';
import { WebRtcEdge } from './webrtc/webrtc-edge.ts';

/** One SIP message for the metrics: bounded labels only (an unknown method counts as `other`). */
export interface SipMessageCount {
  direction: 'in' | 'out';
  method: string;
  /** `request`, or a response's class: `1xx` … `6xx`. */
  statusClass: string;
}

const COUNTED_METHODS = new Set([
  'INVITE',
  'ACK',
  'BYE',
  'CANCEL',
  'REGISTER',
  'OPTIONS',
  'INFO',
  'UPDATE',
  'REFER',
  'NOTIFY',
  'SUBSCRIBE',
  'MESSAGE',
  'PRACK',
  'PUBLISH',
]);

function messageCount(direction: 'in' | 'out', message: sip.SipMessage): SipMessageCount {
  const method = message.method ?? message.headers?.cseq?.method ?? '';
  const status = typeof message.status === 'number' ? message.status : undefined;
  return {
    direction,
    method: COUNTED_METHODS.has(method) ? method : 'other',
    statusClass:
      status === undefined
        ? 'request'
        : status >= 100 && status < 700
          ? `${Math.floor(status / 100)}xx`
          : 'other',
  };
}

export class SipListener {
  private stack?: sip.SipStack;
  /** The stack as the PBX sends through it: browsers' descriptions translated (webrtc/webrtc-edge.ts). */
  private pbxStack?: sip.SipStack;
  /** Browsers' media terminated here: WebRTC in, plain RTP to the relay and our own media. */
  readonly webrtc: WebRtcEdge;
  private address?: string;
  private media?: { bind: string; advertise: string };
  private readonly strict?: StrictSipCheck;
  /** Set when the server is shutting down: the Retry-After (seconds) new calls are refused with. */
  private refusingRetryAfter?: number;
  /** New calls' admissions under way, and whether one more would wait too long (admission-load.ts). */
  readonly admissions = new AdmissionLoad();
  /** When overload was last logged (performance.now), so that a flood logs a line per 10 s, not per INVITE. */
  private overloadLoggedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly registrar: Registrar,
    /** The PBX that carries the calls this listener receives. */
    readonly pbx: SipPbx,
    private readonly domain: string,
    private readonly log: FastifyBaseLogger,
    /** SIP_MEDIA_ADDRESS, if set. */
    private readonly mediaAddress?: string,
    /** Check every message we send by a strict phone's rules (test mode), keeping each breach. */
    strict = false,
    /** Counts each message in and out (metrics), retransmissions included. */
    private readonly countMessage: (message: SipMessageCount) => void = () => {},
  ) {
    if (strict) this.strict = new StrictSipCheck();
    this.webrtc = new WebRtcEdge(
      () => this.media,
      log,
      (sipCallId) => this.pbx.connectionLost(sipCallId),
    );
  }

  /** What a strict phone would have refused of the messages sent so far (only with `strict`). */
  get strictViolations(): readonly string[] {
    return this.strict?.violations ?? [];
  }

  /**
   * A WebSocket the HTTP server accepted at `/sip` (RFC 7118; websocket-endpoint.ts). Without a running listener
   * it is closed at once (the endpoint refuses the upgrade before that can happen).
   */
  acceptWebSocket(socket: sip.SipWebSocket, remote: sip.SipRemote): void {
    if (this.stack) this.stack.acceptWebSocket(socket, remote);
    else socket.close(1013, 'SIP listener not running');
  }

  /** The SIP stack while listening (the SIP PBX sends through it). */
  get sipStack(): sip.SipStack | undefined {
    return this.pbxStack;
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

  /** `timers`: RFC 3261's T1, T2, T4 in ms (tests shorten them; the RFC's defaults otherwise). */
  start(options: { port: number; host: string; timers?: Partial<sip.TransactionTimers> }): void {
    if (this.stack) return;
    const host = options.host === '0.0.0.0' || options.host === '::' ? this.domain : options.host;
    this.address = `${host}:${options.port}`;
    // SDP needs an address, not a name: SIP_MEDIA_ADDRESS, else the bound one, else this machine's own.
    this.media = {
      bind: options.host,
      advertise: this.mediaAddress ?? (isIP(host) ? host : (firstAddress() ?? '127.0.0.1')),
    };
    const stackOptions = {
      port: options.port,
      address: options.host,
      // Our address, for the Via of what we send. (A phone on that same address, or named by SIP_DOMAIN, is still
      // reached: the stack takes a hop for its own only when it carries one of its flow tokens; issue 32.)
      publicAddress: host,
      udp: true,
      tcp: true,
      ...options.timers,
      // A browser's WebSocket closed: what it registered cannot be reached any more (RFC 7118 section 5).
      onFlowClosed: (remote: sip.SipRemote) => void this.flowClosed(remote),
      // Our 2xx to an INVITE that no ACK answered within 64*T1: that dialog ends (RFC 3261 section 13.3.1.4).
      unacknowledged: (response: sip.SipMessage) => this.pbx.unacknowledged(response),
      logger: {
        error: (error: unknown) => this.log.warn({ err: error }, 'SIP stack error'),
        // What the stack dropped or refused before we saw it (malformed SIP: docs/voice.md).
        debug: (what: Record<string, unknown>, message: string) => this.log.debug(what, message),
        send: (message: sip.SipMessage, target?: Partial<sip.SipRemote>) => this.sent(message, target),
        recv: (message: sip.SipMessage, remote?: Partial<sip.SipRemote>) => this.received(message, remote),
      },
    };
    this.stack = sip.create(stackOptions, (request, remote) => void this.answer(request, remote));
    this.pbxStack = this.webrtc.wrap(this.stack);
    // The DTLS certificate browsers will see (its fingerprint in every WebRTC description), made before a call.
    void WebRtcEdge.prepare().catch((error) => this.log.warn({ err: error }, 'DTLS certificate not made'));
    this.log.info({ port: options.port, host: options.host }, 'SIP listener started');
  }

  /**
   * The server is shutting down (docs/voice.md "Real SIP: shutdown"): from now on a new call, an INVITE outside a
   * dialog, is answered 503 Service Unavailable with `Retry-After` (RFC 3261 section 21.5.4), and so is an
   * OPTIONS outside a dialog, which RFC 3261 section 11.2 answers as an INVITE would be (a balancer's probe sees
   * the process going). Requests in the dialogs of calls under way (re-INVITE, BYE, INFO, REFER…) are served as
   * before, and so are REGISTER (registrations live in the database and outlast the process) and CANCEL.
   */
  refuseNewCalls(retryAfterSeconds: number): void {
    this.refusingRetryAfter = retryAfterSeconds;
  }

  /** Whether new calls are refused (the server is shutting down). */
  get refusingNewCalls(): boolean {
    return this.refusingRetryAfter !== undefined;
  }

  /** Resolves when every BYE the PBX sent has its final response. */
  byesAnswered(): Promise<void> {
    return this.pbx.byesAnswered();
  }

  stop(): void {
    this.pbx.closeAll();
    this.pbxStack?.destroy();
    this.stack = undefined;
    this.pbxStack = undefined;
  }

  private async flowClosed(remote: sip.SipRemote): Promise<void> {
    // Its calls cannot go on: nothing reaches that browser any more (not even our BYE).
    for (const sipCallId of this.webrtc.dialogsThrough(remote)) {
      this.pbx.connectionLost(sipCallId);
      this.webrtc.release(sipCallId);
    }
    try {
      const removed = await this.registrar.removeSource(
        `${remote.protocol.toLowerCase()}:${remote.address}:${remote.port}`,
      );
      this.log.debug({ peer: `${remote.address}:${remote.port}`, removed }, 'SIP WebSocket closed');
    } catch (error) {
      this.log.warn({ err: error }, 'registrations of a closed SIP WebSocket not removed');
    }
  }

  /** A message on its way out (retransmissions too): one debug line, and the strict check in test mode. */
  private sent(message: sip.SipMessage, target?: Partial<sip.SipRemote>): void {
    this.trace('SIP out', message, target);
    this.countMessage(messageCount('out', message));
    if (!this.strict) return;
    const before = this.strict.violations.length;
    this.strict.onSent(message, target);
    for (const violation of this.strict.violations.slice(before)) {
      this.log.warn({ violation }, 'SIP message a strict phone would refuse');
    }
  }

  private received(message: sip.SipMessage, remote?: Partial<sip.SipRemote>): void {
    this.trace('SIP in', message, remote);
    this.countMessage(messageCount('in', message));
    this.strict?.onReceived(message);
  }

  /** The debug line of one message: what it is, its dialog and transaction, and the peer. No other header. */
  private trace(direction: string, message: sip.SipMessage, peer?: Partial<sip.SipRemote>): void {
    if (this.log.level !== 'debug' && this.log.level !== 'trace') return;
    const cseq = message.headers?.cseq;
    this.log.debug(
      {
        ...(message.method ? { method: message.method } : { status: message.status }),
        sipCallId: message.headers?.['call-id'],
        cseq: cseq ? `${cseq.seq} ${cseq.method}` : undefined,
        peer: peer ? `${peer.address}:${peer.port}` : undefined,
        transport: peer?.protocol,
      },
      direction,
    );
  }

  private async answer(request: sip.SipMessage, remote: sip.SipRemote): Promise<void> {
    const stack = this.pbxStack;
    if (!stack) return;
    if (request.method === 'ACK') return this.pbx.ack(request);
    // RFC 3261 section 8.2.6.2: a response past 100 Trying carries a To tag; the PBX's refusals are tagged here.
    const reply = (response: sip.SipMessage) => stack.send(toTagged(response));
    if (
      this.refusingRetryAfter !== undefined &&
      (request.method === 'INVITE' || request.method === 'OPTIONS') &&
      !request.headers.to.params.tag
    ) {
      stack.send(
        this.respond(request, 503, 'Service Unavailable', { 'retry-after': String(this.refusingRetryAfter) }),
      );
      return;
    }
    const refusal = capabilityRefusal(request);
    // An INFO's body is judged by the keys it may carry (dialog-requests.ts), not as a session description.
    if (refusal && !(request.method === 'INFO' && refusal.status === 415)) {
      stack.send(this.respond(request, refusal.status, refusal.reason, refusal.headers));
      return;
    }
    try {
      // A browser's WebRTC offer becomes a plain one on a bridge of ours before the PBX reads it.
      const mediaRefusal = await this.webrtc.incoming(request, this.stack);
      if (mediaRefusal) {
        stack.send(this.respond(request, mediaRefusal[0], mediaRefusal[1]));
        return;
      }
      switch (request.method) {
        case 'REGISTER': {
          const answer = await this.registrar.register(request, remote);
          stack.send(this.respond(request, answer.status, answer.reason, answer.headers));
          return;
        }
        case 'OPTIONS':
          stack.send(
            this.respond(request, 200, 'OK', {
              allow: ALLOW,
              accept: 'application/sdp',
              supported: SUPPORTED,
            }),
          );
          return;
        case 'INVITE':
          // Inside a dialog (its To has our tag): a re-INVITE of a call we carry.
          if (request.headers.to.params.tag) {
            this.pbx.answerReinvite(request, reply);
            return;
          }
          return await this.admit(request, remote, reply);
        case 'UPDATE':
          this.pbx.answerReinvite(request, reply);
          return;
        case 'CANCEL':
          this.pbx.cancel(request, reply);
          return;
        case 'BYE':
          this.pbx.bye(request, reply);
          return;
        case 'INFO':
          this.pbx.info(request, reply);
          return;
        case 'REFER':
          this.pbx.refer(request, reply);
          return;
        default:
          stack.send(this.respond(request, 501, 'Not Implemented'));
      }
    } catch (error) {
      this.log.error({ err: error, method: request.method }, 'SIP request failed');
      stack.send(this.respond(request, 500, 'Server Internal Error'));
    }
  }

  /**
   * A new call: refused at once with 503 and Retry-After (RFC 3261 section 21.5.4) when its admission would
   * wait beyond the budget (docs/voice.md "Real SIP: overload"), else handed to the PBX, its admission timed.
   */
  private async admit(request: sip.SipMessage, remote: sip.SipRemote, reply: (m: sip.SipMessage) => void) {
    const retryAfter = this.admissions.refusal();
    if (retryAfter !== undefined) {
      const now = performance.now();
      if (now - this.overloadLoggedAt >= 10_000) {
        this.overloadLoggedAt = now;
        this.log.warn(
          { expectedWaitMs: Math.round(this.admissions.expectedWait()), refused: this.admissions.refused },
          'SIP admissions overloaded: new calls refused with 503',
        );
      }
      reply(this.respond(request, 503, 'Service Unavailable', { 'retry-after': String(retryAfter) }));
      return;
    }
    const admitted = this.admissions.begin();
    try {
      await this.pbx.invite(request, remote, reply);
    } finally {
      admitted();
    }
  }

  /** A final response, its To tagged as RFC 3261 section 8.2.6.2 asks of a UAS. */
  private respond(
    request: sip.SipMessage,
    status: number,
    reason: string,
    headers: Record<string, unknown> = {},
  ) {
    return toTagged(sip.makeResponse(request, status, reason, { headers }));
  }
}

/** A response whose To has a tag, unless it is 100 Trying (which has none: RFC 3261 section 8.2.6.1). */
function toTagged(response: sip.SipMessage): sip.SipMessage {
  const to = response.headers.to;
  if ((response.status ?? 0) <= 100 || !to || to.params?.tag) return response;
  response.headers.to = { ...to, params: { ...to.params, tag: randomBytes(6).toString('hex') } };
  return response;
}

/** This machine's first non-loopback IPv4 address. */
function firstAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry?.family === 'IPv4' && !entry.internal)?.address;
}
