// A call flow's line on a SIP call (CallerLine, pbx.ts): the caller answered with our own media (an RTP
// session in the G.711 law they offered: SipPbx.answerWithOwnMedia), `say` synthesised by espeak-ng (a tone
// as long as the words when it is missing) and `play` and `pause` (silence) sent at real-time pace. Keys come
// two ways and both count, each key once: RFC 4733 telephone-events in the RTP (the session reports each
// event once, however many times its end packet is repeated) and SIP INFO `application/dtmf-relay` in the
// caller's dialog (dialog-requests.ts; phones and trunks that send keys out of band). In-band tones are not
// detected. The rules of steps and keys (type-ahead, barge-in, timeouts) are line-steps.ts's, shared with the
// simulated PBX.
import type { Clock } from '../../../platform/clock.ts';
import { silence, synthesise, tone } from '../audio.ts';
import { clockTime, type LineMedia, LineSteps } from '../line-steps.ts';
import type { RtpSession } from './rtp.ts';
import type { SipCall } from './sip-call.ts';

/** Without espeak-ng the caller hears a tone as long as the words would take (about 2.5 words a second). */
const WORDS_PER_SECOND = 2.5;

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
  },
): LineSteps {
  const held = sipCall && deps.lines.get(sipCall);
  if (held) return held;
  const onBye: SipCall['onBye'] = (from) => {
    if (from !== 'caller' && sipCall) deps.hangUpCaller(sipCall);
    line.hungUp(from === 'api' ? 'hangup_requested' : 'normal_clearing');
  };
  const onCancel = (cause: string) => line.hungUp(cause);
  const line = rtpCallerLine({
    open: () => (sipCall ? deps.open(sipCall) : Promise.reject(new Error('The call has ended'))),
    clock: deps.clock,
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
}): LineSteps {
  let session: Promise<RtpSession> | undefined;
  const media = () => {
    session ??= deps.open().then((opened) => {
      opened.onDtmf = (key) => line.press(key);
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
    close: async () => {
      deps.onClose();
      const opened = await session?.catch(() => undefined);
      opened?.close();
    },
  };
  const line = new LineSteps(sound, clockTime(deps.clock));
  return line;
}
