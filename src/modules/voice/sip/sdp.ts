// SDP offer/answer for the SIP PBX (RFC 3264 over RFC 4566): reading a peer's offer, the offers and answers we
// make for our own media (voicemail, AI agents), a peer's SDP moved onto our RTP relay, and the codec policy:
// a leg whose audio we decode (recorded, voicemail, agent) negotiates only G.711 (RFC 3551 payload types 0 and 8)
// and RFC 4733 telephone events; other legs pass the peers' codecs through the relay untouched. Every SDP
// read here comes from a network peer: lines are scanned once, split on plain characters, and the whole is
// capped at the size of the largest SIP message the stack accepts.
import { randomInt } from 'node:crypto';
import { isIP } from 'node:net';

export type G711 = 'PCMU' | 'PCMA';
export const PAYLOAD_TYPES: Record<G711, number> = { PCMU: 0, PCMA: 8 };
/** The packetisation we offer and send: 20 ms of audio a packet, the G.711 default (RFC 3551). */
export const PACKET_MS = 20;
/** The telephone-event payload type of the offers we make (any dynamic type would do; 101 is customary). */
const OUR_TELEPHONE_EVENT = 101;
/** RFC 4733 events we take: the 16 keys and flash (16). */
const TELEPHONE_EVENTS = '0-16';
/** The largest SIP message the stack accepts (stack/parse.ts); an SDP cannot be longer. */
const MAX_SDP_CHARS = 65_535;
/** Plain RTP profiles: audio we can decode without keys (SRTP and DTLS-SRTP we relay but cannot hear). */
const PLAIN_RTP = new Set(['rtp/avp', 'rtp/avpf']);

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
  const stream = parseStream(sdp);
  if (!stream || stream.port === 0 || !PLAIN_RTP.has(stream.protocol)) return undefined;
  const { rtpmaps } = stream;
  const codecOf = (type: number): G711 | undefined => {
    const name = rtpmaps.get(type);
    if (type === 0 || name === 'pcmu/8000') return 'PCMU';
    if (type === 8 || name === 'pcma/8000') return 'PCMA';
    return undefined;
  };
  const codec = stream.formats.map(codecOf).find((found) => found !== undefined);
  if (!codec) return undefined;
  const telephoneEvent = telephoneEventOf(stream.formats, rtpmaps);
  return { address: stream.address, port: stream.port, codec, telephoneEvent };
}

/**
 * An SDP's first audio stream: where it receives, its transport protocol (lower case), its formats in order,
 * their rtpmap names (lower case).
 */
