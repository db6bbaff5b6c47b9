// Makes src/modules/voice/telephone-band.mllr (and .feat.params, below): the MLLR transform that adapts pocketsphinx's 16 kHz US English
// acoustic model to telephone audio as our transcriber gives it (8 kHz G.711 µ-law, upsampled to 16 kHz by
// linear interpolation). docs/voice.md ("Hearing on the telephone") says why and what it measured.
//
// The adaptation speech is real people, not a synthesiser: the transcribed recordings of Debian's
// `pocketsphinx-testdata` (five LibriVox sentences, five spoken card names, "go forward ten meters"), each put
// through the band as a call's audio is: low-passed to 8 kHz as a phone's codec does, µ-law and back, then
// upsampled by the transcriber's own resample.
// One global transform (one regression class): 11 utterances are enough for it and far too few for more.
// Beside it, telephone-band.feat.params: the model's own feature parameters but for `-cmninit`, the mean cepstrum
// of that same speech, where pocketsphinx_continuous starts its live mean normalisation (the model's value is
// wideband speech's, and the model's feat.params overrides the command line, so it takes a file of its own).
//
// Needs the Debian packages pocketsphinx, pocketsphinx-en-us, pocketsphinx-testdata, sphinxtrain and
// sphinxbase-utils. Run: node --import tsx scripts/telephone-band-mllr.ts [output]
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import g711 from 'alawmulaw';
import { decodeWav, encodeWav, resample } from '../src/modules/voice/audio.ts';

const TESTDATA = '/usr/share/pocketsphinx/test/data';
const MODEL = '/usr/share/pocketsphinx/model/en-us';
const SPHINXTRAIN = '/usr/lib/sphinxtrain';
const output =
  process.argv[2] ?? new URL('../src/modules/voice/telephone-band.mllr', import.meta.url).pathname;

/** The recordings and what is said in them, from the package's own transcriptions. */
function recordings(): { id: string; samples: Int16Array; words: string }[] {
  const parse = (file: string, folder: string) =>
    readFileSync(join(TESTDATA, folder, file), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => {
        const [, words, id] = line.match(/^<s>\s*(.*?)\s*<\/s>\s*\((.+)\)$/)!;
        const audio = decodeWav(readFileSync(join(TESTDATA, folder, `${id}.wav`)));
        return { id: `${folder}-${id}`, samples: audio.samples, words: words! };
      });
  const raw = (file: string) => {
    const bytes = readFileSync(join(TESTDATA, file));
    return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length >> 1).slice();
  };
  return [
    ...parse('transcription', 'librivox'),
    ...parse('cards.transcription', 'cards'),
    { id: 'goforward', samples: raw('goforward.raw'), words: 'go forward ten meters' },
  ];
}

/** The zeroth-order modified Bessel function of the first kind (for the Kaiser window), by its series. */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  for (let k = 1; k < 50; k++) {
    term *= (x / (2 * k)) ** 2;
    sum += term;
  }
  return sum;
}

/**
 * 16 kHz to 8 kHz as a phone's codec does it: a low-pass at 4 kHz before every other sample is kept (a
 * 41-tap windowed sinc, Kaiser β 5: SciPy's resample_poly(x, 1, 2)). audio.ts's resample averages pairs of
 * samples instead, which lets the band above 4 kHz fold back into the speech: fine for test audio, but a
 * transform learnt on that folding adapts the model to it rather than to a phone line.
 */
function downToPhoneRate(samples: Int16Array): Int16Array {
  const half = 20;
  const taps = Array.from({ length: 2 * half + 1 }, (_, i) => {
    const n = i - half;
    const sinc = n === 0 ? 0.5 : Math.sin((Math.PI * n) / 2) / (Math.PI * n);
    return sinc * (besselI0(5 * Math.sqrt(1 - (n / half) ** 2)) / besselI0(5));
  });
  const gain = taps.reduce((sum, tap) => sum + tap, 0);
  const out = new Int16Array(Math.ceil(samples.length / 2));
  for (let i = 0; i < out.length; i++) {
    let sum = 0;
    for (let k = -half; k <= half; k++) {
      const j = 2 * i + k;
      if (j >= 0 && j < samples.length) sum += samples[j]! * taps[k + half]!;
    }
    out[i] = Math.max(-32768, Math.min(32767, Math.round(sum / gain)));
  }
  return out;
}

/** 16 kHz speech as the transcriber hears it after a phone call: 8 kHz µ-law, upsampled again. */
function overThePhone(samples16k: Int16Array): Buffer {
  const phone = g711.mulaw.decode(g711.mulaw.encode(downToPhoneRate(samples16k)));
  const wav = encodeWav(resample(phone, 8_000, 16_000));
  wav.writeUInt32LE(16_000, 24);
  wav.writeUInt32LE(32_000, 28);
  return wav;
}

/**
 * The model's mixture weights as sphinxtrain's `bw` reads them (an S3 float array), from the `sendump` the
 * Debian model ships instead (8-bit quantised -log weights, sphinxtrain's python/cmusphinx/sendump.py).
 */
