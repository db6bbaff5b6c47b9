// The audio of calls: WAV files of 8 kHz, mono, 16-bit linear PCM, the sample rate of G.711 telephone audio
// (a G.711 codec encodes exactly these samples). The simulated PBX makes what its callers "say" here: speech
// synthesised by espeak-ng when it is installed, else a plainly synthetic tone, and it says which.
import { execFile } from 'node:child_process';
import g711 from 'alawmulaw';
import type { CallAudio } from './pbx.ts';

export const SAMPLE_RATE = 8000;
/** The longest a synthesised text may be; espeak-ng takes about a second per 15 characters. */
const MAX_TEXT = 2000;
/** The longest audio: ten minutes (9.6 MB), simulated or recorded from a caller. */
export const MAX_SECONDS = 600;
const ESPEAK_TIMEOUT_MS = 10_000;

export interface DecodedWav {
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  /** Interleaved when there are several channels. */
  samples: Int16Array;
}

/** A canonical 44-byte RIFF/WAVE header (PCM, mono, 8 kHz, 16 bits) followed by the samples. */
export function encodeWav(samples: Int16Array): Buffer {
  const dataBytes = samples.length * 2;
  const wav = Buffer.alloc(44 + dataBytes);
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + dataBytes, 4);
  wav.write('WAVE', 8, 'ascii');
  wav.write('fmt ', 12, 'ascii');
  wav.writeUInt32LE(16, 16); // fmt chunk size
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(SAMPLE_RATE, 24);
  wav.writeUInt32LE(SAMPLE_RATE * 2, 28); // byte rate
  wav.writeUInt16LE(2, 32); // block align
  wav.writeUInt16LE(16, 34); // bits per sample
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(dataBytes, 40);
  for (let i = 0; i < samples.length; i++) wav.writeInt16LE(samples[i]!, 44 + i * 2);
  return wav;
}

/** WAVE format codes we read (RFC 2361); WAVE_FORMAT_EXTENSIBLE names one of them in its sub-format. */
const WAVE_PCM = 1;
const WAVE_FLOAT = 3;
const WAVE_ALAW = 6;
const WAVE_MULAW = 7;
const WAVE_EXTENSIBLE = 0xfffe;

/**
 * Reads a WAV file into 16-bit samples, walking its chunks (unknown ones such as LIST are skipped): linear PCM
 * of 8, 16, 24 or 32 bits, 32-bit float, and G.711 A-law and µ-law, plain or as WAVE_FORMAT_EXTENSIBLE, what
 * audio editors and telephone systems write. A data chunk that claims more than the file holds is read to the
 * file's end: programs writing to a pipe (espeak-ng --stdout) cannot go back to fill the size in.
 */
export function decodeWav(bytes: Buffer): DecodedWav {
  if (
    bytes.length < 12 ||
    bytes.toString('ascii', 0, 4) !== 'RIFF' ||
    bytes.toString('ascii', 8, 12) !== 'WAVE'
  ) {
    throw new Error('Not a WAV file: no RIFF/WAVE header');
  }
  let format: (Omit<DecodedWav, 'samples'> & { code: number }) | undefined;
  let offset = 12;
  while (offset + 8 <= bytes.length) {
    const id = bytes.toString('ascii', offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > bytes.length) throw new Error('WAV fmt chunk is truncated');
      let code = bytes.readUInt16LE(body);
      if (code === WAVE_EXTENSIBLE) {
        if (size < 40 || body + 26 > bytes.length) throw new Error('WAV extensible fmt chunk is truncated');
        code = bytes.readUInt16LE(body + 24); // the sub-format GUID begins with the format code
      }
      format = {
        code,
        channels: bytes.readUInt16LE(body + 2),
        sampleRate: bytes.readUInt32LE(body + 4),
        bitsPerSample: bytes.readUInt16LE(body + 14),
      };
      const bits = format.bitsPerSample;
      const readable =
        (code === WAVE_PCM && [8, 16, 24, 32].includes(bits)) ||
        (code === WAVE_FLOAT && bits === 32) ||
        ((code === WAVE_ALAW || code === WAVE_MULAW) && bits === 8);
      if (!readable) {
        throw new Error(
          `WAV format ${code} with ${bits}-bit samples is not supported: use linear PCM (8, 16, 24 or 32-bit), 32-bit float, A-law or µ-law`,
        );
      }
      if (format.channels < 1 || format.sampleRate < 1) throw new Error('WAV fmt chunk is invalid');
    } else if (id === 'data') {
      if (!format) throw new Error('WAV data comes before its fmt chunk');
      const { code, ...shape } = format;
      const end = Math.min(bytes.length, body + size);
      return { ...shape, samples: wavSamples(bytes.subarray(body, end), code, shape.bitsPerSample) };
    }
    offset = body + size + (size % 2); // chunks are padded to an even length
  }
  throw new Error('WAV file is truncated: no data chunk');
}

