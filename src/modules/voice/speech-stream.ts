// Recognition while the caller speaks (issue 34; docs/performance.md "Recognition while the caller speaks"): a
// SpeechStream takes a caller's 8 kHz audio frame by frame from the start of their utterance, and its end() is
// the transcript soon after the turn ends, because the recogniser has loaded its models and gone through the
// audio meanwhile. Pocketsphinx's `-infile` is read with fread in blocks, so given a pipe it decodes as the audio
// comes; Node's child stdin is a socket, which fopen("/dev/stdin") refuses, hence `cat` in front, through sh
// with the arguments passed as "$@" (never spliced into the command line).
import { spawn } from 'node:child_process';

export interface SpeechStream {
  /** More of the caller's audio (8 kHz, 16-bit mono), in order. */
  push(samples: Int16Array): void;
  /** The audio is over: the words heard, or undefined when the stream could not hear (the caller falls back). */
  end(): Promise<string | undefined>;
  /** Nobody wants the words (the utterance was dropped, the call ended). */
  abort(): void;
}

/** The most audio one stream takes (an utterance is at most 30 s; the rest is dropped). */
const MAX_SAMPLES = 8000 * 40;

/**
 * A stream whose recogniser is not ready yet (its engine looked up, its language model built): audio is kept
 * until it is, then passed on. `inner` resolving undefined (no engine that streams) makes end() undefined.
 */
export function deferredStream(inner: Promise<SpeechStream | undefined>): SpeechStream {
  let ready: SpeechStream | undefined;
  let kept: Int16Array[] = [];
  let keptSamples = 0;
  let aborted = false;
  // Settled: the audio goes to the stream, or (none) nowhere.
  let settledYet = false;
  const settled = inner.then(
    (stream) => {
      settledYet = true;
      if (aborted) {
        stream?.abort();
        return undefined;
      }
      for (const samples of kept) stream?.push(samples);
      kept = [];
      ready = stream;
      return stream;
    },
    () => {
      settledYet = true;
      kept = [];
      return undefined;
    },
  );
  return {
    push(samples) {
      if (aborted || (settledYet && !ready)) return;
      if (ready) ready.push(samples);
      else if (keptSamples + samples.length <= MAX_SAMPLES) {
        kept.push(samples);
        keptSamples += samples.length;
      }
    },
    async end() {
      const stream = await settled;
      return stream?.end();
    },
    abort() {
      aborted = true;
      kept = [];
      ready?.abort();
    },
  };
}

/**
 * pocketsphinx_continuous (`args`: its model and options, without -infile) on a pipe: the 8 kHz audio pushed is
 * upsampled to its 16 kHz by linear interpolation, carried across pushes (the same samples as resample() of the
 * whole utterance). Undefined words when it fails or outlives `timeoutMs` after the end.
 */
export function pocketsphinxStream(command: string, args: string[], timeoutMs: number): SpeechStream {
  const child = spawn('sh', ['-c', 'cat | exec "$0" "$@"', command, '-infile', '/dev/stdin', ...args], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let output = '';
  let failed = false;
  let pushed = 0;
  let previous: number | undefined;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (text: string) => {
    if (output.length < 64 * 1024) output += text;
  });
  child.stdin.on('error', () => {
    failed = true;
  });
  const exited = new Promise<number | null>((resolve) => {
    child.on('error', () => {
      failed = true;
      resolve(null);
    });
    child.on('close', (code) => resolve(code));
  });
  const write = (samples: number[]) => {
    const out = Int16Array.from(samples);
    child.stdin.write(Buffer.from(out.buffer, out.byteOffset, out.byteLength));
  };
  return {
    push(samples) {
      if (failed || child.stdin.writableEnded || pushed + samples.length > MAX_SAMPLES) return;
      pushed += samples.length;
      const out: number[] = [];
      for (const sample of samples) {
        if (previous !== undefined) out.push(previous, Math.round((previous + sample) / 2));
        previous = sample;
      }
      if (out.length > 0) write(out);
    },
    async end() {
      if (previous !== undefined && !failed && !child.stdin.writableEnded) write([previous, previous]);
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      if (failed || code !== 0) return undefined;
      return output
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '')
        .join(' ');
    },
    abort() {
      child.stdin.destroy();
      child.kill('SIGKILL');
    },
  };
}
