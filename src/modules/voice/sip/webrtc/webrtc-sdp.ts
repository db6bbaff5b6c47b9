// The session descriptions at the WebRTC edge: telling a browser's SDP (DTLS-SRTP, ICE) from a desk phone's, the
// G.711 formats it offers, and the plain RTP description of our side of the bridge (webrtc-endpoint.ts) that the
// PBX, the relay, voicemail and agents read as if a desk phone had sent it. Only the first audio stream counts;
// browsers' G.711 is PCMU (0) and PCMA (8), with `telephone-event/8000` (RFC 4733) on a dynamic type.
import { isIP } from 'node:net';
import type { Direction } from '../sdp.ts';

/** The largest SDP we read (a SIP message's limit, stack/parse.ts). */
const MAX_SDP_CHARS = 65_535;
const DIRECTIONS = new Set<string>(['sendrecv', 'sendonly', 'recvonly', 'inactive']);

/** One audio format both sides can carry unchanged: PCMU, PCMA or telephone-event/8000, by payload type. */
export interface Format {
  type: number;
  name: 'PCMU' | 'PCMA' | 'telephone-event';
}

/** What we read of a description's first audio stream. */
export interface AudioDescription {
  /** Where it receives (plain RTP only; a browser's address is in its ICE candidates). */
  address?: string;
  port: number;
  protocol: string;
  /** Its G.711 and telephone-event formats, in its order of preference. */
  formats: Format[];
  direction: Direction;
  /** ICE and DTLS identity (a browser's): a change of ufrag is an ICE restart (RFC 8839 section 4.4.1.1.1). */
  iceUfrag?: string;
  fingerprint?: string;
  /** `a=setup` (RFC 4145): who starts DTLS. */
  setup?: string;
}

/** Whether an SDP is a WebRTC one: its audio over DTLS-SRTP (`UDP/TLS/RTP/SAVPF`) with a fingerprint. */
export function isWebRtc(sdp: string | undefined): boolean {
  const audio = readAudio(sdp);
  return Boolean(audio?.protocol.includes('savp') && audio.fingerprint !== undefined);
}

export function readAudio(sdp: string | undefined): AudioDescription | undefined {
  if (!sdp || sdp.length > MAX_SDP_CHARS) return undefined;
  let media: AudioDescription | undefined;
  let seenAudio = false;
  let sessionAddress: string | undefined;
  let sessionFingerprint: string | undefined;
  let sessionUfrag: string | undefined;
  let sessionSetup: string | undefined;
  const names = new Map<number, string>();
  let types: number[] = [];
  for (const raw of sdp.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('m=')) {
      if (seenAudio) break;
      const [kind, port, protocol, ...formats] = line.slice(2).split(/\s+/);
      if (kind !== 'audio') continue;
      seenAudio = true;
      types = formats.map(Number);
      media = {
        port: Number(port),
        protocol: (protocol ?? '').toLowerCase(),
        formats: [],
        direction: 'sendrecv',
      };
      continue;
    }
    const value = (prefix: string) =>
      line.startsWith(prefix) ? line.slice(prefix.length).trim() : undefined;
    const address = value('c=')?.split(/\s+/)[2];
    const fingerprint = value('a=fingerprint:');
    const ufrag = value('a=ice-ufrag:');
    const setup = value('a=setup:');
    if (!seenAudio) {
      sessionAddress = address ?? sessionAddress;
      sessionFingerprint = fingerprint ?? sessionFingerprint;
      sessionUfrag = ufrag ?? sessionUfrag;
      sessionSetup = setup ?? sessionSetup;
      continue;
    }
    if (!media) continue;
    if (address) media.address = address;
    if (fingerprint) media.fingerprint = fingerprint;
    if (ufrag) media.iceUfrag = ufrag;
    if (setup) media.setup = setup;
    if (line.startsWith('a=') && DIRECTIONS.has(line.slice(2))) media.direction = line.slice(2) as Direction;
    const rtpmap = value('a=rtpmap:');
    if (rtpmap) {
      const [type, encoding] = rtpmap.split(/\s+/);
      names.set(Number(type), (encoding ?? '').toLowerCase());
    }
  }
  if (!media || !Number.isInteger(media.port) || media.port < 0) return undefined;
  media.address ??= sessionAddress;
  if (media.address && !isIP(media.address)) media.address = undefined;
  media.fingerprint ??= sessionFingerprint;
  media.iceUfrag ??= sessionUfrag;
  media.setup ??= sessionSetup;
  for (const type of types) {
    const name = names.get(type);
    if ((type === 0 && (!name || name === 'pcmu/8000')) || name === 'pcmu/8000')
      media.formats.push({ type, name: 'PCMU' });
    else if ((type === 8 && (!name || name === 'pcma/8000')) || name === 'pcma/8000')
      media.formats.push({ type, name: 'PCMA' });
    else if (name === 'telephone-event/8000') media.formats.push({ type, name: 'telephone-event' });
  }
  return media;
}

