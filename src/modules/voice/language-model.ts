// A trigram language model in ARPA format, built from sentences of words: what the offline recogniser is told
// to expect (a domain model per agent, see docs/voice.md "Hearing on the telephone"). Witten-Bell discounting
// with Katz-style backoff, the smoothing SRILM's `-wbdiscount` and CMU-Cambridge's toolkit use: the mass left
// for unseen words after a history grows with how many different words followed it, so a history seen with
// many continuations (an open slot) leaves more room than a fixed phrase does.
//
// Sentences may carry a weight (a count that need not be whole): the domain corpus and the small
// general-English corpus are mixed by weighting their counts. The build yields to the event loop every few
// thousand sentences, so a large knowledge base never stalls the server while its model is made.

/** A sentence and how much it counts (1 when not said). */
export interface WeightedSentence {
  words: string[];
  weight?: number;
}

const START = '<s>';
const END = '</s>';
/** Sentences counted between two yields to the event loop. */
const SLICE = 2_000;

/** Counts of n-grams (keys: words joined by a space) and of each history's continuations. */
interface Counts {
  grams: [Map<string, number>, Map<string, number>, Map<string, number>];
}

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The ARPA text of a trigram model of `sentences` (words already normalised: lower case, as the
 * pronunciation dictionary spells them). Every word of the vocabulary is a unigram; `<s>` and `</s>` mark the
 * sentences' ends.
 */
export async function buildArpa(sentences: Iterable<WeightedSentence>): Promise<string> {
  const counts: Counts = { grams: [new Map(), new Map(), new Map()] };
  let since = 0;
  for (const sentence of sentences) {
    count(counts, sentence);
    if (++since >= SLICE) {
      since = 0;
      await yieldToLoop();
    }
  }
  return arpaOf(counts);
}

function add(map: Map<string, number>, key: string, weight: number) {
  map.set(key, (map.get(key) ?? 0) + weight);
}

function count(counts: Counts, sentence: WeightedSentence) {
  const weight = sentence.weight ?? 1;
  if (sentence.words.length === 0 || !(weight > 0)) return;
  const words = [START, ...sentence.words, END];
  for (let i = 0; i < words.length; i++) {
    add(counts.grams[0], words[i]!, weight);
    if (i >= 1) add(counts.grams[1], `${words[i - 1]} ${words[i]}`, weight);
    if (i >= 2) add(counts.grams[2], `${words[i - 2]} ${words[i - 1]} ${words[i]}`, weight);
  }
}

/** Per history: its total count and how many different words followed it. */
function histories(grams: Map<string, number>): Map<string, { total: number; types: number }> {
  const result = new Map<string, { total: number; types: number }>();
  for (const [gram, n] of grams) {
    const history = gram.slice(0, gram.lastIndexOf(' '));
    const entry = result.get(history) ?? { total: 0, types: 0 };
    entry.total += n;
    entry.types += 1;
    result.set(history, entry);
  }
  return result;
}

/** The model's probabilities (natural numbers, not logs) and backoff weights. */
export interface TrigramModel {
  unigrams: Map<string, { p: number; backoff: number }>;
  bigrams: Map<string, { p: number; backoff: number }>;
  trigrams: Map<string, { p: number }>;
}

/**
 * Witten-Bell estimates. Unigrams: each word's count plus an even share of one count per word type (so none
 * is zero); `<s>` is only ever a history, never predicted. An n-gram seen after history h:
 * c(h w) / (c(h) + T(h)), T(h) the number of different words seen after h; the mass left, T(h) / (c(h) + T(h)),
 * goes to the words unseen after h in proportion to their lower-order probability (the backoff weight).
 */
