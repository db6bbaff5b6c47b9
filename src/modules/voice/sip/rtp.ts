// RTP for the calls the SIP PBX answers itself (voicemail): one UDP socket per call, G.711 µ-law or A-law
// (RFC 3551 payload types 0 and 8, `alawmulaw` for the codec), RFC 4733 telephone events for the caller's
// keypad, and the SDP offer/answer that sets them up (RFC 3264). Calls between phones carry no media through
// us: their SDP is passed from one to the other.
import { randomBytes, randomInt } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import { SAMPLE_RATE } from '../audio.ts';

export type G711 = 'PCMU' | 'PCMA';
const PAYLOAD_TYPES: Record<G711, number> = { PCMU: 0, PCMA: 8 };
/** 20 ms of audio at 8 kHz per packet, the G.711 default packetisation (RFC 3551). */
const SAMPLES_PER_PACKET = 160;
const PACKET_MS = 20;
const RTP_HEADER = 12;
/** RFC 4733 events 0-15 as keys. */
const DTMF_KEYS = '0123456789*#ABCD';

/** What the caller's SDP offers that we use: where to send, which G.711 law, and the telephone-event type. */
export interface MediaOffer {
  address: string;
  port: number;
  codec: G711;
  /** The dynamic payload type of `telephone-event/8000`, when offered. */
  telephoneEvent?: number;
}

/**
 * Reads an SDP offer's audio stream: its connection address, port, and the first of PCMU or PCMA in the
 * order of preference it lists. Undefined when it has no audio stream we can speak.
 */
export function parseOffer(sdp: string | undefined): MediaOffer | undefined {
  if (!sdp) return undefined;
  const lines = sdp.split(/\r?\n/).map((line) => line.trim());
  let sessionAddress: string | undefined;
  let mediaAddress: string | undefined;
  let media: { port: number; formats: number[] } | undefined;
  const rtpmaps = new Map<number, string>();
  for (const line of lines) {
    if (line.startsWith('m=')) {
      if (media) break; // The first audio stream only.
      const [kind, port, , ...formats] = line.slice(2).split(/\s+/);
      if (kind !== 'audio') continue;
      media = { port: Number(port), formats: formats.map(Number) };
    } else if (line.startsWith('c=')) {
      const address = line.slice(2).split(/\s+/)[2];
      if (media) mediaAddress = address;
      else sessionAddress = address;
    } else if (line.startsWith('a=rtpmap:') && media) {
      const [type, encoding] = line.slice('a=rtpmap:'.length).split(/\s+/);
      rtpmaps.set(Number(type), (encoding ?? '').toLowerCase());
    }
  }
  const address = mediaAddress ?? sessionAddress;
  if (!media || !address || !isIP(address) || !Number.isInteger(media.port) || media.port <= 0)
    return undefined;
  const codecOf = (type: number): G711 | undefined => {
    const name = rtpmaps.get(type);
    if (type === 0 || name === 'pcmu/8000') return 'PCMU';
    if (type === 8 || name === 'pcma/8000') return 'PCMA';
    return undefined;
  };
  const codec = media.formats.map(codecOf).find((found) => found !== undefined);
  if (!codec) return undefined;
  const telephoneEvent = [...rtpmaps].find(([, name]) => name === 'telephone-event/8000')?.[0];
  return { address, port: media.port, codec, telephoneEvent };
}

/** Our SDP answer: one audio stream on `port` at `host`, the offer's codec, telephone events if offered. */
export function answerSdp(host: string, port: number, offer: MediaOffer): string {
  const type = PAYLOAD_TYPES[offer.codec];
  const session = randomInt(1, 2 ** 31);
  const family = isIP(host) === 6 ? 'IP6' : 'IP4';
  const lines = [
    'v=0',
    `o=- ${session} ${session} IN ${family} ${host}`,
    's=comms',
    `c=IN ${family} ${host}`,
    't=0 0',
    `m=audio ${port} RTP/AVP ${type}${offer.telephoneEvent !== undefined ? ` ${offer.telephoneEvent}` : ''}`,
    `a=rtpmap:${type} ${offer.codec}/8000`,
    ...(offer.telephoneEvent !== undefined
      ? [`a=rtpmap:${offer.telephoneEvent} telephone-event/8000`, `a=fmtp:${offer.telephoneEvent} 0-15`]
      : []),
    `a=ptime:${PACKET_MS}`,
    'a=sendrecv',
  ];
  return `${lines.join('\r\n')}\r\n`;
}

/**
 * One call's media: plays audio to the caller at real-time pace and records what the caller sends. The
 * recording is placed by RTP timestamp (lost packets leave silence, reordered ones land where they belong)
 * and bounded by `maxSeconds`. Media is sent to where the offer said, or, once the caller's packets arrive,
 * back to where they come from (symmetric RTP, so a caller behind NAT hears us).
 */
