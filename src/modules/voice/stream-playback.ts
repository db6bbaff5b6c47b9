// The audio a media stream's app sends the caller (CallerLine.stream, pbx.ts), queued in the order it came and
// handed to the PBX one 20 ms frame at a time (the PBX asks for a frame each 20 ms: `next`), with the app's
// marks kept in their place in it. The same on both PBXs, so marks and clear mean one thing everywhere:
// - a mark is reported once the audio queued before it has been played: one frame after the frame that held
//   its last byte was taken (that frame has then had its 20 ms on the line);
// - clear drops everything queued; the next frame is silence, so playback stops within one frame; the marks
//   still waiting are reported at once, in order, as Twilio Media Streams does;
// - audio that does not fill a frame waits one frame for the rest (an app sending odd-sized chunks in real
//   time is not cut into audio and silence), then goes out padded with silence; audio followed by a mark is
//   the end of what the app said, and goes out at once.
// Limits: MAX_QUEUED_SECONDS of audio ahead of playback (more is dropped: a jitter buffer, not a file store)
// and MAX_PENDING_MARKS marks.
import { STREAM_FRAME_BYTES } from './pbx.ts';

/** Audio queued ahead of playback beyond this is dropped. */
export const MAX_QUEUED_SECONDS = 120;
/** Marks waiting for their audio beyond this are dropped. */
export const MAX_PENDING_MARKS = 1000;
const MAX_QUEUED_BYTES = MAX_QUEUED_SECONDS * 8000;
/** µ-law zero (silence). */
export const MULAW_SILENCE = 0xff;

type Queued = { kind: 'audio'; bytes: Uint8Array; offset: number } | { kind: 'mark'; name: string };

export class StreamPlayback {
  private queue: Queued[] = [];
  private queuedBytes = 0;
  private pendingMarks = 0;
  /** Marks whose audio ended inside the last frame taken: reported with the next frame. */
  private passed: string[] = [];
  /** The partial frame at the end of the queue has already waited one frame for the rest. */
  private partialWaited = false;

  constructor(
    private readonly events: {
      mark(name: string): void;
      played?(frame: Uint8Array): void;
      /** Audio or a mark was dropped at a limit (once per kind and stream, for the log). */
      dropped?(what: 'audio' | 'mark'): void;
    },
  ) {}

  /** Queues audio behind what is queued; false (dropped) past MAX_QUEUED_SECONDS. */
  play(mulaw: Uint8Array): boolean {
    if (mulaw.length === 0) return true;
    if (this.queuedBytes + mulaw.length > MAX_QUEUED_BYTES) {
      this.events.dropped?.('audio');
      return false;
    }
    this.queue.push({ kind: 'audio', bytes: Uint8Array.from(mulaw), offset: 0 });
    this.queuedBytes += mulaw.length;
    return true;
  }

  /** A mark behind the audio queued so far; false (dropped) past MAX_PENDING_MARKS. */
  mark(name: string): boolean {
    if (this.pendingMarks >= MAX_PENDING_MARKS) {
      this.events.dropped?.('mark');
      return false;
    }
    this.queue.push({ kind: 'mark', name });
    this.pendingMarks += 1;
    return true;
  }

  /** Drops the queued audio; the marks still waiting are reported now, in order. */
  clear(): void {
    const marks = [
      ...this.passed,
      ...this.queue.flatMap((item) => (item.kind === 'mark' ? [item.name] : [])),
    ];
    this.queue = [];
    this.queuedBytes = 0;
    this.pendingMarks = 0;
    this.passed = [];
    this.partialWaited = false;
    for (const name of marks) this.events.mark(name);
  }

  /** Audio queued, in bytes (8000 a second). */
  get queued(): number {
    return this.queuedBytes;
  }

  /**
   * The next 20 ms frame to play, or undefined when there is none (the PBX plays silence, or nothing). Marks
   * whose audio has been played by now are reported first.
   */
  next(): Uint8Array | undefined {
    const passed = this.passed;
    this.passed = [];
    for (const name of passed) this.reportMark(name);
    while (this.queue[0]?.kind === 'mark') this.reportMark((this.queue.shift() as { name: string }).name);
    if (this.queuedBytes === 0) return undefined;
    if (this.queuedBytes < STREAM_FRAME_BYTES && !this.queue.some((item) => item.kind === 'mark')) {
      if (!this.partialWaited) {
        this.partialWaited = true;
        return undefined;
      }
    }
    this.partialWaited = false;
    const frame = new Uint8Array(STREAM_FRAME_BYTES).fill(MULAW_SILENCE);
    let filled = 0;
    while (filled < STREAM_FRAME_BYTES && this.queuedBytes > 0) {
      const head = this.queue[0] as Queued;
      if (head.kind === 'mark') {
        this.passed.push(head.name);
        this.queue.shift();
        continue;
      }
      const take = Math.min(STREAM_FRAME_BYTES - filled, head.bytes.length - head.offset);
      frame.set(head.bytes.subarray(head.offset, head.offset + take), filled);
      head.offset += take;
      filled += take;
      this.queuedBytes -= take;
      if (head.offset === head.bytes.length) this.queue.shift();
    }
    this.events.played?.(frame);
    return frame;
  }

  private reportMark(name: string): void {
    this.pendingMarks -= 1;
    this.events.mark(name);
  }
}