/** The samples of a WAV data chunk as 16-bit linear PCM. */
function wavSamples(data: Buffer, code: number, bits: number): Int16Array {
  if (code === WAVE_ALAW) return g711.alaw.decode(data);
  if (code === WAVE_MULAW) return g711.mulaw.decode(data);
  const width = bits / 8;
  const samples = new Int16Array(Math.floor(data.length / width));
  for (let i = 0; i < samples.length; i++) {
    const at = i * width;
    if (code === WAVE_FLOAT) {
      samples[i] = Math.round(Math.max(-1, Math.min(1, data.readFloatLE(at))) * 32767);
    } else if (bits === 8) {
      samples[i] = (data[at]! - 128) << 8; // 8-bit WAV is unsigned
    } else {
      samples[i] = data.readIntLE(at + width - 2, 2); // the two most significant bytes
    }
  }
  return samples;
}

/** A decoded WAV as telephone audio: its channels mixed to one and resampled to 8 kHz. */
export function telephoneAudio(wav: DecodedWav): Int16Array {
  const { channels } = wav;
  let mono = wav.samples;
  if (channels > 1) {
    mono = new Int16Array(Math.floor(wav.samples.length / channels));
    for (let i = 0; i < mono.length; i++) {
      let sum = 0;
      for (let c = 0; c < channels; c++) sum += wav.samples[i * channels + c]!;
      mono[i] = Math.round(sum / channels);
    }
  }
  return resample(mono, wav.sampleRate, SAMPLE_RATE);
}

/** Audio parts one after the other. */
export function concatenate(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

export function silence(seconds: number): Int16Array {
  return new Int16Array(Math.round(seconds * SAMPLE_RATE));
}

export function tone(seconds: number, frequencyHz = 440): Int16Array {
  const samples = new Int16Array(Math.round(seconds * SAMPLE_RATE));
  for (let i = 0; i < samples.length; i++) {
    samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * frequencyHz * i) / SAMPLE_RATE));
  }
  return samples;
}

/**
 * Changes the sample rate. Going down, each output sample is the mean of the input samples it covers (a box
 * low-pass as wide as the ratio, so 22,050 → 8,000 does not fold the high frequencies back); going up, linear
 * interpolation.
 */
export function resample(samples: Int16Array, fromRate: number, toRate: number): Int16Array {
  if (fromRate === toRate) return samples.slice();
  const ratio = fromRate / toRate;
  const out = new Int16Array(Math.floor(samples.length / ratio));
  for (let i = 0; i < out.length; i++) {
    const position = i * ratio;
    if (ratio > 1) {
      const start = Math.floor(position);
      const end = Math.min(samples.length, Math.max(start + 1, Math.floor(position + ratio)));
      let sum = 0;
      for (let j = start; j < end; j++) sum += samples[j]!;
      out[i] = Math.round(sum / (end - start));
    } else {
      const left = Math.floor(position);
      const right = Math.min(samples.length - 1, left + 1);
      const fraction = position - left;
      out[i] = Math.round(samples[left]! * (1 - fraction) + samples[right]! * fraction);
    }
  }
  return out;
}

let espeakMissing = false;

