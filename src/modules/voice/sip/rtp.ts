// RTP for the SIP PBX. The calls it answers itself (voicemail, AI agents): one UDP socket per call, G.711
// µ-law or A-law (RFC 3551 payload types 0 and 8, `alawmulaw` for the codec) and RFC 4733 telephone events for
// the caller's keypad, as negotiated by sdp.ts. Calls between two parties: media anchored on us by a relay (two
// sockets, each side's packets forwarded to the other unchanged), so a call can be recorded, phones behind NAT
// hear each other, and neither side learns the other's address.
import { randomBytes, randomInt } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import { encodeWav, SAMPLE_RATE } from '../audio.ts';
import type { CallAudio } from '../pbx.ts';
import { type MediaOffer, PACKET_MS, PAYLOAD_TYPES, parseStream } from './sdp.ts';

/** Payload types of the codecs a recording can decode. */
const DECODERS: Record<number, (payload: Uint8Array) => Int16Array> = {
  0: (payload) => g711.mulaw.decode(payload),
  8: (payload) => g711.alaw.decode(payload),
};
/** 20 ms of audio at 8 kHz per packet, the G.711 default packetisation (RFC 3551). */
const SAMPLES_PER_PACKET = 160;
const RTP_HEADER = 12;
/** The most sources one recording keeps: each side's, a few transfers' and restarted streams. */
const MAX_TRACKS = 16;
/** RFC 4733 events 0-15 as keys (16, flash, is no key). */
const DTMF_KEYS = '0123456789*#ABCD';
/** RFC 4733 section 2.3: an event's payload is event, end bit and volume, and duration: four bytes. */
const EVENT_PAYLOAD = 4;

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
  /**
   * Called once for each key the caller presses (RFC 4733), as its first packet arrives, so a menu can act
   * before the key is released; the event's later packets and its three end packets are not reported again.
   */
  onDtmf?: (key: string) => void;
  /** Called with each packet of the caller's audio as it arrives (decoded), recorded or not. */
  onAudio?: (samples: Int16Array, timestamp: number) => void;
  /**
   * Called with each packet of the caller's audio as 8 kHz µ-law (a media stream's): PCMU's payload as it came,
   * byte for byte (a view of the packet, valid during the call); PCMA's transcoded.
   */
  onMulaw?: (payload: Uint8Array) => void;
  /** The next packet sent starts a talkspurt (RFC 3551 section 4.1: the marker bit). */
  private talkspurt = true;

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
    const socket = await bindSocket(host);
    return new RtpSession(socket, socket.address().port, offer, maxSeconds);
  }

  /**
   * Sends `samples` as 20 ms packets at real-time pace; stops early when the session closes or `stop` says so.
   * Resolves with how many samples were sent.
   */
  async play(samples: Int16Array, stop: () => boolean = () => false): Promise<number> {
    const encode = this.offer.codec === 'PCMU' ? g711.mulaw.encode : g711.alaw.encode;
    const started = performance.now();
    let offset = 0;
    for (
      let index = 0;
      offset < samples.length && !this.closed && !stop();
      offset += SAMPLES_PER_PACKET, index++
    ) {
      const frame = new Int16Array(SAMPLES_PER_PACKET);
      frame.set(samples.subarray(offset, offset + SAMPLES_PER_PACKET));
      this.send(Buffer.from(encode(frame)), index === 0);
      const due = started + (index + 1) * PACKET_MS;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
    }
    return Math.min(offset, samples.length);
  }

  /**
   * Sends one packet of 8 kHz µ-law audio now (a media stream's frame: the stream paces them): PCMU as it is,
   * byte for byte; to a PCMA caller transcoded.
   */
  sendMulaw(frame: Uint8Array): void {
    if (this.closed) return;
    const payload = this.offer.codec === 'PCMU' ? frame : g711.alaw.encode(g711.mulaw.decode(frame));
    this.send(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength), this.talkspurt);
    this.talkspurt = false;
  }

  /** `samples` as the caller hears them: through this session's G.711 law and back. */
  carried(samples: Int16Array): Int16Array {
    const law = this.offer.codec === 'PCMU' ? g711.mulaw : g711.alaw;
    return law.decode(law.encode(samples));
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
    const rtp = readRtp(packet);
    if (!rtp) return;
    this.remote = { address: from.address, port: from.port };
    const { type, timestamp, payload } = rtp;
    if (type === this.offer.telephoneEvent) {
      // Each key is sent as several packets of one timestamp (and the end three times): once per timestamp.
      const key = payload.length >= EVENT_PAYLOAD ? DTMF_KEYS[payload[0]!] : undefined;
      if (key !== undefined && timestamp !== this.lastEventTimestamp) {
        this.lastEventTimestamp = timestamp;
        this.digits += key;
        this.onDtmf?.(key);
      }
      return;
    }
    // Only the law we negotiated is audio: telephone events, comfort noise or a codec the caller was not
    // answered with would be decoded as noise.
    if (type !== PAYLOAD_TYPES[this.offer.codec]) return;
    if (this.onMulaw) this.onMulaw(type === 0 ? payload : g711.mulaw.encode(DECODERS[type]!(payload)));
    const decoded = DECODERS[type]!(payload);
    this.onAudio?.(decoded, timestamp);
    if (!this.recording) return;
    const recording = this.recording;
    recording.firstTimestamp ??= timestamp;
    const offset = (timestamp - recording.firstTimestamp) >>> 0;
    if (offset >= recording.samples.length) return; // Past the longest message, or from before the start.
    const fits = decoded.subarray(0, recording.samples.length - offset);
    recording.samples.set(fits, offset);
    recording.end = Math.max(recording.end, offset + fits.length);
  }
}

