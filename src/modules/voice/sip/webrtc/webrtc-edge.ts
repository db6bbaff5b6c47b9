// The WebRTC edge of the SIP PBX: where a browser's session descriptions are translated, so that the PBX, the
// relay, voicemail, flows and agents see a desk phone's plain RTP and never DTLS or ICE. It sits between the PBX
// and the SIP stack (the PBX sends through `wrap(stack)`) and before the PBX on the way in (`incoming`):
// - a browser's INVITE (or re-INVITE, UPDATE) with a WebRTC offer: the offer becomes a plain one on a bridge of
//   ours (webrtc-endpoint.ts), and the PBX's answer to it becomes our WebRTC answer;
// - an INVITE (or re-INVITE) of the PBX to a phone reached over a WebSocket (a browser): its plain offer becomes
//   our WebRTC offer, and the browser's answer a plain one for the PBX.
// Bridges are known by the Call-ID of the browser's dialog (each leg of a back-to-back call has its own), and the
// messages of a Call-ID with a bridge go out one after another, each after its translation, in the order sent.
// A bridge ends with its dialog: a BYE either way, or a final refusal of the INVITE that began it.
import type { FastifyBaseLogger } from 'fastify';
import { makeResponse, type SipMessage, type SipStack } from '../stack/index.ts';
import type { WebRtcEndpoint } from './webrtc-endpoint.ts';
import { isWebRtc, type MediaHosts, NotAcceptable } from './webrtc-sdp.ts';

/**
 * The bridge's module and werift with it, loaded on the first browser call (or the listener's start): werift
 * costs about 0.45 s of CPU to load, which a server that no browser calls should not pay at every start
 * (docs/performance.md, issue 35).
 */
const endpointModule = () => import('./webrtc-endpoint.ts');

/** Browser calls one process bridges at once; an INVITE past it is refused 503 (another process takes it). */
export const MAX_BRIDGES = 2_000;

export class WebRtcEdge {
  private readonly bridges = new Map<string, Promise<WebRtcEndpoint>>();
  /** The WebSocket each bridged dialog's browser is reached through (`address,port`), when it is one. */
  private readonly flows = new Map<string, string>();
  /** The messages of each Call-ID with a bridge, in the order they were handed over. */
  private readonly queues = new Map<string, Promise<void>>();

  constructor(
    private readonly hosts: () => MediaHosts | undefined,
    private readonly log: FastifyBaseLogger,
    /** A browser's dialog the PBX holds answered could not be set up after all: the PBX ends it. */
    private readonly lost: (sipCallId: string) => void = () => {},
  ) {}

  /** Makes the DTLS certificate every bridge presents (once per process, ECDSA P-256), before the first call. */
  static async prepare(): Promise<unknown> {
    const { RTCDtlsTransport } = await import('werift');
    return RTCDtlsTransport.SetupCertificate();
  }

  /** The bridge of a dialog (tests read its packet counts). */
  bridge(callId: string): Promise<WebRtcEndpoint> | undefined {
    return this.bridges.get(callId);
  }

  get size(): number {
    return this.bridges.size;
  }

  /**
   * A request from the network, before the PBX sees it: a WebRTC offer in it becomes a plain one. Returns the
   * refusal to answer instead (488), or undefined.
   */
  async incoming(request: SipMessage, stack?: SipStack): Promise<[number, string] | undefined> {
    const callId = request.headers['call-id'];
    if (request.method === 'BYE') {
      this.end(callId);
      return undefined;
    }
    if (request.method !== 'INVITE' && request.method !== 'UPDATE') return undefined;
    if (!request.content || (!isWebRtc(request.content) && !this.bridges.has(callId))) return undefined;
    if (!this.bridges.has(callId) && this.bridges.size >= MAX_BRIDGES) return [503, 'Service Unavailable'];
    try {
      const bridge = await this.open(callId);
      if (request.flow && stack) this.remember(callId, stack.flowOf(request.flow.uri));
      request.content = await bridge.fromBrowserOffer(request.content);
      return undefined;
    } catch (error) {
      if (!(error instanceof NotAcceptable)) throw error;
      this.log.debug({ sipCallId: callId, reason: error.message }, 'WebRTC offer not acceptable');
      // A refused first offer leaves no bridge; a refused re-offer leaves the call as it was.
      if (!request.headers.to.params.tag) this.end(callId);
      return [488, 'Not Acceptable Here'];
    }
  }

  /** The stack as the PBX sees it: descriptions to and from browsers translated on the way. */
  wrap(stack: SipStack): SipStack {
    return {
      ...stack,
      send: (message, callback) => {
        const callId = message.headers['call-id'];
        const toBrowser = message.method !== undefined && this.toWebSocket(stack, message);
        if (!toBrowser && !this.bridges.has(callId)) return stack.send(message, callback);
        if (toBrowser) this.remember(callId, stack.flowOf(message.headers.route![0]!.uri));
        const answered =
          callback && ((response: SipMessage) => this.answered(callId, message, response, callback));
        this.enqueue(callId, async () => {
          try {
            await this.outgoing(message, toBrowser);
          } catch (error) {
            return this.untranslatable(stack, message, callback, error);
          }
          stack.send(message, answered);
        });
      },
      destroy: () => {
        for (const callId of [...this.bridges.keys()]) this.end(callId);
        stack.destroy();
      },
    };
  }