/**
 * Speech for `text` at 8 kHz from espeak-ng in `voice` (an espeak-ng voice name, e.g. en-us, en-gb+f3, es);
 * undefined when it is not installed (looked for once).
 */
export async function synthesise(text: string, voice = 'en-us'): Promise<Int16Array | undefined> {
  if (espeakMissing) return undefined;
  const output = await new Promise<Buffer | undefined>((resolve, reject) => {
    execFile(
      'espeak-ng',
      ['--stdout', '-v', voice, '-s', '150', '--', text.slice(0, MAX_TEXT)],
      { encoding: 'buffer', timeout: ESPEAK_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout) => {
        if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
          espeakMissing = true;
          resolve(undefined);
        } else if (error) reject(new Error(`espeak-ng failed: ${error.message}`));
        else resolve(stdout);
      },
    );
  });
  if (!output) return undefined;
  return telephoneAudio(decodeWav(output));
}

/**
 * What a simulated caller says into a voicemail box or a recorded call lasting `seconds`: the speech of `text`
 * then silence (the whole speech when it is longer), or without words or espeak-ng a tone a second on and a
 * second off. `durationSeconds` is the WAV's real length, rounded up.
 */
export async function recordedAudio(options: {
  text?: string | null;
  seconds: number;
}): Promise<{ wav: Buffer; durationSeconds: number; voice: 'espeak-ng' | 'tone' }> {
  const seconds = Math.min(MAX_SECONDS, Math.max(1, Math.round(options.seconds)));
  const speech = options.text ? await synthesise(options.text) : undefined;
  let samples: Int16Array;
  if (speech) {
    samples = new Int16Array(Math.max(speech.length, seconds * SAMPLE_RATE));
    samples.set(speech);
  } else {
    samples = new Int16Array(seconds * SAMPLE_RATE);
    const beep = tone(1);
    for (let second = 0; second < seconds; second += 2) {
      samples.set(
        beep.subarray(0, Math.min(beep.length, samples.length - second * SAMPLE_RATE)),
        second * SAMPLE_RATE,
      );
    }
  }
  return {
    wav: encodeWav(samples),
    durationSeconds: Math.ceil(samples.length / SAMPLE_RATE),
    voice: speech ? 'espeak-ng' : 'tone',
  };
}

/**
 * A simulated conversation as one recording: each part in turn (text spoken by espeak-ng, else a tone as long
 * as its words take; a WAV as it is), with a short pause between turns.
 */
export async function conversationAudio(
  parts: (string | Buffer)[],
): Promise<{ wav: Buffer; durationSeconds: number; voice: 'espeak-ng' | 'tone' }> {
  let spoken = true;
  const pieces: Int16Array[] = [];
  for (const part of parts) {
    let samples: Int16Array | undefined;
    if (typeof part === 'string') {
      samples = await synthesise(part).catch(() => undefined);
      if (!samples) {
        spoken = false;
        samples = tone(Math.max(1, part.split(/\s+/).length / 2.5));
      }
    } else {
      try {
        samples = telephoneAudio(decodeWav(part));
      } catch {
        continue; // Audio nobody could hear is not in the recording either.
      }
    }
    pieces.push(samples, silence(0.3));
  }
  const samples = concatenate(...pieces).subarray(0, MAX_SECONDS * SAMPLE_RATE);
  return {
    wav: encodeWav(samples),
    durationSeconds: Math.max(1, Math.ceil(samples.length / SAMPLE_RATE)),
    voice: spoken ? 'espeak-ng' : 'tone',
  };
}

/** Two parts of one call's audio, one after the other (either may be missing); the first part's voice. */
export function joinAudio(first?: CallAudio, second?: CallAudio): CallAudio | undefined {
  if (!first || !second) return first ?? second;
  const a = decodeWav(first.wav).samples;
  const b = decodeWav(second.wav).samples;
  const samples = concatenate(a, b).subarray(0, MAX_SECONDS * SAMPLE_RATE * 2);
  return {
    wav: encodeWav(samples),
    durationSeconds: Math.max(1, Math.ceil(samples.length / SAMPLE_RATE)),
    voice: first.voice,
  };
}