type Side = 'caller' | 'callee';
const OTHER: Record<Side, Side> = { caller: 'callee', callee: 'caller' };

/**
 * Media of a call between two parties, anchored on us: one socket per side, each side's packets sent on
 * unchanged to the other from the other's socket. A side's address is what its SDP says until its first
 * packet arrives, then where that packet came from (symmetric RTP); after that, packets from elsewhere are
 * dropped (nobody else can inject audio into the call) until a new SDP of that side (a re-INVITE) says where
 * it moved. Recording keeps both directions' G.711 audio placed by time and mixes them when asked.
 */
export class RtpRelay {
  private readonly sides: Record<
    Side,
    {
      socket: Socket;
      port: number;
      remote?: { address: string; port: number };
      latched: boolean;
      /** The party that left this side (a transfer): its packets are never taken for the new party's. */
      departed?: { address: string; port: number };
    }
  >;
  private recording?: CallRecorder;
  private closed = false;
  /** Packets forwarded, per direction (for tests and the log). */
  readonly forwarded: Record<Side, number> = { caller: 0, callee: 0 };

  private constructor(sockets: Record<Side, Socket>) {
    this.sides = {
      caller: { socket: sockets.caller, port: sockets.caller.address().port, latched: false },
      callee: { socket: sockets.callee, port: sockets.callee.address().port, latched: false },
    };
    for (const side of ['caller', 'callee'] as const) {
      const entry = this.sides[side];
      entry.socket.on('message', (packet, from) => this.receive(this.sideOf(entry), packet, from));
    }
  }

  /**
   * The two sides trade places (sip-call.ts swapSides: the phone that placed the call transfers the one it
   * called, who plays the caller's part from then on). Each socket, port and remote stays together.
   */
  swapSides(): void {
    const { caller, callee } = this.sides;
    this.sides.caller = callee;
    this.sides.callee = caller;
  }

  private sideOf(entry: (typeof this.sides)[Side]): Side {
    return this.sides.caller === entry ? 'caller' : 'callee';
  }