  /** A message of the PBX on its way out: its plain description translated for the browser. */
  private async outgoing(message: SipMessage, toBrowser: boolean): Promise<void> {
    const callId = message.headers['call-id'];
    if (message.method === 'BYE') return this.end(callId);
    if (message.method === undefined) {
      const method = message.headers.cseq.method;
      const status = message.status ?? 0;
      if (message.content && (method === 'INVITE' || method === 'UPDATE') && status >= 200 && status < 300) {
        const bridge = await this.bridges.get(callId);
        if (bridge) message.content = await bridge.toBrowserAnswer(message.content);
      }
      // A first offer refused (a digest challenge, busy…): its bridge goes; the browser's next INVITE makes one.
      if (method === 'INVITE' && status >= 300 && (await this.bridges.get(callId))?.current === 'answering')
        this.end(callId);
      return;
    }
    if (!message.content || (message.method !== 'INVITE' && message.method !== 'UPDATE')) return;
    if (!toBrowser && !this.bridges.has(callId)) return;
    const bridge = await this.open(callId);
    message.content = await bridge.toBrowserOffer(message.content);
  }

  /**
   * A description of the PBX's that the bridge cannot carry (no G.711 in it, a browser's offer werift refused):
   * our request is answered 488 to the PBX without leaving; our 2xx goes out as a 488 instead, and a call the PBX
   * took for answered is ended by it.
   */
  private async untranslatable(
    stack: SipStack,
    message: SipMessage,
    callback: ((response: SipMessage) => void) | undefined,
    error: unknown,
  ): Promise<void> {
    const callId = message.headers['call-id'];
    this.log.warn({ err: error, sipCallId: callId }, 'WebRTC description not translated');
    const bridge = await this.bridges.get(callId)?.catch(() => undefined);
    // Not yet set up (its first offer or answer failed): nothing of it is worth keeping.
    const first = bridge === undefined || ['new', 'answering', 'offering'].includes(bridge.current);
    if (first) this.end(callId);
    if (message.method !== undefined) {
      callback?.(makeResponse(message, 488, 'Not Acceptable Here'));
      return;
    }
    const refusal = makeResponse(message, 488, 'Not Acceptable Here');
    refusal.headers.to = message.headers.to;
    stack.send(refusal);
    if (first && (message.status ?? 0) < 300) this.lost(callId);
  }

  /** A response from the browser to a request of ours: its WebRTC answer becomes a plain one for the PBX. */
  private answered(
    callId: string,
    request: SipMessage,
    response: SipMessage,
    callback: (response: SipMessage) => void,
  ): void {
    this.enqueue(callId, async () => {
      const status = response.status ?? 0;
      const bridge = await this.bridges.get(callId);
      if (bridge && response.content && status >= 200 && status < 300 && request.method !== 'BYE') {
        try {
          response.content = await bridge.fromBrowserAnswer(response.content);
        } catch (error) {
          this.log.warn({ err: error, sipCallId: callId }, 'WebRTC answer not usable');
          response.content = undefined;
        }
      }
      if (request.method === 'INVITE' && status >= 300 && bridge?.current === 'offering') this.end(callId);
      callback(response);
    });
  }

  /** Whether a request goes to a phone reached over a WebSocket (its first Route is one of our flows). */
  private toWebSocket(stack: SipStack, message: SipMessage): boolean {
    const route = message.headers.route?.[0];
    const flow = route ? stack.flowOf(route.uri) : undefined;
    return flow?.protocol === 'WS' || flow?.protocol === 'WSS';
  }

  /** The Call-IDs of the bridged dialogs whose browser was reached through the WebSocket `remote`. */
  dialogsThrough(remote: { address: string; port: number }): string[] {
    const key = `${remote.address},${remote.port}`;
    return [...this.flows].filter(([, flow]) => flow === key).map(([callId]) => callId);
  }

  private remember(callId: string, flow: { address: string; port: number } | undefined): void {
    if (flow && !this.flows.has(callId)) this.flows.set(callId, `${flow.address},${flow.port}`);
  }

  private open(callId: string): Promise<WebRtcEndpoint> {
    let bridge = this.bridges.get(callId);
    if (!bridge) {
      const hosts = this.hosts();
      if (!hosts) return Promise.reject(new NotAcceptable('no SIP listener'));
      bridge = endpointModule().then(({ WebRtcEndpoint }) => WebRtcEndpoint.open(hosts, this.log));
      this.bridges.set(callId, bridge);
    }
    return bridge;
  }

  /** Ends the bridge of a dialog (its browser's connection went away). */
  release(callId: string): void {
    this.end(callId);
  }

  private end(callId: string): void {
    const bridge = this.bridges.get(callId);
    if (!bridge) return;
    this.bridges.delete(callId);
    this.flows.delete(callId);
    void bridge.then((endpoint) => endpoint.close()).catch(() => {});
  }

  private enqueue(callId: string, work: () => Promise<void>): void {
    const previous = this.queues.get(callId) ?? Promise.resolve();
    const next = previous
      .then(work)
      .catch((error) =>
        this.log.warn({ err: error, sipCallId: callId }, 'WebRTC edge: message not translated'),
      );
    this.queues.set(callId, next);
    void next.then(() => {
      if (this.queues.get(callId) === next) this.queues.delete(callId);
    });
  }
}
