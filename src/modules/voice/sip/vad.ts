// Voice activity detection: the WebRTC VAD (libfvad, compiled to WebAssembly by @echogarden/fvad-wasm), the
// detector most real-time voice stacks use. It tells speech from noise by the spectrum of each frame, not by
// loudness, so a fan or a line's hiss is not a voice and a quiet speaker is. One WebAssembly instance serves the
// process (loaded once, when this module is imported); each call's audio has its own detector state (a handle,
// freed when the call is done with it). The VAD holds "speech" a few frames after a voice stops (its
// hangover); a frame near digital silence is not a voice whatever it says, so a turn's end is seen when the
// caller stops, not 100-odd ms later.
import Module from '@echogarden/fvad-wasm';
import { SAMPLE_RATE } from '../audio.ts';

/** A VAD frame: 20 ms at 8 kHz (libfvad takes 10, 20 or 30 ms). */
export const VAD_FRAME = SAMPLE_RATE / 50;
/** RMS (16-bit samples) under which a frame is quiet whatever the VAD says: about -60 dBFS. */
const QUIET_RMS = 30;

interface FvadModule {
  _fvad_new(): number;
  _fvad_free(handle: number): void;
  _fvad_set_sample_rate(handle: number, rate: number): number;
  _fvad_set_mode(handle: number, mode: number): number;
  _fvad_process(handle: number, frame: number, length: number): number;
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  HEAP16: Int16Array;
}

const fvad = (await Module()) as FvadModule;

/**
 * Aggressiveness, 0 (a voice is rarely missed) to 3 (noise is rarely taken for a voice). 2 suits phone lines:
 * espeak-ng's and people's speech over G.711 is all voiced, line noise is not.
 */
export type VadMode = 0 | 1 | 2 | 3;

export class VoiceActivityDetector {
  private handle: number;
  private readonly frame: number;

  constructor(mode: VadMode = 2) {
    this.handle = fvad._fvad_new();
    if (!this.handle) throw new Error('the voice activity detector could not be created');
    fvad._fvad_set_sample_rate(this.handle, SAMPLE_RATE);
    fvad._fvad_set_mode(this.handle, mode);
    this.frame = fvad._malloc(VAD_FRAME * 2);
  }

  /** Whether a frame of VAD_FRAME samples holds a voice (none, once closed: audio arriving after the end). */
  voiced(frame: Int16Array): boolean {
    if (!this.handle) return false;
    fvad.HEAP16.set(frame.subarray(0, VAD_FRAME), this.frame >> 1);
    const voice = fvad._fvad_process(this.handle, this.frame, VAD_FRAME) === 1;
    return voice && rms(frame) >= QUIET_RMS;
  }

  /** Lets the detector's memory go (a call's end). Idempotent. */
  close(): void {
    if (!this.handle) return;
    fvad._fvad_free(this.handle);
    fvad._free(this.frame);
    this.handle = 0;
  }
}

export function rms(frame: Int16Array): number {
  let sum = 0;
  for (const sample of frame) sum += sample * sample;
  return Math.sqrt(sum / frame.length);
}