  /** Two sockets on free ports of `host`. */
  static async open(host: string): Promise<RtpRelay> {
    const caller = await bindSocket(host);
    const callee = await bindSocket(host).catch((error) => {
      caller.close();
      throw error;
    });
    return new RtpRelay({ caller, callee });
  }

  /** The port a side sends its media to. */
  port(side: Side): number {
    return this.sides[side].port;
  }

  /** Where a side's SDP says it receives (a new SDP of a side that moved, too). */
  setRemote(side: Side, sdp: string | undefined): void {
    const stream = parseStream(sdp);
    if (!stream) return;
    const entry = this.sides[side];
    entry.remote = stream.port > 0 ? { address: stream.address, port: stream.port } : undefined;
    entry.latched = false;
  }

  /**
   * Another party takes `side` (a transfer's target answered, or was joined in): like a move, but the party
   * that left may go on sending for a while (until its BYE: a browser's WebRTC bridge, a phone slow to stop),
   * and latching onto its packets would send the call's audio to someone no longer in it and drop the new
   * party's. So what comes from where the old party was is ignored on this side from now on.
   */
  replaceParty(side: Side, sdp: string | undefined): void {
    const entry = this.sides[side];
    const previous = entry.remote;
    this.setRemote(side, sdp);
    if (!previous) return;
    const next = entry.remote;
    // Unless the new party receives where the old one sent from (it cannot be told apart then).
    if (next?.address === previous.address && next.port === previous.port) return;
    entry.departed = previous;
  }

  /**
   * Sends a packet of ours to `side` from its socket (a warm transfer's summary to the person); false when the
   * relay is closed or the side's address is not known.
   */
  sendTo(side: Side, packet: Buffer): boolean {
    const entry = this.sides[side];
    if (this.closed || !entry.remote) return false;
    entry.socket.send(packet, entry.remote.port, entry.remote.address);
    return true;
  }

  /** While set, what `side` sends is not passed on (the person the summary is for is not heard by the caller). */
  held?: Side;

  /** From now on both directions are kept, up to `maxSeconds`. */
  startRecording(maxSeconds: number): void {
    this.recording ??= new CallRecorder(maxSeconds);
  }

  /** Both directions mixed into one track, from the start of recording to the last sample received. */
  recorded(): Int16Array {
    return this.recording?.mixed() ?? new Int16Array(0);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sides.caller.socket.close();
    this.sides.callee.socket.close();
  }

  private receive(side: Side, packet: Buffer, from: { address: string; port: number }): void {
    if (packet.length < RTP_HEADER || packet[0]! >> 6 !== 2) return; // Not RTP (RTCP goes to port + 1).
    const entry = this.sides[side];
    if (entry.latched) {
      if (entry.remote?.address !== from.address || entry.remote.port !== from.port) return;
    } else {
      if (entry.departed?.address === from.address && entry.departed.port === from.port) return;
      entry.remote = { address: from.address, port: from.port };
      entry.latched = true;
    }
    const other = this.sides[OTHER[side]];
    if (other.remote && this.held !== side) {
      other.socket.send(packet, other.remote.port, other.remote.address);
      this.forwarded[side]++;
    }
    if (this.recording) this.record(side, packet);
  }

  private record(side: Side, packet: Buffer): void {
    const rtp = readRtp(packet);
    const decode = rtp && DECODERS[rtp.type];
    if (!rtp || !decode) return; // Telephone events, comfort noise, codecs we cannot decode.
    // A track per RTP source: a transfer's new party, or a phone that restarted its stream, has its own
    // timestamps, which placed on the old source's timeline would land far outside the recording.
    this.recording!.stream(`${side}:${rtp.ssrc}`, rtp.timestamp, decode(rtp.payload));
  }
}

/**
 * A call's audio, several tracks on one timeline mixed into one: an RTP stream joins where its first packet
 * arrived, then its own clock (the RTP timestamp) places each packet, so jitter does not stretch it, lost
 * packets leave silence and reordered ones land where they belong; audio we play is placed when it starts.
 */
