// A phone's media on a SIP call, played by the test: a UDP socket named in the caller's SDP that counts the
// audio it hears from us and presses keys as RFC 4733 telephone-events, as a desk phone sends them. It may keep
// what it hears (`keep`) and speak PCMU frames of its own (`talk`), as a media stream's tests need.
import { createSocket, type Socket } from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';

/** The telephone-event payload type SIPp's INVITE offers (and our answer keeps). */
export const TELEPHONE_EVENT = 101;

/** The caller's phone's media: counts the audio it hears, and sends keys as RFC 4733 events. */
export class PhoneMedia {
  audioPackets = 0;
  /** Packets whose payload is not silence. */
  loudPackets = 0;
  /** Where our media comes from: the phone sends its keys there (symmetric RTP). */
  server?: { address: string; port: number };
  onAudio?: () => void;
  /** With `keep`: each PCMU payload heard, in order of arrival. */
  readonly heard: Buffer[] = [];
  keep = false;
  private sequence = 1000;
  private timestamp = 50_000;
  private readonly ssrc = 0x1234abcd;

  private constructor(private readonly socket: Socket) {
    socket.on('message', (packet, from) => {
      if (packet.length <= 12 || (packet[1]! & 0x7f) !== 0) return;
      this.server = { address: from.address, port: from.port };
      this.audioPackets++;
      // µ-law silence is 0xff (and 0x7f); speech or a tone has other bytes.
      if (packet.subarray(12).some((byte) => byte !== 0xff && byte !== 0x7f)) this.loudPackets++;
      if (this.keep) this.heard.push(Buffer.from(packet.subarray(12)));
      this.onAudio?.();
    });
  }

  static async open(): Promise<PhoneMedia> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new PhoneMedia(socket);
  }

  get port(): number {
    return this.socket.address().port;
  }

  /**
   * Key `key` as a phone sends it (RFC 4733 section 2.5): three packets while it is held, then the end three
   * times, all with the event's one timestamp.
   */
  async press(key: string): Promise<void> {
    const server = this.server;
    if (!server) throw new Error('the phone has heard nothing yet: it does not know where to send');
    const event = '0123456789*#ABCD'.indexOf(key);
    this.timestamp += 8000;
    for (let index = 0; index < 6; index++) {
      const end = index >= 3;
      const packet = Buffer.alloc(16);
      packet[0] = 0x80;
      packet[1] = (index === 0 ? 0x80 : 0) | TELEPHONE_EVENT;
      packet.writeUInt16BE(this.sequence++ & 0xffff, 2);
      packet.writeUInt32BE(this.timestamp, 4);
      packet.writeUInt32BE(this.ssrc, 8);
      packet[12] = event;
      packet[13] = (end ? 0x80 : 0) | 10; // End bit, volume -10 dBm0.
      packet.writeUInt16BE(Math.min(index + 1, 4) * 160, 14);
      this.socket.send(packet, server.port, server.address);
      await sleep(20);
    }
  }

  /** Speaks `frames` (PCMU payloads, 160 bytes each) as RTP, one each 20 ms, to where our media comes from. */
  async talk(frames: Buffer[]): Promise<void> {
    const server = this.server;
    if (!server) throw new Error('the phone has heard nothing yet: it does not know where to send');
    const started = performance.now();
    for (const [index, frame] of frames.entries()) {
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header[1] = index === 0 ? 0x80 : 0; // PCMU, the marker on the first.
      header.writeUInt16BE(this.sequence++ & 0xffff, 2);
      this.timestamp += frame.length;
      header.writeUInt32BE(this.timestamp >>> 0, 4);
      header.writeUInt32BE(this.ssrc, 8);
      this.socket.send(Buffer.concat([header, frame]), server.port, server.address);
      const wait = started + (index + 1) * 20 - performance.now();
      if (wait > 0) await sleep(wait);
    }
  }

  close(): void {
    this.socket.close();
  }
}

/** A bare UDP socket on loopback keeping every packet it hears: a side of a relay in the relay's own tests. */
export async function udpPeer(): Promise<{ socket: Socket; heard: Buffer[]; port: number }> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  const heard: Buffer[] = [];
  socket.on('message', (packet) => heard.push(packet));
  return { socket, heard, port: socket.address().port };
}
