// A call flow's line on a SIP call (CallerLine, pbx.ts): the caller answered with our own media (an RTP
// session in the G.711 law they offered: SipPbx.answerWithOwnMedia), `say` synthesised by espeak-ng (a tone
// as long as the words when it is missing) and `play` and `pause` (silence) sent at real-time pace. Keys come
// two ways and both count, each key once: RFC 4733 telephone-events in the RTP (the session reports each
// event once, however many times its end packet is repeated) and SIP INFO `application/dtmf-relay` in the
// caller's dialog (dialog-requests.ts; phones and trunks that send keys out of band). In-band tones are not
// detected. A media stream's frames (`stream`) go out one each 20 ms at real-time pace, silence while its app
// has nothing queued (the caller's phone keeps hearing a stream, a NAT keeps its binding), and the caller's
// RTP payload goes to it as it arrives (PCMU byte for byte, PCMA transcoded: RtpSession.onMulaw).
// A record step keeps the caller's RTP audio, placed by timestamp (a lost packet leaves silence). A
// speech gather cuts the caller's audio into utterances as an AI agent's line does (utterances.ts) and hands
// each to the server's transcriber (transcribers.ts: the configured service, else pocketsphinx). The rules of
// steps and keys (type-ahead, barge-in, timeouts) are line-steps.ts's, shared with the simulated PBX.

import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../../platform/clock.ts';
import { encodeWav, MAX_SECONDS, SAMPLE_RATE, silence, synthesise, tone } from '../audio.ts';
import { clockTime, type LineMedia, type StreamIo } from '../line-media.ts';
import { LineSteps } from '../line-steps.ts';
import { STREAM_FRAME_BYTES } from '../pbx.ts';
import { MULAW_SILENCE } from '../stream-playback.ts';
import { type RtpSession, rtpAudio } from './rtp.ts';
import type { SipCall } from './sip-call.ts';
import { UtteranceDetector } from './utterances.ts';

/** How long a phone may send nothing before what the caller was saying counts as said. */
const SILENT_PHONE_MS = 800;

/** Without espeak-ng the caller hears a tone as long as the words would take (about 2.5 words a second). */
const WORDS_PER_SECOND = 2.5;
/** A stream's frame time (20 ms: STREAM_FRAME_BYTES at 8 kHz). */
const FRAME_MS = 20;
/** A stream this far behind its schedule starts it again. */
const MAX_LATE_MS = 100;
const SILENT_FRAME = new Uint8Array(STREAM_FRAME_BYTES).fill(MULAW_SILENCE);

/**
 * The line of `sipCall` (SipPbx.callerLine): the one still held (open, or hung up: its steps then end at once),
 * else a new one, which the call's BYEs (the caller's, the API's hang-up) and a CANCEL before the answer reach
 * until it is closed. One opened after a close re-INVITEs the caller to new media (answerWithOwnMedia).
 */
export function callerLineOf(
  sipCall: SipCall | undefined,
  deps: {
    /** The PBX's open lines by call: a caller's SIP INFO keys are looked up there. */
    lines: WeakMap<SipCall, LineSteps>;
    open: (sipCall: SipCall) => Promise<RtpSession>;
    hangUpCaller: (sipCall: SipCall) => void;
    clock: Clock;
    /** The words in a WAV (the server's transcriber); undefined without one. */
    speechToText?: (wav: Buffer) => Promise<string | undefined>;
    log?: FastifyBaseLogger;
  },
): LineSteps {
  const held = sipCall && deps.lines.get(sipCall);
  if (held) return held;
  const onBye: SipCall['onBye'] = (from, cause) => {
    if (from !== 'caller' && sipCall) deps.hangUpCaller(sipCall);
    line.hungUp(from === 'api' ? (cause ?? 'hangup_requested') : 'normal_clearing');
  };
  const onCancel = (cause: string) => line.hungUp(cause);
  const line = rtpCallerLine({
    open: () => (sipCall ? deps.open(sipCall) : Promise.reject(new Error('The call has ended'))),
    clock: deps.clock,
    speechToText: deps.speechToText,
    log: deps.log,
    // The line's end hands the call's BYEs to whatever step comes next (a dial's ring, converse).
    onClose: () => {
      if (!sipCall) return;
      if (sipCall.onBye === onBye) sipCall.onBye = undefined;
      if (sipCall.onCancel === onCancel) sipCall.onCancel = undefined;
      deps.lines.delete(sipCall);
    },
  });
  if (!sipCall) {
    line.hungUp('normal_clearing');
    return line;
  }
  deps.lines.set(sipCall, line);
  sipCall.onBye = onBye;
  sipCall.onCancel = onCancel;
  return line;
}

/**
 * `open` answers the caller with our media (once; a line opened again after a close re-INVITEs them to a new
 * session); `onClose` hands the call's BYEs to whatever step comes next (a dial's ring, converse).
 */