function mixtureWeights(sendump: Buffer): Buffer {
  let at = 0;
  const word = () => {
    const n = sendump.readUInt32LE(at);
    at += 4;
    return n;
  };
  const text = () => {
    const n = word();
    const s = sendump.toString('latin1', at, at + n - 1);
    at += n;
    return n === 0 ? undefined : s;
  };
  const header = new Map<string, number>();
  text(); // the title
  for (let line = text(); line !== undefined; line = text()) {
    const [key, value] = line.split(/\s+/);
    if (key && /^\d+$/.test(value ?? '')) header.set(key, Number(value));
  }
  if (header.get('cluster_count')) throw new Error('clustered sendump: not supported');
  const features = header.get('feature_count')!;
  const shift = header.get('mixw_shift') ?? 10;
  const densities = word();
  const senones = word();
  const weights = new Float32Array(senones * features * densities);
  for (let f = 0; f < features; f++) {
    for (let d = 0; d < densities; d++) {
      for (let s = 0; s < senones; s++) {
        weights[(s * features + f) * densities + d] = 1.0001 ** -(sendump[at++]! << shift);
      }
    }
  }
  let head = 's3\nversion 1.0\n';
  head += `${' '.repeat((4 - ((head.length + 7) & 3)) & 3)}endhdr\n`;
  const dims = Buffer.alloc(20);
  dims.writeUInt32LE(0x11223344, 0);
  for (const [i, n] of [senones, features, densities, weights.length].entries())
    dims.writeUInt32LE(n, 4 + 4 * i);
  return Buffer.concat([Buffer.from(head, 'latin1'), dims, Buffer.from(weights.buffer)]);
}

/**
 * The mean of the 13 cepstra over every frame of `files` (sphinx_fe's output: a count of floats, then the
 * floats, in either byte order): where a live cepstral mean normalisation should start on telephone audio.
 */
function cepstralMean(files: string[]): string {
  const sum = new Float64Array(13);
  let frames = 0;
  for (const file of files) {
    const bytes = readFileSync(file);
    const little = bytes.readInt32LE(0) * 4 + 4 === bytes.length;
    for (let at = 4; at + 52 <= bytes.length; at += 52, frames++) {
      for (let c = 0; c < 13; c++)
        sum[c]! += little ? bytes.readFloatLE(at + 4 * c) : bytes.readFloatBE(at + 4 * c);
    }
  }
  return [...sum].map((total) => (total / frames).toFixed(2)).join(',');
}

const work = mkdtempSync(join(tmpdir(), 'telephone-band-mllr-'));
try {
  const hmm = join(work, 'en-us');
  execFileSync('cp', ['-r', join(MODEL, 'en-us'), hmm]);
  writeFileSync(join(hmm, 'mixture_weights'), mixtureWeights(readFileSync(join(hmm, 'sendump'))));
  execFileSync('pocketsphinx_mdef_convert', ['-text', join(hmm, 'mdef'), join(hmm, 'mdef.txt')], {
    stdio: 'ignore',
  });
  mkdirSync(join(work, 'wav'));
  const said = recordings();
  for (const { id, samples } of said) writeFileSync(join(work, 'wav', `${id}.wav`), overThePhone(samples));
  writeFileSync(join(work, 'fileids'), `${said.map(({ id }) => id).join('\n')}\n`);
  writeFileSync(
    join(work, 'transcription'),
    `${said.map(({ id, words }) => `<s> ${words} </s> (${id})`).join('\n')}\n`,
  );
  const run = (command: string, args: string[]) =>
    execFileSync(command, args, { cwd: work, stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 64 << 20 });
  mkdirSync(join(work, 'mfc'));
  // The features the transcriber uses (transcribers.ts TELEPHONE_FEATURES) on top of the model's own.
  run('sphinx_fe', [
    ...['-argfile', join(hmm, 'feat.params'), '-samprate', '16000', '-mswav', 'yes'],
    ...['-dither', 'yes', '-seed', '1', '-remove_noise', 'no'],
    ...['-c', 'fileids', '-di', 'wav', '-ei', 'wav', '-do', 'mfc', '-eo', 'mfc'],
  ]);
  mkdirSync(join(work, 'counts'));
  run(join(SPHINXTRAIN, 'bw'), [
    ...['-hmmdir', hmm, '-moddeffn', join(hmm, 'mdef.txt'), '-ts2cbfn', '.ptm.'],
    ...['-feat', '1s_c_d_dd', '-svspec', '0-12/13-25/26-38', '-cmn', 'batch', '-agc', 'none'],
    ...['-dictfn', join(MODEL, 'cmudict-en-us.dict'), '-ctlfn', 'fileids', '-lsnfn', 'transcription'],
    ...['-cepdir', 'mfc', '-accumdir', 'counts'],
  ]);
  run(join(SPHINXTRAIN, 'mllr_solve'), [
    ...['-meanfn', join(hmm, 'means'), '-varfn', join(hmm, 'variances')],
    ...['-outmllrfn', output, '-accumdir', 'counts'],
  ]);
  const mean = cepstralMean(said.map(({ id }) => join(work, 'mfc', `${id}.mfc`)));
  const features = readFileSync(join(hmm, 'feat.params'), 'utf8').replace(
    /^-cmninit .*$/m,
    `-cmninit ${mean}`,
  );
  writeFileSync(`${output.replace(/\.mllr$/, '')}.feat.params`, features);
  console.log(`wrote ${output} and its .feat.params from ${said.length} utterances (cepstral mean ${mean})`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
