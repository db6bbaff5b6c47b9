// One browser's media terminated on the server: ICE, DTLS-SRTP and SRTP by werift (docs/architecture.md says
// why), bridged to a plain RTP socket that the rest of the PBX (the relay, voicemail, AI agents, recordings)
// talks to as it would to a desk phone's. G.711 passes unchanged both ways (browsers offer PCMU and PCMA), and so
// do RFC 4733 telephone events, so nothing is transcoded. Only the descriptions are translated: the browser's
// WebRTC SDP to and from the plain one the PBX reads and writes (webrtc-sdp.ts).
//
// The endpoint's life is one table (TRANSITIONS): a browser's offer is answered once the PBX has answered its
// plain twin; our offer to a browser is made from the PBX's plain one; after that, re-offers either way (hold,
// resume, media moved) change directions and where the plain side sends, never ICE or DTLS: a re-offer that
// restarts ICE (a new ufrag) is refused (488 at the edge).
import { createSocket, type Socket } from 'node:dgram';
import { isIP } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { RTCPeerConnection, RTCRtpCodecParameters, type RTCRtpTransceiver, RtpPacket } from 'werift';
import {
  type AudioDescription,
  chosenFormats,
  type Format,
  type MediaHosts,
  NotAcceptable,
  plainSdp,
  readAudio,
  revised,
} from './webrtc-sdp.ts';

export type EndpointState =
  | 'new'
  | 'answering'
  | 'offering'
  | 'established'
  | 'reanswering'
  | 'reoffering'
  | 'closed';
type Signal = 'browser_offer' | 'plain_offer' | 'plain_answer' | 'browser_answer' | 'close';

/** Which signal moves which state where; a signal a state does not list is refused (NotAcceptable). */
const TRANSITIONS: Record<EndpointState, Partial<Record<Signal, EndpointState>>> = {
  new: { browser_offer: 'answering', plain_offer: 'offering', close: 'closed' },
  answering: { browser_offer: 'answering', plain_answer: 'established', close: 'closed' },
  offering: { browser_answer: 'established', close: 'closed' },
  established: { browser_offer: 'reanswering', plain_offer: 'reoffering', close: 'closed' },
  reanswering: { browser_offer: 'reanswering', plain_answer: 'established', close: 'closed' },
  reoffering: { browser_answer: 'established', close: 'closed' },
  closed: {},
};

/** How long ICE may take to gather our host candidates before the description goes without the rest. */
const GATHERING_MS = 2_000;

export class WebRtcEndpoint {
  private state: EndpointState = 'new';
  private pc?: RTCPeerConnection;
  private transceiver?: RTCRtpTransceiver;
  /** Where the plain side sends: the PBX's media for this leg (from its SDP). */
  private plainRemote?: { address: string; port: number };
  /** The browser's last description, and ours to it. */
  private browser?: AudioDescription;
  private browserSdp?: string;
  private ourWebRtcSdp?: string;
  /** The formats the two sides settled on (a G.711 law, and telephone-event when both have it). */
  private formats: Format[] = [];
  /** Our DTLS role once settled (`active` or `passive`), for re-answers. */
  private ourSetup?: string;
  private version = 1;
  private sequence = Math.floor(Math.random() * 0xffff);
  /**
   * The last translation of each kind: the same description again once it was taken (a browser's 2xx resent
   * because our ACK was lost) gets the same translation, and moves nothing.
   */
  private readonly last = new Map<string, { input: string; output: string }>();
  /** RTP packets carried each way (tests and the debug log read them). */
  readonly packets = { fromBrowser: 0, toBrowser: 0 };

  private constructor(
    private readonly socket: Socket,
    private readonly plainHost: string,
    private readonly hosts: MediaHosts,
    private readonly log: FastifyBaseLogger,
  ) {
    socket.on('message', (packet) => this.toBrowser(packet));
    socket.on('error', (error) => log.debug({ err: error }, 'WebRTC bridge socket error'));
  }

