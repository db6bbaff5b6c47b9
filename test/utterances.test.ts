// Where a caller's utterance begins and ends (utterances.ts, with the WebRTC VAD of vad.ts), and when a turn
// counts as ended (end-of-turn.ts). Audio is fed as 20 ms packets, as RTP brings it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import g711 from 'alawmulaw';
import { concatenate, silence, synthesise, tone } from '../src/modules/voice/audio.ts';
import {
  COMPLETE_TURN_MS,
  endOfTurnSilenceMs,
  UNSURE_TURN_MS,
} from '../src/modules/voice/sip/end-of-turn.ts';
import { type Utterance, UtteranceDetector } from '../src/modules/voice/sip/utterances.ts';
import { VoiceActivityDetector } from '../src/modules/voice/sip/vad.ts';

const feed = (detector: UtteranceDetector, samples: Int16Array) => {
  const done: Utterance[] = [];
  for (let at = 0; at < samples.length; at += 160)
    done.push(...detector.push(samples.subarray(at, at + 160)));
  return done;
};

/** Whether `haystack` holds `needle` sample for sample. */
function contains(haystack: Int16Array, needle: Int16Array): boolean {
  outer: for (let at = 0; at + needle.length <= haystack.length; at++) {
    for (let i = 0; i < needle.length; i++) if (haystack[at + i] !== needle[i]) continue outer;
    return true;
  }
  return false;
}

describe('where a caller’s utterance begins and ends', () => {
  test('the WebRTC VAD hears espeak-ng’s words over G.711 and not the silence between sentences', async () => {
    const speech = await synthesise('Are you open on Saturdays? We are closed on Sundays.');
    if (!speech) return; // espeak-ng not installed: the tone tests below still run.
    const vad = new VoiceActivityDetector();
    const heard = g711.mulaw.decode(g711.mulaw.encode(concatenate(silence(0.5), speech, silence(0.5))));
    const frames: boolean[] = [];
    for (let at = 0; at + 160 <= heard.length; at += 160)
      frames.push(vad.voiced(heard.subarray(at, at + 160)));
    vad.close();
    assert.equal(frames.slice(0, 25).some(Boolean), false, 'the silence before is not a voice');
    assert.equal(frames.slice(-25).some(Boolean), false, 'nor the silence after');
    const voiced = frames.filter(Boolean).length;
    assert.ok(voiced > (speech.length / 160) * 0.7, `most of the speech is voiced (${voiced} frames)`);
    assert.ok(frames.slice(25, -25).includes(false), 'the pause between the sentences is not');
  });

  test('speech then quiet is one utterance, with the audio just before it; a pause between words is not an end', () => {
    const detector = new UtteranceDetector();
    const words = concatenate(tone(0.6), silence(0.3), tone(0.6));
    const [utterance, ...more] = feed(detector, concatenate(silence(1), words, silence(1)));
    assert.deepEqual(more, []);
    assert.ok(utterance, 'an utterance was heard');
    assert.ok(contains(utterance.audio, words), 'both words, and the pause between them');
    // 300 ms before it and 200 ms of the quiet that ended it (the rest of that quiet is not kept).
    assert.equal(utterance.audio.length, words.length + 0.3 * 8000 + 0.2 * 8000);
    assert.equal(utterance.quietMs, COMPLETE_TURN_MS);
    assert.equal(utterance.speechMs, 1200);
    assert.equal(detector.hearing, false);
    detector.close();
  });

  test('a short burst (a filler, a first group of digits) waits longer for more; with words, the words decide', () => {
    const detector = new UtteranceDetector();
    // "Um" (300 ms), 700 ms of thinking, then the question: one utterance.
    const [one, ...more] = feed(detector, concatenate(tone(0.3), silence(0.7), tone(1), silence(1.2)));
    assert.deepEqual(more, []);
    assert.equal(one!.speechMs, 1300);
    assert.equal(one!.quietMs, COMPLETE_TURN_MS);
    // A long utterance whose words so far end in digits being read out is not over after the short pause.
    assert.deepEqual(feed(detector, tone(1)), []);
    detector.partial = 'my number is four one five';
    assert.deepEqual(feed(detector, silence(0.6)), []);
    assert.equal(detector.hearing, true);
    const [digits] = feed(detector, silence(0.6));
    assert.equal(digits!.quietMs, UNSURE_TURN_MS);
    detector.close();
  });

  test('a click is not an utterance; a phone that goes silent ends one; the longest is cut at 30 s', () => {
    const detector = new UtteranceDetector();
    assert.deepEqual(feed(detector, concatenate(silence(0.5), tone(0.04), silence(1))), []);

    assert.deepEqual(feed(detector, tone(0.5)), []);
    assert.equal(detector.hearing, true);
    const ended = detector.quiet(800);
    assert.ok(ended && contains(ended.audio, tone(0.5)), 'what was being said counts as said');
    assert.equal(ended.quietMs, 800);
    assert.equal(detector.quiet(), undefined);

    const long = feed(detector, tone(31));
    assert.equal(long.length, 1);
    assert.equal(long[0]!.audio.length, 30 * 8000);
    detector.close();
  });

  test('while the agent speaks, 200 ms of voice begins an utterance (a barge-in) and a 100 ms cough does not', () => {
    const detector = new UtteranceDetector();
    let started = 0;
    detector.onStart = () => started++;
    detector.agentSpeaking = true;
    assert.deepEqual(feed(detector, concatenate(silence(0.2), tone(0.1), silence(0.5))), []);
    assert.equal(started, 0, 'the cough did not begin a turn');
    assert.equal(detector.hearing, false);
    feed(detector, tone(0.25));
    assert.equal(started, 1, 'the caller talking over the agent did');
    detector.agentSpeaking = false;
    const [utterance] = feed(detector, concatenate(tone(1), silence(1)));
    assert.ok(contains(utterance!.audio, tone(0.1)), 'with the words from their start');
    detector.close();
  });

  test('what was heard before the agent spoke is forgotten', () => {
    const detector = new UtteranceDetector();
    feed(detector, tone(0.5));
    detector.reset();
    assert.equal(detector.hearing, false);
    assert.deepEqual(feed(detector, silence(1)), []);
    detector.close();
  });
});

describe('when a turn has ended', () => {
  test('short after a complete sentence, long after a filler or digits, by shape without words', () => {
    assert.equal(
      endOfTurnSilenceMs({ speechMs: 1500, partial: 'what time do you close on friday' }),
      COMPLETE_TURN_MS,
    );
    assert.equal(endOfTurnSilenceMs({ speechMs: 1500, partial: 'I would like to, um' }), UNSURE_TURN_MS);
    assert.equal(endOfTurnSilenceMs({ speechMs: 1500, partial: 'my card ends in 4 2' }), UNSURE_TURN_MS);
    assert.equal(endOfTurnSilenceMs({ speechMs: 1500, partial: 'it is seven eight nine' }), UNSURE_TURN_MS);
    assert.equal(endOfTurnSilenceMs({ speechMs: 300 }), UNSURE_TURN_MS);
    assert.equal(endOfTurnSilenceMs({ speechMs: 1500 }), COMPLETE_TURN_MS);
  });
});
