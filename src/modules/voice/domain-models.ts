// Language models for a domain (an AI agent's knowledge): what the offline recogniser is told to expect in
// place of its general 27 MB English model. Built from the domain's text (speech-domain words, spelled as said,
// each with its pronunciations from the CMU dictionary), kept on disk by the domain's key, so a model is built
// once per version of an agent's knowledge and survives restarts; a build already under way is shared.
// Building slices its work between turns of the event loop (language-model.ts, pronunciations.ts).
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildArpa, type WeightedSentence } from './language-model.ts';
import { loadDictionary, type Pronouncing, pronounce, spokenSentences } from './pronunciations.ts';

/** Text of a domain with its weight: how much it counts in the model. */
export interface WeightedText {
  text: string;
  weight: number;
}

/** What a recogniser can be told about who is speaking about what. */
export interface SpeechDomain {
  /** Changes whenever `text` would (a hash of its inputs). */
  key: string;
  /** BCP 47 tag: only English is modelled (the installed acoustic model is US English). */
  language: string;
  text(): Promise<WeightedText[]>;
}

/** The files of a built model. */
export interface DomainModel {
  lm: string;
  dict: string;
  words: number;
}

/** Texts spelled out between two yields to the event loop (a few ms of work). */
const TEXTS_PER_SLICE = 500;
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class DomainModels {
  private dictionary?: Promise<Pronouncing>;
  private readonly building = new Map<string, Promise<DomainModel>>();

  constructor(
    private readonly dir: string,
    private readonly dictionaryPath: string,
  ) {}

  /** The model of `domain`, from disk when built before. */
  modelFor(domain: SpeechDomain): Promise<DomainModel> {
    if (!/^[a-z0-9]{8,64}$/.test(domain.key))
      throw new Error('A speech domain key is 8 to 64 letters or digits');
    let model = this.building.get(domain.key);
    if (!model) {
      model = this.load(domain).finally(() => this.building.delete(domain.key));
      this.building.set(domain.key, model);
    }
    return model;
  }

  private async load(domain: SpeechDomain): Promise<DomainModel> {
    const folder = join(this.dir, domain.key);
    const files = { lm: join(folder, 'model.arpa'), dict: join(folder, 'words.dict') };
    try {
      const words = (await readFile(join(folder, 'words.count'), 'utf8')).trim();
      return { ...files, words: Number(words) };
    } catch {
      // Not built yet.
    }
    this.dictionary ??= loadDictionary(this.dictionaryPath);
    const built = await buildModel(await domain.text(), await this.dictionary);
    // Written beside, then renamed: a reader never sees half a model.
    const partial = `${folder}.${process.pid}.${Date.now()}.partial`;
    await mkdir(partial, { recursive: true, mode: 0o700 });
    try {
      await writeFile(join(partial, 'model.arpa'), built.arpa);
      await writeFile(join(partial, 'words.dict'), built.dict);
      await writeFile(join(partial, 'words.count'), String(built.words));
      await rename(partial, folder).catch(async (error: NodeJS.ErrnoException) => {
        // Another process built it meanwhile: theirs is as good.
        if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
      });
    } finally {
      await rm(partial, { recursive: true, force: true });
    }
    return { ...files, words: built.words };
  }
}

/**
 * The ARPA model and pronunciation dictionary of `texts`. A sentence is cut where a word has no pronunciation
 * (so no n-gram joins the words on either side of it as if they were adjacent).
 */
export async function buildModel(
  texts: WeightedText[],
  dictionary: Pronouncing,
): Promise<{ arpa: string; dict: string; words: number }> {
  const said = new Map<string, string[]>();
  const sentences: WeightedSentence[] = [];
  for (const [index, { text, weight }] of texts.entries()) {
    if (index % TEXTS_PER_SLICE === TEXTS_PER_SLICE - 1) await yieldToLoop();
    for (const words of spokenSentences(text)) {
      let run: string[] = [];
      for (const { word, acronym } of words) {
        const ways = said.get(word) ?? pronounce(dictionary, word, acronym);
        if (!ways) {
          if (run.length > 0) sentences.push({ words: run, weight });
          run = [];
          continue;
        }
        said.set(word, ways);
        run.push(word);
      }
      if (run.length > 0) sentences.push({ words: run, weight });
    }
  }
  const arpa = await buildArpa(sentences);
  const dict = [...said.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .flatMap(([word, ways]) => ways.map((phones, i) => `${word}${i === 0 ? '' : `(${i + 1})`} ${phones}`))
    .join('\n');
  return { arpa, dict: `${dict}\n`, words: said.size };
}