export class RtpSession {
  private remote: { address: string; port: number };
  private readonly ssrc = randomBytes(4).readUInt32BE(0);
  private sequence = randomInt(0, 65536);
  private timestamp = randomInt(0, 2 ** 31);
  private recording?: { samples: Int16Array; firstTimestamp?: number; end: number };
  private lastEventTimestamp?: number;
  private closed = false;
  /** The keys the caller pressed (RFC 4733), in order. */
  digits = '';

  private constructor(
    private readonly socket: Socket,
    readonly port: number,
    private readonly offer: MediaOffer,
    private readonly maxSeconds: number,
  ) {
    this.remote = { address: offer.address, port: offer.port };
    socket.on('message', (packet, from) => this.receive(packet, from));
  }

  /** A socket on a free port of `host` for the call offered `offer`. */
  static async open(host: string, offer: MediaOffer, maxSeconds: number): Promise<RtpSession> {
    const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    socket.on('error', () => {}); // An ICMP unreachable from a caller gone: nothing to do.
    return new RtpSession(socket, socket.address().port, offer, maxSeconds);
  }

  /** Sends `samples` as 20 ms packets at real-time pace; stops early when the session closes. */
  async play(samples: Int16Array): Promise<void> {
    const encode = this.offer.codec === 'PCMU' ? g711.mulaw.encode : g711.alaw.encode;
    const started = performance.now();
    for (
      let offset = 0, index = 0;
      offset < samples.length && !this.closed;
      offset += SAMPLES_PER_PACKET, index++
    ) {
      const frame = new Int16Array(SAMPLES_PER_PACKET);
      frame.set(samples.subarray(offset, offset + SAMPLES_PER_PACKET));
      this.send(Buffer.from(encode(frame)), index === 0);
      const due = started + (index + 1) * PACKET_MS;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
    }
  }

  /** From now on the caller's audio is kept. */
  startRecording(): void {
    this.recording ??= { samples: new Int16Array(this.maxSeconds * SAMPLE_RATE), end: 0 };
  }

  /** What was recorded, up to the last sample received. */
  recorded(): Int16Array {
    return this.recording ? this.recording.samples.slice(0, this.recording.end) : new Int16Array(0);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.close();
  }

  private send(payload: Buffer, marker: boolean): void {
    const header = Buffer.alloc(RTP_HEADER);
    header[0] = 0x80; // Version 2, no padding, no extension, no CSRC.
    header[1] = (marker ? 0x80 : 0) | PAYLOAD_TYPES[this.offer.codec];
    header.writeUInt16BE(this.sequence, 2);
    header.writeUInt32BE(this.timestamp >>> 0, 4);
    header.writeUInt32BE(this.ssrc, 8);
    this.sequence = (this.sequence + 1) & 0xffff;
    this.timestamp = (this.timestamp + SAMPLES_PER_PACKET) >>> 0;
    this.socket.send(Buffer.concat([header, payload]), this.remote.port, this.remote.address);
  }

  private receive(packet: Buffer, from: { address: string; port: number }): void {
    if (packet.length < RTP_HEADER || packet[0]! >> 6 !== 2) return;
    this.remote = { address: from.address, port: from.port };
    const csrcs = packet[0]! & 0x0f;
    let start = RTP_HEADER + csrcs * 4;
    if (packet[0]! & 0x10) {
      if (packet.length < start + 4) return;
      start += 4 + packet.readUInt16BE(start + 2) * 4;
    }
    let end = packet.length;
    if (packet[0]! & 0x20) end -= packet[packet.length - 1]!;
    if (end <= start) return;
    const type = packet[1]! & 0x7f;
    const timestamp = packet.readUInt32BE(4);
    const payload = packet.subarray(start, end);
    if (type === this.offer.telephoneEvent) {
      // Each key is sent as several packets of one timestamp (and the end three times): once per timestamp.
      if (timestamp !== this.lastEventTimestamp && payload[0]! < DTMF_KEYS.length) {
        this.lastEventTimestamp = timestamp;
        this.digits += DTMF_KEYS[payload[0]!];
      }
      return;
    }
    if (type !== PAYLOAD_TYPES[this.offer.codec] || !this.recording) return;
    const recording = this.recording;
    recording.firstTimestamp ??= timestamp;
    const offset = (timestamp - recording.firstTimestamp) >>> 0;
    if (offset >= recording.samples.length) return; // Past the longest message, or from before the start.
    const decoded = (this.offer.codec === 'PCMU' ? g711.mulaw.decode : g711.alaw.decode)(payload);
    const fits = decoded.subarray(0, recording.samples.length - offset);
    recording.samples.set(fits, offset);
    recording.end = Math.max(recording.end, offset + fits.length);
  }
}
