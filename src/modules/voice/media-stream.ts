// A media stream's WebSocket (a call flow's `stream` step, flow-stream.ts), speaking the messages of Twilio
// Media Streams in their bidirectional form (TwiML <Connect><Stream>), so that a voice bot written for Twilio
// connects unchanged. We send `connected`, `start`, `media` (the caller's audio, base64 8 kHz µ-law, as it
// arrives), `dtmf`, `mark` (when the audio the app sent before it has been played) and `stop`; every message
// but `connected` carries `sequenceNumber` (a string counting from "1") and `streamSid`. The app may send
// `media` (played to the caller in order, at real-time pace), `mark` and `clear`. The playback rules are
// stream-playback.ts's, the line's are line-steps.ts's.
// What the app sends goes through limits: a message is at most MAX_MESSAGE_BYTES (ws closes the socket with
// 1009 past it); binary frames, invalid JSON, unknown events, a `media` whose payload is not base64 and a
// `mark` without a name (or with one past MAX_MARK_NAME) are ignored, as Twilio ignores them; audio queued past
// two minutes ahead of playback is dropped. The caller's audio to a socket that does not keep up (more than
// MAX_BUFFERED_BYTES waiting to be sent) is dropped rather than kept without bound.
// Where the socket may go (the webhooks module's SSRF rules): stream-target.ts.
import type { FastifyBaseLogger } from 'fastify';
import type WebSocket from 'ws';
import type { CallerLine, LineResult, LineStreamControl } from './pbx.ts';

/** The longest message the app may send (about 98 s of audio in one `media`). */
export const MAX_MESSAGE_BYTES = 1024 * 1024;
/** A mark's name longer than this is ignored. */
export const MAX_MARK_NAME = 256;
/** Bytes waiting to go to the app past which the caller's audio is dropped. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
/** How long a closing handshake may take before the socket is dropped. */
const CLOSE_WAIT_MS = 2000;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export type StreamTrack = 'inbound' | 'outbound';

/** What `start` says of the stream. */
export interface MediaStreamStart {
  streamSid: string;
  callSid: string;
  accountSid: string;
  tracks: StreamTrack[];
  customParameters: Record<string, string>;
}

/** Why a stream ended: its app closed the socket, the caller (or the API) hung up, or the flow moved on. */
export type StreamStopReason = 'app_closed' | 'caller_hangup' | 'line_closed';

/**
 * The stream's life: `open` (connected, nothing sent yet), `streaming` (after `start`), then `closed` (the app
 * closed the socket, or it failed) or `stopped` (we sent `stop` and close it).
 */
export type MediaStreamState = 'open' | 'streaming' | 'closed' | 'stopped';
type MediaStreamEvent = 'start' | 'app_close' | 'stop';

const TRANSITIONS: Record<MediaStreamState, Partial<Record<MediaStreamEvent, MediaStreamState>>> = {
  open: { start: 'streaming', app_close: 'closed', stop: 'stopped' },
  streaming: { app_close: 'closed', stop: 'stopped' },
  closed: {},
  stopped: {},
};

