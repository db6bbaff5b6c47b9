// Recognition while the caller speaks (voice/speech-stream.ts): pocketsphinx fed through a pipe, frame by frame as
// RTP brings the audio, hears the same words as the whole utterance transcribed at once (the same samples: the
// 2x upsampling is carried across frames), and most of its work is done before the audio ends (measured and
// reported, not asserted). A stream whose recogniser is not ready keeps the audio until it is.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import { encodeWav, synthesise } from '../src/modules/voice/audio.ts';
import { deferredStream, type SpeechStream } from '../src/modules/voice/speech-stream.ts';
import { PocketsphinxTranscriber } from '../src/modules/voice/transcribers.ts';

const installed =
  spawnSync('pocketsphinx_continuous', ['-h']).error === undefined &&
  spawnSync('espeak-ng', ['--version']).error === undefined;

describe('recognition while the caller speaks', () => {
  test('streamed in 20 ms frames, pocketsphinx hears what the whole utterance gives', {
    skip: !installed && 'pocketsphinx or espeak-ng not installed',
  }, async (context) => {
    const engine = new PocketsphinxTranscriber();
    assert.ok(await PocketsphinxTranscriber.available());
    const speech = g711.mulaw.decode(
      g711.mulaw.encode((await synthesise('What time do you close on Friday?'))!),
    );
    const whole = await engine.transcribe(encodeWav(speech));
    assert.ok(whole.length > 0, 'the whole utterance is heard');

    const stream = engine.stream();
    for (let at = 0; at < speech.length; at += 160) {
      stream.push(speech.subarray(at, at + 160));
      await sleep(20);
    }
    const ended = performance.now();
    const streamed = await stream.end();
    context.diagnostic(
      `streamed: "${streamed}" ${(performance.now() - ended).toFixed(0)} ms after the audio ended; whole: "${whole}"`,
    );
    assert.equal(streamed, whole);
  });

  test('a stream not ready yet keeps the audio and passes it on; with no recogniser its words are undefined', async () => {
    const got: number[] = [];
    let release!: (stream: SpeechStream) => void;
    const inner = new Promise<SpeechStream>((resolve) => {
      release = resolve;
    });
    const deferred = deferredStream(inner);
    deferred.push(Int16Array.of(1, 2));
    deferred.push(Int16Array.of(3));
    release({
      push: (samples) => got.push(...samples),
      end: async () => `heard ${got.join(',')}`,
      abort: () => {},
    });
    await sleep(0);
    deferred.push(Int16Array.of(4));
    assert.equal(await deferred.end(), 'heard 1,2,3,4');

    const none = deferredStream(Promise.resolve(undefined));
    none.push(Int16Array.of(1));
    assert.equal(await none.end(), undefined);

    let aborted = false;
    const late = deferredStream(
      sleep(10).then(() => ({ push: () => {}, end: async () => 'x', abort: () => (aborted = true) })),
    );
    late.abort();
    assert.equal(await late.end(), undefined);
    assert.ok(aborted, 'a stream that comes after its abort is aborted too');
  });
});
