// The pieces of an agent's language model (src/modules/voice/language-model.ts, pronunciations.ts,
// domain-models.ts): Witten-Bell trigram estimates that are true distributions (every history's
// probabilities, with backoff, sum to one), the ARPA text read back, weights as counts, text spelled out as
// spoken, pronunciations with their fallbacks, and sentences cut where a word cannot be said.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { agentSpeechText, slotFillers } from '../src/modules/agents/agent-speech.ts';
import { buildModel } from '../src/modules/voice/domain-models.ts';
import { buildArpa, countsOf, estimate, type TrigramModel } from '../src/modules/voice/language-model.ts';
import { numberWords, pronounce, spokenSentences } from '../src/modules/voice/pronunciations.ts';

const corpus = [
  'we are open on monday',
  'we are open on friday',
  'we are closed on sunday',
  'the garage is on fourth street',
  'we are open',
].map((text) => ({ words: text.split(' ') }));

/** P(word | history) by the model's backoff rule, for any word and a history of up to two words. */
function probability(model: TrigramModel, history: string[], word: string): number {
  if (history.length === 2) {
    const seen = model.trigrams.get(`${history.join(' ')} ${word}`);
    if (seen) return seen.p;
    const backoff = model.bigrams.get(history.join(' '))?.backoff ?? 1;
    return backoff * probability(model, history.slice(1), word);
  }
  if (history.length === 1) {
    const seen = model.bigrams.get(`${history[0]} ${word}`);
    if (seen) return seen.p;
    return (model.unigrams.get(history[0]!)?.backoff ?? 1) * model.unigrams.get(word)!.p;
  }
  return model.unigrams.get(word)!.p;
}

describe('trigram model (Witten-Bell with backoff)', () => {
  const model = estimate(countsOf(corpus));
  const vocabulary = [...model.unigrams.keys()].filter((word) => word !== '<s>');

  test('every history seen, of every order, predicts a distribution that sums to one', () => {
    const histories: string[][] = [[]];
    for (const gram of model.bigrams.keys()) histories.push(gram.split(' ').slice(0, 1));
    for (const gram of model.trigrams.keys()) histories.push(gram.split(' ').slice(0, 2));
    for (const history of histories) {
      const sum = vocabulary.reduce((total, word) => total + probability(model, history, word), 0);
      assert.ok(Math.abs(sum - 1) < 1e-9, `P(· | ${history.join(' ') || 'nothing'}) sums to ${sum}`);
    }
  });

  test('Witten-Bell: a history with more different continuations leaves more for unseen words', () => {
    // "on" is followed by monday, friday, sunday and fourth (4 kinds in 4); "are" by open, open, closed, open.
    const on = model.bigrams.get('on monday')!.p;
    assert.equal(on, 1 / (4 + 4));
    assert.equal(model.bigrams.get('are open')!.p, 3 / (4 + 2));
    const unseenAfter = (word: string) => model.unigrams.get(word)!.backoff;
    assert.ok(unseenAfter('on') > unseenAfter('are'));
    assert.equal(model.trigrams.get('we are open')!.p, 3 / (4 + 2));
  });

  test('a weight counts as that many copies of the sentence', () => {
    const twice = estimate(countsOf([...corpus, corpus[0]!]));
    const weighted = estimate(countsOf([{ ...corpus[0]!, weight: 2 }, ...corpus.slice(1)]));
    for (const [gram, { p }] of twice.trigrams)
      assert.ok(Math.abs(weighted.trigrams.get(gram)!.p - p) < 1e-12);
    for (const [gram, { p }] of twice.bigrams) assert.ok(Math.abs(weighted.bigrams.get(gram)!.p - p) < 1e-12);
  });

  test('the ARPA text: counts in the header match the sections, log10 probabilities read back', async () => {
    const arpa = await buildArpa(corpus);
    const lines = arpa.split('\n');
    assert.equal(lines[0], '\\data\\');
    assert.equal(lines.at(-2), '\\end\\');
    for (const order of [1, 2, 3]) {
      const declared = Number(new RegExp(`^ngram ${order}=(\\d+)$`, 'm').exec(arpa)![1]);
      const start = lines.indexOf(`\\${order}-grams:`);
      let end = start + 1;
      while (lines[end] !== '') end++;
      assert.equal(end - start - 1, declared, `${order}-grams`);
    }
    const line = lines.find((entry) => entry.split('\t')[1] === 'we are open')!;
    assert.ok(Math.abs(10 ** Number(line.split('\t')[0]) - 3 / 6) < 1e-5);
    const start = lines.find((entry) => entry.split('\t')[1] === '<s>')!;
    assert.equal(start.split('\t')[0], '-99', 'a sentence start is never predicted');
  });
});