export function rtpCallerLine(deps: {
  open: () => Promise<RtpSession>;
  clock: Clock;
  onClose: () => void;
  speechToText?: (wav: Buffer) => Promise<string | undefined>;
  log?: FastifyBaseLogger;
}): LineSteps {
  let session: Promise<RtpSession> | undefined;
  /** Where the caller's audio goes now: a record step, a speech gather, or nowhere. */
  let hearing: ((samples: Int16Array, timestamp: number) => void) | undefined;
  const media = () => {
    session ??= deps.open().then((opened) => {
      opened.onDtmf = (key) => line.press(key);
      opened.onAudio = (samples, timestamp) => hearing?.(samples, timestamp);
      return opened;
    });
    return session;
  };
  const sound: LineMedia = {
    answer: async () => {
      await media();
    },
    say: async (text, options, signal) => {
      // A voice this espeak-ng does not have is spoken in its default voice rather than not at all; a
      // language (en-US) names espeak-ng's voice of it (en-us).
      const voice = options.voice ?? options.language?.toLowerCase();
      const speech =
        (await synthesise(text, voice)
          .catch(() => synthesise(text))
          .catch(() => undefined)) ?? tone(Math.max(1, text.split(/\s+/).length / WORDS_PER_SECOND));
      if (signal.aborted) return;
      await (await media()).play(speech, () => signal.aborted);
    },
    play: async (audio, loop, signal) => {
      const rtp = await media();
      for (let round = 0; round < loop && !signal.aborted; round++)
        await rtp.play(audio, () => signal.aborted);
    },
    // Silence is sent, not nothing: the caller's phone keeps hearing a stream (and a NAT keeps its binding).
    pause: async (seconds, signal) => {
      await (await media()).play(silence(seconds), () => signal.aborted);
    },
    stream: async (io, signal) => {
      const rtp = await media();
      rtp.onMulaw = (payload) => io.heard(payload);
      try {
        await paceFrames(io, signal, (frame) => rtp.sendMulaw(frame));
      } finally {
        rtp.onMulaw = undefined;
      }
    },
    record: async (signal) => {
      await media();
      const kept = new TimelineAudio(MAX_SECONDS * SAMPLE_RATE);
      const sink = (samples: Int16Array, timestamp: number) => kept.add(samples, timestamp);
      hearing = sink;
      if (!signal.aborted)
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      if (hearing === sink) hearing = undefined;
      return rtpAudio(kept.samples());
    },
    listen: (hooks) =>
      listenForSpeech(
        hooks,
        (sink) => (hearing = sink),
        () => hearing,
        deps,
      ),
    close: async () => {
      hearing = undefined;
      deps.onClose();
      const opened = await session?.catch(() => undefined);
      opened?.close();
    },
  };
  const line = new LineSteps(sound, clockTime(deps.clock));
  return line;
}

/**
 * Sends `io.next()` (silence when nothing is queued) each 20 ms, on a schedule from the start rather than from
 * each send (a late timer does not slow the stream down: the next frame is due sooner), until `signal` aborts.
 */
async function paceFrames(io: StreamIo, signal: AbortSignal, send: (frame: Uint8Array) => void) {
  let due = performance.now();
  while (!signal.aborted) {
    send(io.next() ?? SILENT_FRAME);
    due += FRAME_MS;
    const wait = due - performance.now();
    // Far behind (the process stalled): start the schedule again rather than send the missed frames in a burst.
    if (wait < -MAX_LATE_MS) due = performance.now();
    if (wait > 0) await sleep(wait, undefined, { signal }).catch(() => undefined);
    // Behind: the next frame goes at once, but after what has arrived meanwhile (a `clear` holds at once).
    else await nextTurn();
  }
}

/**
 * A speech gather's ears: the caller's audio cut into utterances (a phone that stops sending packets in silence
 * ends one after SILENT_PHONE_MS), each transcribed in turn; `heard` gets '' for one nothing was recognised in
 * (or with no transcriber). Returns the stop.
 */
function listenForSpeech(
  hooks: { started(): void; heard(text: string): void },
  setSink: (sink: ((samples: Int16Array, timestamp: number) => void) | undefined) => void,
  currentSink: () => unknown,
  deps: { speechToText?: (wav: Buffer) => Promise<string | undefined>; log?: FastifyBaseLogger },
): () => void {
  const detector = new UtteranceDetector();
  let active = true;
  let silentPhone: NodeJS.Timeout | undefined;
  let transcribing: Promise<void> = Promise.resolve();
  const utterance = (samples: Int16Array) => {
    transcribing = transcribing.then(async () => {
      if (!active) return;
      let text = '';
      try {
        const said = await deps.speechToText?.(encodeWav(samples));
        if (said === undefined)
          deps.log?.warn('a speech gather heard words, but the server has no transcriber');
        text = said ?? '';
      } catch (error) {
        deps.log?.warn({ err: error }, 'a speech gather could not transcribe what the caller said');
      }
      if (active) hooks.heard(text);
    });
  };
  const sink = (samples: Int16Array) => {
    const before = detector.hearing;
    for (const done of detector.push(samples)) utterance(done.audio);
    if (!before && detector.hearing) hooks.started();
    clearTimeout(silentPhone);
    if (detector.hearing) {
      silentPhone = setTimeout(() => {
        const done = detector.quiet(SILENT_PHONE_MS);
        if (done) utterance(done.audio);
      }, SILENT_PHONE_MS);
      silentPhone.unref();
    }
  };
  setSink(sink);
  return () => {
    active = false;
    clearTimeout(silentPhone);
    detector.close();
    if (currentSink() === sink) setSink(undefined);
  };
}

/**
 * A record step's audio: each packet placed by its RTP timestamp from the first one (lost packets leave
 * silence, reordered ones land where they belong), at most `limit` samples.
 */
class TimelineAudio {
  private readonly buffer: Int16Array;
  private first?: number;
  private end = 0;

  constructor(limit: number) {
    this.buffer = new Int16Array(limit);
  }

  add(samples: Int16Array, timestamp: number): void {
    this.first ??= timestamp;
    const offset = (timestamp - this.first) >>> 0;
    if (offset >= this.buffer.length) return;
    const fits = samples.subarray(0, this.buffer.length - offset);
    this.buffer.set(fits, offset);
    this.end = Math.max(this.end, offset + fits.length);
  }

  samples(): Int16Array {
    return this.buffer.slice(0, this.end);
  }
}
