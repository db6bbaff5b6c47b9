// Words as the recogniser hears them: text turned into sentences of spoken words (numbers spelled out, as a
// caller says them), and each word's pronunciations from the CMU dictionary that pocketsphinx-en-us ships.
// A word the dictionary lacks is given one when it is plainly an acronym (HSA: the names of its letters) or
// two dictionary words run together (CareCredit: care + credit); any other is left out of the model, so the
// recogniser never hears it (a made-up spelling-to-sound guess mostly teaches it a wrong sound; the words
// around it still count). docs/voice.md says so.
import { readFile } from 'node:fs/promises';

/** Lines parsed between two yields to the event loop (the dictionary has 135,000; a slice takes a few ms). */
const SLICE = 2_000;
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export type Pronouncing = Map<string, string[]>;

/** The dictionary at `path` ("word PH ON ES" per line, "word(2) …" for a second way to say it). */
export async function loadDictionary(path: string): Promise<Pronouncing> {
  const lines = (await readFile(path, 'utf8')).split('\n');
  const dictionary: Pronouncing = new Map();
  for (let start = 0; start < lines.length; start += SLICE) {
    for (const line of lines.slice(start, start + SLICE)) {
      const space = line.indexOf(' ');
      if (space <= 0) continue;
      const word = line.slice(0, space).replace(/\(\d+\)$/, '');
      const phones = line.slice(space + 1).trim();
      const known = dictionary.get(word);
      if (known) known.push(phones);
      else dictionary.set(word, [phones]);
    }
    await yieldToLoop();
  }
  return dictionary;
}

/**
 * How `word` is said: the dictionary's ways, else the letters of an acronym of up to five (said one by one),
 * else two dictionary words run together; undefined when none of these.
 */
export function pronounce(dictionary: Pronouncing, word: string, acronym = false): string[] | undefined {
  const known = dictionary.get(word);
  if (known) return known;
  if (acronym && /^[a-z]{2,5}$/.test(word)) {
    // A letter's last way is its name ("a" is said AH as a word first, EY as a letter).
    const letters = [...word].map((letter) => dictionary.get(letter)?.at(-1));
    if (letters.every(Boolean)) return [letters.join(' ')];
  }
  for (let cut = word.length - 3; cut >= 3; cut--) {
    const first = dictionary.get(word.slice(0, cut))?.[0];
    const second = dictionary.get(word.slice(cut))?.[0];
    if (first && second) return [`${first} ${second}`];
  }
  return undefined;
}

/** A word as the text had it: the spoken form and whether it was written in capitals (an acronym). */
export interface SpokenWord {
  word: string;
  acronym: boolean;
}

const ONES = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const ORDINALS: Record<string, string> = {
  one: 'first',
  two: 'second',
  three: 'third',
  five: 'fifth',
  eight: 'eighth',
  nine: 'ninth',
  twelve: 'twelfth',
};

/** A whole number below a million as words ("1200" → one thousand two hundred); undefined past that. */
export function numberWords(value: number): string[] | undefined {
  if (!Number.isInteger(value) || value < 0 || value >= 1_000_000) return undefined;
  if (value < 20) return [ONES[value]!];
  if (value < 100) {
    const rest = value % 10;
    return rest === 0 ? [TENS[value / 10]!] : [TENS[Math.floor(value / 10)]!, ONES[rest]!];
  }
  if (value < 1000) {
    const rest = value % 100;
    return [ONES[Math.floor(value / 100)]!, 'hundred', ...(rest ? numberWords(rest)! : [])];
  }
  const rest = value % 1000;
  return [...numberWords(Math.floor(value / 1000))!, 'thousand', ...(rest ? numberWords(rest)! : [])];
}

/** "4" → fourth, "21" → twenty first. */
function ordinalWords(value: number): string[] | undefined {
  const words = numberWords(value);
  if (!words) return undefined;
  const last = words.at(-1)!;
  const ordinal = ORDINALS[last] ?? (last.endsWith('y') ? `${last.slice(0, -1)}ieth` : `${last}th`);
  return [...words.slice(0, -1), ordinal];
}

/** One written token as spoken words: numbers, prices, times and ordinals spelled; hyphens split. */
function spoken(token: string): SpokenWord[] {
  const acronym = /^[A-Z]{2,5}s?$/.test(token);
  const lower = token.toLowerCase();
  const price = /^\$(\d{1,3}(?:,\d{3})*|\d+)(?:\.(\d\d))?$/.exec(lower);
  if (price) {
    const words = numberWords(Number(price[1]!.replaceAll(',', '')));
    return words ? [...words, 'dollars'].map(plain) : [];
  }
  const time = /^(\d{1,2})(?::(\d\d))?(am|pm)$/.exec(lower);
  if (time) {
    const minutes = Number(time[2] ?? 0);
    return [
      ...numberWords(Number(time[1]))!,
      ...(minutes ? (minutes < 10 ? ['oh', ONES[minutes]!] : numberWords(minutes)!) : []),
      time[3] === 'am' ? 'a.m.' : 'p.m.',
    ].map(plain);
  }
  const ordinal = /^(\d+)(st|nd|rd|th)$/.exec(lower);
  if (ordinal) return (ordinalWords(Number(ordinal[1])) ?? []).map(plain);
  if (/^\d{1,3}(,\d{3})+$|^\d+$/.test(lower)) {
    return (numberWords(Number(lower.replaceAll(',', ''))) ?? []).map(plain);
  }
  if (lower.includes('-'))
    return lower
      .split('-')
      .filter(Boolean)
      .flatMap((part) => spoken(part));
  if (!/^[a-z][a-z'.]*$/.test(lower)) return [];
  return [{ word: lower.replace(/'s$/, "'s"), acronym }];
}

const plain = (word: string): SpokenWord => ({ word, acronym: false });

/** `text` as sentences of spoken words (split at sentence ends, line breaks, semicolons and colons before a space). */
export function spokenSentences(text: string): SpokenWord[][] {
  return text
    .split(/(?<=[.!?;:])\s+|\n+/)
    .map((sentence) =>
      (sentence.match(/[\p{L}\p{N}$][\p{L}\p{N}$'.,:-]*/gu) ?? [])
        .map((token) => token.replace(/[.,:'-]+$/, ''))
        .flatMap((token) => spoken(token)),
    )
    .filter((words) => words.length > 0);
}