describe('text as spoken, and how its words are said', () => {
  test('numbers, prices, times and ordinals are spelled as said; hyphens split', () => {
    assert.deepEqual(numberWords(1200), ['one', 'thousand', 'two', 'hundred']);
    assert.deepEqual(numberWords(45), ['forty', 'five']);
    const words = (text: string) => spokenSentences(text).map((s) => s.map((w) => w.word).join(' '));
    assert.deepEqual(words('A crown is $1,200. Open 8am to 2:30pm!'), [
      'a crown is one thousand two hundred dollars',
      'open eight a.m. to two thirty p.m.',
    ]);
    assert.deepEqual(words('The garage on 4th Street; x-rays are $60'), [
      'the garage on fourth street',
      'x rays are sixty dollars',
    ]);
    assert.deepEqual(
      spokenSentences('We take HSA cards')[0]!.map((w) => w.acronym),
      [false, false, true, false],
    );
  });

  const dictionary = new Map([
    ['care', ['K EH R']],
    ['credit', ['K R EH D AH T']],
    ['h', ['EY CH']],
    ['s', ['EH S']],
    ['a', ['AH', 'EY']],
    ['read', ['R IY D', 'R EH D']],
  ]);

  test("the dictionary's ways first; an acronym's letters; two words run together; else none", () => {
    assert.deepEqual(pronounce(dictionary, 'read'), ['R IY D', 'R EH D']);
    assert.deepEqual(pronounce(dictionary, 'hsa', true), ['EY CH EH S EY']);
    assert.equal(
      pronounce(dictionary, 'hsa', false),
      undefined,
      'only a word written in capitals is spelled',
    );
    assert.deepEqual(pronounce(dictionary, 'carecredit'), ['K EH R K R EH D AH T']);
    assert.equal(pronounce(dictionary, 'zirconia'), undefined);
  });

  test('a model: sentences cut where a word cannot be said, the dictionary holds only its words', async () => {
    const built = await buildModel(
      [{ text: 'Read the zirconia care guide. CareCredit helps.', weight: 1 }],
      dictionary,
    );
    assert.deepEqual(
      built.dict.trim().split('\n'),
      ['carecredit K EH R K R EH D AH T', 'care K EH R', 'read R IY D', 'read(2) R EH D'].sort(),
    );
    assert.equal(built.words, 3);
    // "the", "zirconia", "guide" and "helps" have no pronunciation here: each word stands alone.
    assert.match(built.arpa, /ngram 2=6\n/, '<s> read </s>, <s> care </s>, <s> carecredit </s>');
    assert.doesNotMatch(built.arpa, /read care|care carecredit/);
  });
});

describe("an agent's text", () => {
  test('its documents, questions from frames filled with its words, everyday speech; weights by share', () => {
    const text = agentSpeechText([
      { title: 'Parking', content: 'The garage on 4th Street validates tickets. Parking is free.' },
    ]);
    const said = text.map((entry) => entry.text);
    assert.ok(said.includes('Parking'));
    assert.ok(said.includes('The garage on 4th Street validates tickets.'));
    assert.ok(said.includes('how much does garage cost'));
    assert.ok(said.includes('is there a fourth street near you'));
    assert.ok(said.includes('can i speak to someone'));
    const share = (from: (entry: { text: string }) => boolean) =>
      text.filter(from).reduce((sum, entry) => sum + entry.weight, 0);
    const total = share(() => true);
    const documents = share((entry) => /^[A-Z]/.test(entry.text));
    assert.ok(Math.abs(documents / total - 0.4) < 1e-9, `documents weigh ${documents / total}`);
    assert.deepEqual(slotFillers(['The garage, the garage street.']).slice(0, 2), [
      'garage',
      'garage street',
    ]);
  });
});