export function estimate(counts: Counts): TrigramModel {
  const [ones, twos, threes] = counts.grams;
  const words = [...ones.keys()].filter((word) => word !== START);
  const total = words.reduce((sum, word) => sum + ones.get(word)!, 0);
  const unigrams = new Map<string, { p: number; backoff: number }>();
  for (const word of words) {
    unigrams.set(word, { p: (ones.get(word)! + 1) / (total + words.length), backoff: 1 });
  }
  unigrams.set(START, { p: 0, backoff: 1 });

  const bigrams = new Map<string, { p: number; backoff: number }>();
  const twoHistories = histories(twos);
  for (const [gram, n] of twos) {
    const h = twoHistories.get(gram.slice(0, gram.indexOf(' ')))!;
    bigrams.set(gram, { p: n / (h.total + h.types), backoff: 1 });
  }
  // Backoff of each one-word history: the mass left over, spread over the unigrams of the unseen words.
  const seenAfter = new Map<string, { p: number; lower: number }>();
  for (const [gram, { p }] of bigrams) {
    const [history, word] = gram.split(' ') as [string, string];
    const entry = seenAfter.get(history) ?? { p: 0, lower: 0 };
    entry.p += p;
    entry.lower += unigrams.get(word)!.p;
    seenAfter.set(history, entry);
  }
  for (const [history, seen] of seenAfter) {
    unigrams.get(history)!.backoff = backoffWeight(seen.p, seen.lower);
  }

  const trigrams = new Map<string, { p: number }>();
  const threeHistories = histories(threes);
  const seenAfterPair = new Map<string, { p: number; lower: number }>();
  for (const [gram, n] of threes) {
    const cut = gram.lastIndexOf(' ');
    const history = gram.slice(0, cut);
    const h = threeHistories.get(history)!;
    const p = n / (h.total + h.types);
    trigrams.set(gram, { p });
    // Seen after (u v) means (v w) was seen: its lower-order probability is that bigram's.
    const lower = bigrams.get(gram.slice(gram.indexOf(' ') + 1))!.p;
    const entry = seenAfterPair.get(history) ?? { p: 0, lower: 0 };
    entry.p += p;
    entry.lower += lower;
    seenAfterPair.set(history, entry);
  }
  for (const [history, seen] of seenAfterPair) {
    bigrams.get(history)!.backoff = backoffWeight(seen.p, seen.lower);
  }
  return { unigrams, bigrams, trigrams };
}

/** (1 - mass of the seen words) / (1 - their lower-order mass); 1 when nothing is left to give. */
function backoffWeight(seen: number, lower: number): number {
  const left = 1 - seen;
  const room = 1 - lower;
  if (left <= 1e-12 || room <= 1e-12) return 1e-12;
  return left / room;
}

function log10(p: number): string {
  return p <= 0 ? '-99' : Math.log10(p).toFixed(6);
}

/** The ARPA text (the "\data\" header, then each order's section, then "\end\"). */
function arpaOf(counts: Counts): string {
  const model = estimate(counts);
  const lines: string[] = [
    '\\data\\',
    `ngram 1=${model.unigrams.size}`,
    `ngram 2=${model.bigrams.size}`,
    `ngram 3=${model.trigrams.size}`,
    '',
    '\\1-grams:',
  ];
  for (const [word, { p, backoff }] of model.unigrams) {
    lines.push(`${log10(p)}\t${word}\t${log10(backoff)}`);
  }
  lines.push('', '\\2-grams:');
  for (const [gram, { p, backoff }] of model.bigrams) {
    lines.push(`${log10(p)}\t${gram}\t${log10(backoff)}`);
  }
  lines.push('', '\\3-grams:');
  for (const [gram, { p }] of model.trigrams) lines.push(`${log10(p)}\t${gram}`);
  lines.push('', '\\end\\', '');
  return lines.join('\n');
}

/** Counts of `sentences`, for tests and tools that look at the model itself. */
export function countsOf(sentences: Iterable<WeightedSentence>): Counts {
  const counts: Counts = { grams: [new Map(), new Map(), new Map()] };
  for (const sentence of sentences) count(counts, sentence);
  return counts;
}
