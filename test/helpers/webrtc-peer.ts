// A browser's media for Node tests: a werift RTCPeerConnection offering what Chrome offers for audio (Opus first,
// then PCMU, PCMA and telephone-event/8000), over ICE and DTLS-SRTP with rtcp-mux, that sends 20 ms G.711
// packets and RFC 4733 key presses and counts what it receives. It plays the browser's part against the server's
// WebRTC edge: every packet it counts went through real ICE, DTLS and SRTP.
import { RTCPeerConnection, RTCRtpCodecParameters, type RTCRtpTransceiver, RtpHeader } from 'werift';

const CODECS = [
  new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2, payloadType: 111 }),
  new RTCRtpCodecParameters({ mimeType: 'audio/PCMU', clockRate: 8000, channels: 1, payloadType: 0 }),
  new RTCRtpCodecParameters({ mimeType: 'audio/PCMA', clockRate: 8000, channels: 1, payloadType: 8 }),
  new RTCRtpCodecParameters({
    mimeType: 'audio/telephone-event',
    clockRate: 8000,
    channels: 1,
    payloadType: 126,
  }),
];

export class BrowserMedia {
  readonly pc = new RTCPeerConnection({ iceServers: [], codecs: { audio: CODECS, video: [] } });
  private transceiver?: RTCRtpTransceiver;
  /** Packets received (decrypted), by payload type. */
  readonly received = new Map<number, number>();
  private sequence = 1;
  private timestamp = 0;

  constructor() {
    this.pc.onTrack.subscribe((track) =>
      track.onReceiveRtp.subscribe((rtp) => {
        const type = rtp.header.payloadType;
        this.received.set(type, (this.received.get(type) ?? 0) + 1);
      }),
    );
  }

  get receivedAudio(): number {
    return (this.received.get(0) ?? 0) + (this.received.get(8) ?? 0);
  }

  async offer(): Promise<string> {
    this.transceiver = this.pc.addTransceiver('audio', { direction: 'sendrecv' });
    await this.pc.setLocalDescription(await this.pc.createOffer());
    await this.gathered();
    return this.pc.localDescription!.sdp;
  }

  async accept(answer: string): Promise<void> {
    await this.pc.setRemoteDescription({ type: 'answer', sdp: answer });
  }

  async answer(offer: string): Promise<string> {
    await this.pc.setRemoteDescription({ type: 'offer', sdp: offer });
    this.transceiver = this.pc.getTransceivers()[0];
    this.transceiver!.setDirection('sendrecv');
    await this.pc.setLocalDescription(await this.pc.createAnswer());
    await this.gathered();
    return this.pc.localDescription!.sdp;
  }

  /** Resolves once DTLS is up (SRTP keys made). */
  async connected(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.pc.connectionState !== 'connected') {
      if (Date.now() > deadline) throw new Error(`WebRTC not connected: ${this.pc.connectionState}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** `packets` 20 ms packets of G.711 (payload type `type`), paced in real time. */
  async sendAudio(packets: number, type = 0): Promise<void> {
    for (let i = 0; i < packets; i++) {
      this.send(type, Buffer.alloc(160, type === 0 ? 0xff : 0xd5), i === 0);
      this.timestamp += 160;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** One RFC 4733 key press (`event` 0–15): three packets, the last with the end bit, as browsers send. */
  async sendKey(event: number, type = 126): Promise<void> {
    for (let i = 0; i < 3; i++) {
      const payload = Buffer.from([event, (i === 2 ? 0x80 : 0) | 10, 0, 160 * (i + 1)]);
      this.send(type, payload, i === 0);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    this.timestamp += 480;
  }

  close(): Promise<void> {
    return this.pc.close();
  }

  private send(type: number, payload: Buffer, marker: boolean): void {
    const sender = this.transceiver!.sender;
    const header = new RtpHeader({
      payloadType: type,
      sequenceNumber: this.sequence++ & 0xffff,
      timestamp: this.timestamp,
      ssrc: sender.ssrc,
      marker,
    });
    void sender.dtlsTransport.sendRtp(payload, header).catch(() => {});
  }

  private gathered(): Promise<void> {
    if (this.pc.iceGatheringState === 'complete') return Promise.resolve();
    return new Promise((resolve) => {
      const { unSubscribe } = this.pc.iceGatheringStateChange.subscribe((state) => {
        if (state === 'complete') {
          unSubscribe();
          resolve();
        }
      });
    });
  }
}