  /** An endpoint whose plain side is a UDP socket on loopback (or the listener's own address when it has one). */
  static async open(hosts: MediaHosts, log: FastifyBaseLogger): Promise<WebRtcEndpoint> {
    const specific = hosts.bind !== '0.0.0.0' && hosts.bind !== '::' && isIP(hosts.bind) !== 0;
    const plainHost = specific ? hosts.bind : '127.0.0.1';
    const socket = createSocket(isIP(plainHost) === 6 ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, plainHost, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    return new WebRtcEndpoint(socket, plainHost, hosts, log);
  }

  get current(): EndpointState {
    return this.state;
  }

  /** Whether ICE and DTLS are up (SRTP keys made): packets can pass both ways. */
  get connected(): boolean {
    return this.pc?.connectionState === 'connected';
  }

  /** A browser's offer (a new call, or a re-offer: hold, resume): the plain offer to hand the PBX. */
  async fromBrowserOffer(sdp: string): Promise<string> {
    return this.once(`browser-offer:${sdp}`, 'browser_offer', async () => {
      const offer = readAudio(sdp);
      if (!offer) throw new NotAcceptable('no audio stream');
      // Audio only: a video stream or data channel beside it would need an answer refusing it inside BUNDLE.
      if ((sdp.match(/^m=/gm) ?? []).length > 1) throw new NotAcceptable('streams other than audio');
      if (this.state === 'established' || this.state === 'reanswering') {
        if (offer.iceUfrag !== this.browser?.iceUfrag) throw new NotAcceptable('ICE restart');
        this.move('browser_offer');
        this.browser = offer;
        return plainSdp(this.plainHost, this.port, this.formats, offer.direction, ++this.version);
      }
      const formats = offer.formats;
      if (!formats.some((format) => format.name !== 'telephone-event')) throw new NotAcceptable('no G.711');
      this.move('browser_offer');
      this.browser = offer;
      this.browserSdp = sdp;
      return plainSdp(this.plainHost, this.port, formats, offer.direction, this.version);
    });
  }

  /** The PBX's plain answer to that offer: our WebRTC answer to the browser. */
  async toBrowserAnswer(sdp: string): Promise<string> {
    return this.once(`plain-answer:${sdp}`, 'plain_answer', async () => {
      const answer = readAudio(sdp);
      if (!answer?.address) throw new NotAcceptable('plain answer without an address');
      const reanswer = this.state === 'reanswering';
      this.move('plain_answer');
      this.plainRemote = { address: this.reachable(answer.address), port: answer.port };
      if (reanswer) return revised(this.ourWebRtcSdp!, answer.direction, ++this.version, this.ourSetup);
      const offered = new Set(this.browser!.formats.map((format) => format.type));
      this.formats = chosenFormats(answer.formats.filter((format) => offered.has(format.type)));
      if (this.formats.length === 0) throw new NotAcceptable('no common G.711');
      const pc = this.peer(this.formats);
      await pc.setRemoteDescription({ type: 'offer', sdp: this.browserSdp! });
      this.transceiver = pc.getTransceivers()[0];
      if (!this.transceiver) throw new NotAcceptable('no audio transceiver');
      this.transceiver.setDirection('sendrecv');
      await pc.setLocalDescription(await pc.createAnswer());
      await gathered(pc);
      const local = pc.localDescription?.sdp ?? '';
      this.ourSetup = readAudio(local)?.setup ?? 'passive';
      this.ourWebRtcSdp = local;
      return revised(local, answer.direction, this.version, this.ourSetup);
    });
  }

  /** The PBX's plain offer to a browser (a call to it, or a re-offer): our WebRTC offer. */
  async toBrowserOffer(sdp: string): Promise<string> {
    return this.once(`plain-offer:${sdp}`, 'plain_offer', async () => {
      const offer = readAudio(sdp);
      if (!offer?.address) throw new NotAcceptable('plain offer without an address');
      if (this.state === 'established') {
        this.move('plain_offer');
        this.plainRemote = { address: this.reachable(offer.address), port: offer.port };
        return revised(this.ourWebRtcSdp!, offer.direction, ++this.version, 'actpass');
      }
      const formats = offer.formats;
      if (!formats.some((format) => format.name !== 'telephone-event')) throw new NotAcceptable('no G.711');
      this.move('plain_offer');
      this.plainRemote = { address: this.reachable(offer.address), port: offer.port };
      this.formats = formats;
      const pc = this.peer(formats);
      this.transceiver = pc.addTransceiver('audio', { direction: 'sendrecv' });
      await pc.setLocalDescription(await pc.createOffer());
      await gathered(pc);
      this.ourWebRtcSdp = pc.localDescription?.sdp ?? '';
      return revised(this.ourWebRtcSdp, offer.direction, this.version);
    });
  }

  /** The browser's answer to our offer: the plain answer for the PBX. */
  async fromBrowserAnswer(sdp: string): Promise<string> {
    return this.once(`browser-answer:${sdp}`, 'browser_answer', async () => {
      const answer = readAudio(sdp);
      if (!answer) throw new NotAcceptable('no audio stream');
      const reoffer = this.state === 'reoffering';
      this.move('browser_answer');
      this.browser = answer;
      if (!reoffer) {
        await this.pc!.setRemoteDescription({ type: 'answer', sdp });
        const offered = new Set(this.formats.map((format) => format.type));
        this.formats = chosenFormats(answer.formats.filter((format) => offered.has(format.type)));
        if (this.formats.length === 0) throw new NotAcceptable('no common G.711');
        this.ourSetup = answer.setup === 'passive' ? 'active' : 'passive';
      }
      return plainSdp(this.plainHost, this.port, this.formats, answer.direction, ++this.version);
    });
  }

  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.socket.close();
    void this.pc?.close().catch(() => {});
    this.log.debug({ packets: this.packets }, 'WebRTC bridge closed');
  }