/** The first G.711 format of a description, and its telephone-event if any. */
export function chosenFormats(formats: Format[]): Format[] {
  const law = formats.find((format) => format.name !== 'telephone-event');
  const events = formats.find((format) => format.name === 'telephone-event');
  return law ? [law, ...(events ? [events] : [])] : [];
}

/** The plain RTP side of a bridge as a desk phone's SDP: `formats` on `host`:`port`, in `direction`. */
export function plainSdp(
  host: string,
  port: number,
  formats: Format[],
  direction: Direction,
  version: number,
): string {
  const family = isIP(host) === 6 ? 'IP6' : 'IP4';
  const lines = [
    'v=0',
    `o=- ${SESSION_ID} ${version} IN ${family} ${host}`,
    's=comms',
    `c=IN ${family} ${host}`,
    't=0 0',
    `m=audio ${port} RTP/AVP ${formats.map((format) => format.type).join(' ')}`,
    ...formats.map((format) => `a=rtpmap:${format.type} ${format.name}/8000`),
    ...formats
      .filter((format) => format.name === 'telephone-event')
      .map((format) => `a=fmtp:${format.type} 0-16`),
    'a=ptime:20',
    `a=${direction}`,
  ];
  return `${lines.join('\r\n')}\r\n`;
}
const SESSION_ID = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);

/**
 * `sdp` again with the audio's direction set and the origin's version set (RFC 3264 section 8: a changed
 * description in the same session bumps `o=`), and `a=setup` replaced when asked: a re-offer of ours says
 * `actpass` (RFC 5763 section 5), a re-answer keeps our role.
 */
export function revised(sdp: string, direction: Direction, version: number, setup?: string): string {
  const lines = sdp.split(/\r?\n/).filter((line) => line.length > 0);
  let placed = false;
  const out = lines.map((line) => {
    if (line.startsWith('o=')) {
      const fields = line.split(' ');
      if (fields.length >= 6) fields[2] = String(version);
      return fields.join(' ');
    }
    if (setup && line.startsWith('a=setup:')) return `a=setup:${setup}`;
    if (line.startsWith('a=') && DIRECTIONS.has(line.slice(2))) {
      placed = true;
      return `a=${direction}`;
    }
    return line;
  });
  // No direction attribute: the audio section's last line is followed by one (after c=, as RFC 4566 orders).
  if (!placed) {
    const audio = out.findIndex((line) => line.startsWith('m=audio'));
    let end = out.findIndex((line, index) => index > audio && line.startsWith('m='));
    if (end === -1) end = out.length;
    if (audio >= 0) out.splice(end, 0, `a=${direction}`);
  }
  return `${out.join('\r\n')}\r\n`;
}

/** The direction an answer takes to an offer's (RFC 3264 section 6.1). */
export function answering(direction: Direction): Direction {
  if (direction === 'sendonly') return 'recvonly';
  if (direction === 'recvonly') return 'sendonly';
  return direction;
}

/** A description the bridge cannot take: the edge answers 488 Not Acceptable Here. */
export class NotAcceptable extends Error {}

/** Where a bridge binds its sockets and the address it advertises in its descriptions. */
export interface MediaHosts {
  bind: string;
  advertise: string;
}