export function parseStream(sdp: string | undefined):
  | {
      address: string;
      port: number;
      protocol: string;
      formats: number[];
      rtpmaps: Map<number, string>;
    }
  | undefined {
  if (!sdp || sdp.length > MAX_SDP_CHARS) return undefined;
  let sessionAddress: string | undefined;
  let mediaAddress: string | undefined;
  let media: { port: number; protocol: string; formats: number[] } | undefined;
  let otherMedia = false; // Inside a stream before the audio one (video first): its lines are not ours.
  const rtpmaps = new Map<number, string>();
  for (const line of sdpLines(sdp)) {
    if (line.startsWith('m=')) {
      if (media) break; // The first audio stream only.
      const [kind, port, protocol, ...formats] = line.slice(2).split(/\s+/);
      otherMedia = kind !== 'audio';
      if (otherMedia) continue;
      media = {
        port: Number(port),
        protocol: (protocol ?? '').toLowerCase(),
        formats: formats.map(Number),
      };
    } else if (otherMedia) {
      // A line of a stream before the audio one (video first): its address and formats are not the audio's.
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
  if (!media || !address || !isIP(address) || !Number.isInteger(media.port) || media.port < 0)
    return undefined;
  return { address, ...media, rtpmaps };
}

/**
 * An offer restricted to what we decode, for a leg whose audio we keep (a recorded call): its first audio
 * stream keeps PCMU (0), PCMA (8) and `telephone-event/8000` (its dynamic type) with their rtpmap, fmtp and
 * rtcp-fb lines, and loses every other format's; other streams (video, a second audio) are refused with
 * port 0 (RFC 3264 section 6). Undefined when the stream offers neither PCMU nor PCMA over plain RTP, or was
 * refused itself: a leg that must be decoded cannot be set up with it (the caller's answer is 488).
 */
export function decodableOffer(sdp: string | undefined): string | undefined {
  if (!sdp || sdp.length > MAX_SDP_CHARS) return undefined;
  const lines = sdpLines(sdp);
  const audio = lines.findIndex((line) => mediaKind(line) === 'audio');
  if (audio === -1) return undefined;
  let audioEnd = lines.findIndex((line, index) => index > audio && line.startsWith('m='));
  if (audioEnd === -1) audioEnd = lines.length;
  const [, port = '', protocol = '', ...formats] = lines[audio]!.slice(2).split(/\s+/);
  if (!PLAIN_RTP.has(protocol.toLowerCase()) || Number(port.split('/')[0]) === 0) return undefined;

  const rtpmaps = new Map<number, string>();
  for (const line of lines.slice(audio + 1, audioEnd)) {
    const format = formatAttribute(line, 'a=rtpmap:');
    if (format !== undefined) rtpmaps.set(format.type, format.value.toLowerCase());
  }
  const types = formats.map(Number);
  const telephoneEvent = telephoneEventOf(types, rtpmaps);
  // A static type counts only when no rtpmap renames it (RFC 3551 fixes 0 and 8, but a peer can lie).
  const isLaw = (type: number, name: string) => rtpmaps.get(type) === undefined || rtpmaps.get(type) === name;
  const kept = new Set(
    types.filter(
      (type) =>
        (type === 0 && isLaw(0, 'pcmu/8000')) ||
        (type === 8 && isLaw(8, 'pcma/8000')) ||
        type === telephoneEvent,
    ),
  );
  if (!kept.has(0) && !kept.has(8)) return undefined;

  const restricted = lines.flatMap((line, index): string[] => {
    if (index === audio) return [`m=audio ${port} ${protocol} ${[...kept].join(' ')}`];
    if (line.startsWith('m=')) {
      const [kind, , ...rest] = line.slice(2).split(/\s+/);
      return [`m=${kind} 0 ${rest.join(' ')}`];
    }
    if (index > audio && index < audioEnd) {
      for (const prefix of ['a=rtpmap:', 'a=fmtp:', 'a=rtcp-fb:']) {
        const format = formatAttribute(line, prefix);
        if (format && !kept.has(format.type)) return [];
      }
    }
    return [line];
  });
  return `${restricted.join('\r\n')}\r\n`;
}

/** Our SDP answer: one audio stream on `port` at `host`, the offer's codec, telephone events if offered. */
export function answerSdp(
  host: string,
  port: number,
  offer: Pick<MediaOffer, 'codec' | 'telephoneEvent'>,
  direction: Direction = 'sendrecv',
): string {
  return sdpOf(host, port, [offer.codec], offer.telephoneEvent, direction);
}

/** Our SDP offer for a call we place (click-to-call): both G.711 laws and telephone events (type 101). */
export function offerSdp(host: string, port: number, codecs: G711[] = ['PCMU', 'PCMA']): string {
  return sdpOf(host, port, codecs, OUR_TELEPHONE_EVENT, 'sendrecv');
}

export type Direction = 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';
const DIRECTIONS = new Set<string>(['sendrecv', 'sendonly', 'recvonly', 'inactive']);

/** The direction an answer takes to an offer (RFC 3264 section 6.1): on hold, the answer only receives. */
export function answeringDirection(offer: string | undefined): Direction {
  if (!offer || offer.length > MAX_SDP_CHARS) return 'sendrecv';
  const found = sdpLines(offer).find((line) => line.startsWith('a=') && DIRECTIONS.has(line.slice(2)));
  const direction = found?.slice(2) as Direction | undefined;
  return direction === 'sendonly'
    ? 'recvonly'
    : direction === 'recvonly'
      ? 'sendonly'
      : (direction ?? 'sendrecv');
}

/**
 * Our SDP again, with the audio stream's direction set to `direction`; the origin's version goes up when that
 * changes anything (RFC 3264 section 8: an unchanged SDP keeps its version).
 */
export function withDirection(sdp: string, direction: Direction): string {
  const lines = sdp.split(/\r?\n/).filter((line) => line.length > 0);
  const kept = lines.filter((line) => !(line.startsWith('a=') && DIRECTIONS.has(line.slice(2))));
  const audio = kept.findIndex((line) => line.startsWith('m=audio'));
  if (audio === -1) return sdp;
  kept.splice(audio + 1, 0, `a=${direction}`);
  const changed = kept.join('\n') !== lines.join('\n');
  const updated = kept.map((line) => {
    if (!changed || !line.startsWith('o=')) return line;
    const fields = line.split(' ');
    const version = Number(fields[2]);
    if (fields.length < 6 || !Number.isSafeInteger(version)) return line;
    fields[2] = String(version + 1);
    return fields.join(' ');
  });
  return `${updated.join('\r\n')}\r\n`;
}

/**
 * One side's SDP passed to the other with the media moved to our relay: every connection address becomes
 * `host`, the first audio stream's port `port`; other streams (video) are declined with port 0, since only
 * audio is relayed. Codecs and attributes pass unchanged, so the two sides still agree on them end to end.
 */
export function relaySdp(sdp: string, host: string, port: number): string {
  const family = isIP(host) === 6 ? 'IP6' : 'IP4';
  let audioSeen = false;
  const lines = sdp
    .split(/\r?\n/)
    .filter((line) => line.length > 0)
    .map((line) => {
      if (line.startsWith('c=')) return `c=IN ${family} ${host}`;
      if (line.startsWith('o=')) {
        const fields = line.split(' ');
        return fields.length >= 6 ? [...fields.slice(0, 3), 'IN', family, host].join(' ') : line;
      }
      if (line.startsWith('m=')) {
        const [kind, , ...rest] = line.slice(2).split(' ');
        const relayed = kind === 'audio' && !audioSeen;
        if (kind === 'audio') audioSeen = true;
        return `m=${kind} ${relayed ? port : 0} ${rest.join(' ')}`;
      }
      // ICE candidates would name the side's own addresses, which it must not reach directly.
      if (line.startsWith('a=candidate:') || line.startsWith('a=rtcp:')) return undefined;
      return line;
    })
    .filter((line): line is string => line !== undefined);
  return `${lines.join('\r\n')}\r\n`;
}

function sdpOf(
  host: string,
  port: number,
  codecs: G711[],
  telephoneEvent: number | undefined,
  direction: Direction,
): string {
  const session = randomInt(1, 2 ** 31);
  const family = isIP(host) === 6 ? 'IP6' : 'IP4';
  const types = codecs.map((codec) => PAYLOAD_TYPES[codec]);
  const lines = [
    'v=0',
    `o=- ${session} ${session} IN ${family} ${host}`,
    's=comms',
    `c=IN ${family} ${host}`,
    't=0 0',
    `m=audio ${port} RTP/AVP ${[...types, ...(telephoneEvent !== undefined ? [telephoneEvent] : [])].join(' ')}`,
    ...codecs.map((codec) => `a=rtpmap:${PAYLOAD_TYPES[codec]} ${codec}/8000`),
    ...(telephoneEvent !== undefined
      ? [`a=rtpmap:${telephoneEvent} telephone-event/8000`, `a=fmtp:${telephoneEvent} ${TELEPHONE_EVENTS}`]
      : []),
    `a=ptime:${PACKET_MS}`,
    `a=${direction}`,
  ];
  return `${lines.join('\r\n')}\r\n`;
}

/** An SDP's lines without their line ends and surrounding blanks; empty lines dropped. */
function sdpLines(sdp: string): string[] {
  return sdp
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
}

/** The media kind of an `m=` line (`audio`, `video`, …), undefined for any other line. */
function mediaKind(line: string): string | undefined {
  return line.startsWith('m=') ? line.slice(2).split(/\s+/, 1)[0] : undefined;
}

/** A format-specific attribute (`a=rtpmap:96 …`, `a=fmtp:96 …`): its payload type and the rest. */
function formatAttribute(line: string, prefix: string): { type: number; value: string } | undefined {
  if (!line.startsWith(prefix)) return undefined;
  const rest = line.slice(prefix.length);
  const space = rest.search(/\s/);
  const type = space === -1 ? rest : rest.slice(0, space);
  if (!/^\d{1,3}$/.test(type)) return undefined; // `a=rtcp-fb:*` applies to every format: kept.
  return { type: Number(type), value: space === -1 ? '' : rest.slice(space).trim() };
}

/** The first of `formats` whose rtpmap is `telephone-event/8000` (RFC 4733), if any. */
function telephoneEventOf(formats: number[], rtpmaps: Map<number, string>): number | undefined {
  return formats.find((type) => rtpmaps.get(type) === 'telephone-event/8000');
}
