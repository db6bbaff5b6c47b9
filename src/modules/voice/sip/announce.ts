// A warm transfer's summary, spoken to the person who answered before the caller is put through (issue 34):
// the call's relay already has the person's leg (their SDP says where they receive), and the caller is still
// on the agent's own media. We synthesise the summary and send it as G.711 RTP from the relay's socket of the
// person's side (where their phone already sends, so symmetric RTP and NAT hold), at real-time pace, with our
// own source (SSRC) and sequence. Meanwhile nothing the person says is passed on to the caller.
import { randomBytes, randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import { synthesise, tone } from '../audio.ts';
import { PACKET_MS, PAYLOAD_TYPES, parseOffer } from './sdp.ts';
import type { SipCall } from './sip-call.ts';

const SAMPLES_PER_PACKET = 160;
/** Without espeak-ng the person hears a tone as long as the words would take (about 2.5 words a second). */
const WORDS_PER_SECOND = 2.5;

/** Speaks `text` to the callee side of the call's relay; resolves when said (or the call's media closed). */
export async function announceToCallee(sipCall: SipCall, text: string, voice?: string): Promise<void> {
  const relay = sipCall.relay;
  const offer = parseOffer(sipCall.remoteSdp.callee);
  if (!relay || !offer) return;
  const speech =
    (await synthesise(text, voice)
      .catch(() => synthesise(text))
      .catch(() => undefined)) ?? tone(Math.max(1, text.split(/\s+/).length / WORDS_PER_SECOND));
  const encode = offer.codec === 'PCMU' ? g711.mulaw.encode : g711.alaw.encode;
  const ssrc = randomBytes(4).readUInt32BE(0);
  let sequence = randomInt(0, 65536);
  let timestamp = randomInt(0, 2 ** 31);
  relay.held = 'callee';
  try {
    const started = performance.now();
    for (let offset = 0, index = 0; offset < speech.length; offset += SAMPLES_PER_PACKET, index++) {
      const frame = new Int16Array(SAMPLES_PER_PACKET);
      frame.set(speech.subarray(offset, offset + SAMPLES_PER_PACKET));
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header[1] = (index === 0 ? 0x80 : 0) | PAYLOAD_TYPES[offer.codec];
      header.writeUInt16BE(sequence, 2);
      header.writeUInt32BE(timestamp >>> 0, 4);
      header.writeUInt32BE(ssrc, 8);
      sequence = (sequence + 1) & 0xffff;
      timestamp = (timestamp + SAMPLES_PER_PACKET) >>> 0;
      if (!relay.sendTo('callee', Buffer.concat([header, Buffer.from(encode(frame))]))) return;
      const wait = started + (index + 1) * PACKET_MS - performance.now();
      if (wait > 0) await sleep(wait);
    }
  } finally {
    if (relay.held === 'callee') relay.held = undefined;
  }
}
