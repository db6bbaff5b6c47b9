// A reproducible corpus of message texts for comparing segment counting with the public
// sms-segments-calculator package. Texts mix the GSM basic and extension tables, Latin-1 letters outside
// GSM, emoji of every construction (single, skin tone, ZWJ, flags, keycaps), CJK, combining marks (up to
// stacks longer than a segment), Hangul jamo, Devanagari conjuncts and line breaks; half the lengths sit
// near segment boundaries, where counting goes wrong.
import { GSM_BASIC_CHARACTERS, GSM_EXTENSION_CHARACTERS } from '../../src/modules/messaging/segments.ts';

/** mulberry32: a small, well-mixed 32-bit PRNG; the same seed gives the same corpus on every machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, index) => String.fromCodePoint(from + index));

const GSM_BASIC = [...GSM_BASIC_CHARACTERS];
const GSM_EXTENSION = [...GSM_EXTENSION_CHARACTERS];
const LATIN_1 = range(0xa0, 0xff);
const CJK = range(0x4e00, 0x4fff);
const COMBINING = range(0x300, 0x36f);
const SINGLE_EMOJI = ['😀', '🎉', '👍', '🚀', '❤', '☺', '🤖', '🧪', '🫠', '✅'];
const SKIN_TONES = range(0x1f3fb, 0x1f3ff);
const ZWJ_SEQUENCES = [
  '👨‍👩‍👧‍👦', // family: man, woman, girl, boy
  '👩‍💻', // woman technologist
  '❤️‍🔥', // heart on fire (Unicode 13.1)
  '🏳️‍🌈', // rainbow flag
  '🧑🏽‍🤝‍🧑🏻', // people holding hands with skin tones
  '🐕‍🦺', // service dog
  '🫱🏻‍🫲🏿', // handshake with two skin tones (Unicode 14)
];
const FLAGS = ['🇫🇷', '🇩🇪', '🇺🇸', '🇯🇵', '🇧🇷'];
const KEYCAPS = ['1️⃣', '#️⃣', '*️⃣'];
const HANGUL_JAMO = () => [range(0x1100, 0x1112), range(0x1161, 0x1175), range(0x11a8, 0x11c2)];
const DEVANAGARI = ['क्ष', 'त्र', 'ज्ञ', 'श्र', 'न्द्र', 'कि', 'स्त्री'];
const LINE_BREAKS = ['\r\n', '\n', '\r', '\f'];
const LONE_SURROGATES = ['\ud83d', '\ude00'];

const BOUNDARIES = [70, 134, 201, 268, 160, 306, 459, 612];
const MAXIMUM_LENGTH = 700;

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];

function emoji(random: Random): string {
  const kind = random();
  if (kind < 0.3) return pick(random, SINGLE_EMOJI);
  if (kind < 0.45) return pick(random, ['👍', '👋', '🙌', '🧑']) + pick(random, SKIN_TONES);
  if (kind < 0.7) return pick(random, ZWJ_SEQUENCES);
  if (kind < 0.9) return pick(random, FLAGS);
  return pick(random, KEYCAPS);
}

function markedLetter(random: Random): string {
  const base = pick(random, ['a', 'e', 'o', 'n', 'Z']);
  const long = random() < 0.08;
  const count = long ? 10 + Math.floor(random() * 80) : 1 + Math.floor(random() * 3);
  let text = base;
  for (let index = 0; index < count; index++) text += pick(random, COMBINING);
  return text;
}

function hangulSyllable(random: Random): string {
  const [leading, vowels, trailing] = HANGUL_JAMO();
  return pick(random, leading) + pick(random, vowels) + (random() < 0.5 ? pick(random, trailing) : '');
}

// Each profile draws one token (one or more code points) at a time.
const PROFILES: Record<string, (random: Random) => string> = {
  gsm: (random) => pick(random, GSM_BASIC),
  gsmExtension: (random) => (random() < 0.15 ? pick(random, GSM_EXTENSION) : pick(random, GSM_BASIC)),
  gsmWithOneOutsider: (random) => {
    if (random() < 0.004) return pick(random, [...LATIN_1, ...CJK.slice(0, 20), ...SINGLE_EMOJI]);
    return random() < 0.1 ? pick(random, GSM_EXTENSION) : pick(random, GSM_BASIC);
  },
  latin1: (random) => (random() < 0.5 ? pick(random, LATIN_1) : pick(random, GSM_BASIC)),
  emoji: (random) => (random() < 0.35 ? emoji(random) : pick(random, GSM_BASIC)),
  cjk: (random) => {
    const kind = random();
    if (kind < 0.75) return pick(random, CJK);
    if (kind < 0.85) return emoji(random);
    return pick(random, GSM_BASIC);
  },
  marks: (random) => (random() < 0.3 ? markedLetter(random) : pick(random, GSM_BASIC)),
  scripts: (random) => {
    const kind = random();
    if (kind < 0.35) return hangulSyllable(random);
    if (kind < 0.7) return pick(random, DEVANAGARI);
    if (kind < 0.72) return pick(random, LONE_SURROGATES);
    return pick(random, GSM_BASIC);
  },
  lines: (random) => (random() < 0.12 ? pick(random, LINE_BREAKS) : pick(random, GSM_BASIC)),
};
const PROFILE_NAMES = Object.keys(PROFILES);

export function generateText(random: Random): string {
  const draw = PROFILES[pick(random, PROFILE_NAMES)];
  const target =
    random() < 0.5
      ? Math.floor(random() * (MAXIMUM_LENGTH + 1))
      : pick(random, BOUNDARIES) + Math.floor(random() * 9) - 4;
  let text = '';
  while (text.length < target) {
    const token = draw(random);
    if (text.length + token.length > MAXIMUM_LENGTH) break;
    text += token;
  }
  return text;
}

export function generateCorpus(seed: number, size: number): string[] {
  const random = seededRandom(seed);
  return Array.from({ length: size }, () => generateText(random));
}