  get port(): number {
    return this.socket.address().port;
  }

  private move(signal: Signal): void {
    const next = TRANSITIONS[this.state][signal];
    if (!next) throw new NotAcceptable(`${signal} in state ${this.state}`);
    this.state = next;
  }

  private async once(key: string, repeatable: Signal, translate: () => Promise<string>): Promise<string> {
    const [kind, ...rest] = key.split(':');
    const input = rest.join(':');
    const known = this.last.get(kind!);
    // A repeat is recognised only where the signal would be refused now: a new re-offer is never a repeat.
    if (known && known.input === input && !TRANSITIONS[this.state][repeatable]) return known.output;
    const output = await translate();
    this.last.set(kind!, { input, output });
    return output;
  }

  /** The relay and our own media listen on the listener's address; SIP_MEDIA_ADDRESS may be a public one. */
  private reachable(address: string): string {
    return address === this.hosts.advertise ? this.plainHost : address;
  }

  private peer(formats: Format[]): RTCPeerConnection {
    const advertise = this.hosts.advertise;
    const pc = new RTCPeerConnection({
      // Host candidates only: a server has a public address (SIP_MEDIA_ADDRESS names it behind 1:1 NAT).
      iceServers: [],
      ...(isIP(advertise) === 4 ? { iceAdditionalHostAddresses: [advertise] } : {}),
      codecs: {
        audio: formats.map(
          (format) =>
            new RTCRtpCodecParameters({
              mimeType: `audio/${format.name}`,
              clockRate: 8000,
              channels: 1,
              payloadType: format.type,
              ...(format.name === 'telephone-event' ? { parameters: '0-16' } : {}),
            }),
        ),
        video: [],
      },
      headerExtensions: { audio: [], video: [] },
    });
    pc.onTrack.subscribe((track) => {
      track.onReceiveRtp.subscribe((rtp) => this.fromBrowser(rtp));
    });
    pc.connectionStateChange.subscribe((state) => this.log.debug({ state }, 'WebRTC connection'));
    this.pc = pc;
    return pc;
  }

  /** A packet from the browser (decrypted), passed to the plain side without header extensions. */
  private fromBrowser(rtp: RtpPacket): void {
    const remote = this.plainRemote;
    if (!remote || this.state === 'closed') return;
    rtp.header.extension = false;
    rtp.header.extensions = [];
    rtp.header.padding = false;
    this.packets.fromBrowser++;
    this.socket.send(rtp.serialize(), remote.port, remote.address);
  }

  /** A packet from the PBX's side, sent to the browser over SRTP as our one stream (our SSRC, our sequence). */
  private toBrowser(packet: Buffer): void {
    const sender = this.transceiver?.sender;
    const dtls = sender?.dtlsTransport;
    if (!sender || !dtls || dtls.state !== 'connected' || this.state === 'closed') return;
    if (packet.length < 12 || packet[0]! >> 6 !== 2) return;
    let rtp: RtpPacket;
    try {
      rtp = RtpPacket.deSerialize(packet);
    } catch {
      return;
    }
    rtp.header.ssrc = sender.ssrc;
    this.sequence = (this.sequence + 1) & 0xffff;
    rtp.header.sequenceNumber = this.sequence;
    rtp.header.extension = false;
    rtp.header.extensions = [];
    this.packets.toBrowser++;
    void dtls.sendRtp(rtp.payload, rtp.header).catch(() => {});
  }
}

/** Resolves once ICE has gathered our candidates (host ones: quick), or after GATHERING_MS. */
function gathered(pc: RTCPeerConnection): Promise<void> {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, GATHERING_MS);
    const { unSubscribe } = pc.iceGatheringStateChange.subscribe((state) => {
      if (state === 'complete') done();
    });
    function done() {
      clearTimeout(timer);
      unSubscribe();
      resolve();
    }
  });
}