export class CallRecorder {
  private readonly startedAt = performance.now();
  private readonly maxSamples: number;
  private readonly tracks = new Map<
    string,
    { offset?: number; firstTimestamp?: number; chunks: [number, Int16Array][] }
  >();

  constructor(maxSeconds: number) {
    this.maxSamples = maxSeconds * SAMPLE_RATE;
  }

  /** Where on the timeline now is, in samples. */
  now(): number {
    return Math.round(((performance.now() - this.startedAt) * SAMPLE_RATE) / 1000);
  }

  /** A packet of an RTP stream (decoded), placed by its timestamp. */
  stream(track: string, timestamp: number, samples: Int16Array): void {
    const entry = this.track(track);
    if (entry.offset === undefined || entry.firstTimestamp === undefined) {
      entry.offset = this.now();
      entry.firstTimestamp = timestamp;
    }
    this.place(entry, entry.offset + ((timestamp - entry.firstTimestamp) | 0), samples);
  }

  /** Audio at `at` samples on the timeline (what we played, from when it started). */
  add(track: string, at: number, samples: Int16Array): void {
    this.place(this.track(track), at, samples);
  }

  /** Every track mixed, from the start to the last sample. */
  mixed(): Int16Array {
    const tracks = [...this.tracks.values()].map(({ chunks }) => {
      const end = chunks.reduce((last, [at, samples]) => Math.max(last, at + samples.length), 0);
      const track = new Int16Array(Math.min(end, this.maxSamples));
      for (const [at, samples] of chunks) {
        if (at < track.length) track.set(samples.subarray(0, track.length - at), at);
      }
      return track;
    });
    const mixed = new Int16Array(tracks.reduce((longest, track) => Math.max(longest, track.length), 0));
    for (let index = 0; index < mixed.length; index++) {
      let sum = 0;
      for (const track of tracks) sum += track[index] ?? 0;
      mixed[index] = Math.max(-32768, Math.min(32767, sum));
    }
    return mixed;
  }

  private track(name: string) {
    let entry = this.tracks.get(name);
    if (!entry) {
      entry = { chunks: [] };
      // A peer inventing a new source for every packet gets no more tracks than a call has use for: the
      // audio of one beyond them is dropped (its entry is not kept).
      if (this.tracks.size < MAX_TRACKS) this.tracks.set(name, entry);
    }
    return entry;
  }

  private place(entry: { chunks: [number, Int16Array][] }, at: number, samples: Int16Array): void {
    if (at < 0 || at >= this.maxSamples) return;
    entry.chunks.push([at, samples]);
  }
}

/** An RTP packet's payload type, timestamp and payload (after CSRCs, header extension and padding). */
function readRtp(
  packet: Buffer,
): { type: number; timestamp: number; ssrc: number; payload: Buffer } | undefined {
  if (packet.length < RTP_HEADER || packet[0]! >> 6 !== 2) return undefined;
  let start = RTP_HEADER + (packet[0]! & 0x0f) * 4;
  if (packet[0]! & 0x10) {
    if (packet.length < start + 4) return undefined;
    start += 4 + packet.readUInt16BE(start + 2) * 4;
  }
  const end = packet.length - (packet[0]! & 0x20 ? packet[packet.length - 1]! : 0);
  if (end <= start) return undefined;
  return {
    type: packet[1]! & 0x7f,
    timestamp: packet.readUInt32BE(4),
    ssrc: packet.readUInt32BE(8),
    payload: packet.subarray(start, end),
  };
}

async function bindSocket(host: string): Promise<Socket> {
  const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  socket.on('error', () => {}); // An ICMP unreachable from a side gone: nothing to do.
  return socket;
}

/** Audio heard over RTP as a call's recording or message: whole seconds, at least one. */
export function rtpAudio(samples: Int16Array): CallAudio {
  return {
    wav: encodeWav(samples),
    durationSeconds: Math.max(1, Math.ceil(samples.length / SAMPLE_RATE)),
    voice: 'rtp',
  };
}
