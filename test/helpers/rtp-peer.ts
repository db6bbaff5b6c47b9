// A phone's media on a raw UDP socket, for SIP tests whose signalling SIPp plays and whose media the test plays
// itself: named in SIPp's SDP, it keeps every RTP packet it receives with its arrival time (decoded when G.711
// µ-law), answers to where the other side's packets come from (symmetric RTP) or to a port it is told, and
// sends µ-law audio at real-time pace and keys as RFC 4733 telephone-events, as a phone's keypad does: an
// event's packets share one timestamp, the first has the marker bit, its duration grows, and the end packet is
// sent three times (RFC 4733 section 2.5.1.4).
import { createSocket, type Socket } from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';

const KEYS = '0123456789*#ABCD';

export interface ReceivedPacket {
  /** performance.now() when it arrived. */
  at: number;
  type: number;
  ssrc: number;
  /** Decoded audio of a PCMU packet; empty otherwise. */
  samples: Int16Array;
}

export class RtpPeer {
  readonly received: ReceivedPacket[] = [];
  private remote?: { address: string; port: number };
  private sequence = 1000;
  private timestamp = 160_000;
  private readonly ssrc = 0x7e57;

  private constructor(
    private readonly socket: Socket,
    readonly port: number,
  ) {
    socket.on('message', (packet, from) => {
      if (packet.length < 12 || packet[0]! >> 6 !== 2) return;
      this.remote ??= { address: from.address, port: from.port };
      const type = packet[1]! & 0x7f;
      const samples = type === 0 ? g711.mulaw.decode(packet.subarray(12)) : new Int16Array(0);
      this.received.push({ at: performance.now(), type, ssrc: packet.readUInt32BE(8), samples });
    });
  }

  static async open(): Promise<RtpPeer> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new RtpPeer(socket, socket.address().port);
  }

  /** Where what we send goes from now on. */
  sendTo(port: number): void {
    this.remote = { address: '127.0.0.1', port };
  }

  /** Resolves once something has been received (and so we know where to answer). */
  async heardFrom(timeoutMs = 20_000): Promise<void> {
    for (let waited = 0; !this.remote; waited += 20) {
      if (waited > timeoutMs) throw new Error('no RTP came');
      await sleep(20);
    }
  }

  /** Sends `samples` as PCMU, 20 ms a packet at real-time pace. */
  async play(samples: Int16Array): Promise<void> {
    const started = performance.now();
    for (let offset = 0, index = 0; offset < samples.length; offset += 160, index++) {
      const frame = new Int16Array(160);
      frame.set(samples.subarray(offset, offset + 160));
      this.send(0, Buffer.from(g711.mulaw.encode(frame)), index === 0);
      this.timestamp += 160;
      const wait = started + (index + 1) * 20 - performance.now();
      if (wait > 0) await sleep(wait);
    }
  }

  /** Presses `key` for `ms` as RFC 4733 telephone-events of payload type `type` (the trunk's offer: 101). */
  async press(key: string, type = 101, ms = 100): Promise<void> {
    const event = KEYS.indexOf(key.toUpperCase());
    if (event < 0) throw new Error(`no key ${key}`);
    const payload = (end: boolean, duration: number) =>
      Buffer.from([event, (end ? 0x80 : 0) | 10, duration >> 8, duration & 0xff]);
    const packets = Math.max(1, Math.round(ms / 20));
    for (let index = 1; index <= packets; index++) {
      this.send(type, payload(false, index * 160), index === 1);
      await sleep(20);
    }
    for (let repeat = 0; repeat < 3; repeat++) this.send(type, payload(true, packets * 160), false);
    this.timestamp += packets * 160;
  }

  close(): void {
    this.socket.close();
  }

  private send(type: number, payload: Buffer, marker: boolean): void {
    if (!this.remote) throw new Error('the peer does not know where to send yet');
    const header = Buffer.alloc(12);
    header[0] = 0x80;
    header[1] = (marker ? 0x80 : 0) | type;
    header.writeUInt16BE(this.sequence, 2);
    header.writeUInt32BE(this.timestamp >>> 0, 4);
    header.writeUInt32BE(this.ssrc, 8);
    this.sequence = (this.sequence + 1) & 0xffff;
    this.socket.send(Buffer.concat([header, payload]), this.remote.port, this.remote.address);
  }
}