/** One stream on one socket: runs it on the line until the app closes it or the caller goes. */
export class MediaStream {
  private state: MediaStreamState = 'open';
  private sequence = 0;
  private readonly chunks: Record<StreamTrack, number> = { inbound: 0, outbound: 0 };
  private startedAt = 0;
  private control?: LineStreamControl;
  /** What the app sent before the line's stream began: handed over when it does. */
  private early: unknown[] = [];
  private droppedAudio = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly start: MediaStreamStart,
    private readonly log: FastifyBaseLogger,
  ) {
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      let message: unknown;
      try {
        message = JSON.parse(data.toString());
      } catch {
        return;
      }
      if (this.control) this.take(message);
      else if (this.early.length < 100) this.early.push(message);
    });
    socket.on('close', () => this.appClosed());
    socket.on('error', (error) => {
      this.log.info({ err: error, streamSid: start.streamSid }, 'media stream socket failed');
      this.appClosed();
    });
  }

  get current(): MediaStreamState {
    return this.state;
  }

  /** Streams the line until the app closes the socket (`done`) or the caller hangs up (`hangup`). */
  async run(line: CallerLine): Promise<{ result: LineResult; reason: StreamStopReason }> {
    const outbound = this.start.tracks.includes('outbound');
    const result = await line.stream({
      started: (control) => {
        this.control = control;
        if (this.state !== 'open') return control.end();
        this.begin();
        for (const message of this.early.splice(0)) this.take(message);
      },
      audio: (mulaw) => this.media('inbound', mulaw),
      key: (digit) => this.send({ event: 'dtmf', dtmf: { track: 'inbound_track', digit } }),
      mark: (name) => this.send({ event: 'mark', mark: { name } }),
      played: outbound ? (frame) => this.media('outbound', frame) : undefined,
    });
    const reason: StreamStopReason =
      this.state === 'closed' ? 'app_closed' : result.kind === 'hangup' ? 'caller_hangup' : 'line_closed';
    this.stop();
    return { result, reason };
  }

  /** Sends `stop` and closes the socket (the caller went, or the flow moved on); nothing if the app closed it. */
  stop(): void {
    const started = this.state === 'streaming';
    if (!this.move('stop')) return;
    const { accountSid, callSid } = this.start;
    if (started) this.send({ event: 'stop', stop: { accountSid, callSid } }, true);
    this.socket.close(1000);
    const drop = setTimeout(() => this.socket.terminate(), CLOSE_WAIT_MS);
    drop.unref();
    this.socket.once('close', () => clearTimeout(drop));
  }

  private begin(): void {
    if (!this.move('start')) return;
    this.startedAt = performance.now();
    this.socket.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    const { streamSid, accountSid, callSid, tracks, customParameters } = this.start;
    this.send({
      event: 'start',
      start: {
        streamSid,
        accountSid,
        callSid,
        tracks,
        customParameters,
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    });
  }

  private appClosed(): void {
    if (!this.move('app_close')) return;
    this.control?.end();
  }

  /** A message of the app's: audio to play, a mark, a clear. Anything else is ignored. */
  private take(message: unknown): void {
    if (this.state !== 'streaming' || !message || typeof message !== 'object') return;
    const control = this.control!;
    const { event, media, mark } = message as { event?: unknown; media?: unknown; mark?: unknown };
    if (event === 'media') {
      const payload = (media as { payload?: unknown } | null)?.payload;
      if (typeof payload !== 'string' || payload.length % 4 !== 0 || !BASE64.test(payload)) return;
      control.play(Buffer.from(payload, 'base64'));
    } else if (event === 'mark') {
      const name = (mark as { name?: unknown } | null)?.name;
      if (typeof name === 'string' && name.length > 0 && name.length <= MAX_MARK_NAME) control.mark(name);
    } else if (event === 'clear') {
      control.clear();
    }
  }

  private media(track: StreamTrack, mulaw: Uint8Array): void {
    if (this.state !== 'streaming') return;
    if (this.socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      if (!this.droppedAudio) {
        this.droppedAudio = true;
        this.log.warn(
          { streamSid: this.start.streamSid },
          'media stream app is not keeping up: audio dropped',
        );
      }
      return;
    }
    this.chunks[track] += 1;
    this.send({
      event: 'media',
      media: {
        track,
        chunk: String(this.chunks[track]),
        timestamp: String(Math.round(performance.now() - this.startedAt)),
        payload: Buffer.from(mulaw.buffer, mulaw.byteOffset, mulaw.byteLength).toString('base64'),
      },
    });
  }

  /** A message with the stream's `sequenceNumber` and `streamSid`, while it streams (`stop`: as it stops). */
  private send(message: { event: string } & Record<string, unknown>, stopping = false): void {
    if (this.state !== 'streaming' && !stopping) return;
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.sequence += 1;
    const { event, ...rest } = message;
    this.socket.send(
      JSON.stringify({
        event,
        sequenceNumber: String(this.sequence),
        ...rest,
        streamSid: this.start.streamSid,
      }),
    );
  }

  private move(event: MediaStreamEvent): boolean {
    const next = TRANSITIONS[this.state][event];
    if (!next) {
      this.log.debug(
        { streamSid: this.start.streamSid, state: this.state, event },
        'media stream move refused',
      );
      return false;
    }
    this.state = next;
    return true;
  }
}
